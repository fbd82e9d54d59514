//! ADK-Rust's events read back from agentstate's without a JSON tree of the whole event: the
//! fields both models have are moved from one struct to the other, and only what the adapter
//! kept of ADK-Rust's own (its model request, usage, metadata…) is read from its map into the
//! types ADK-Rust gives them. For events whose kept fields are all ones this version of
//! ADK-Rust has; any other goes through the general conversion, which keeps what it does not
//! know.

use std::collections::HashMap;

use adk_core::{
    CitationMetadata, Content as RustContent, Event as RustEvent, EventActions as RustActions, EventCompaction,
    FinishReason, LlmResponse, ToolConfirmationDecision, ToolConfirmationRequest, UsageMetadata,
};
use agentstate::{Event, Map, Timestamp, Value};
use serde::Deserialize;

use super::{COPIES_OF_REQUEST, content_to_rust, object, put_request_copies};

/// The fields of ADK-Rust's event the adapter keeps (under `event`), each a field of
/// [`KeptEvent`].
const EVENT_FIELDS: [&str; 7] = [
    "usage_metadata",
    "finish_reason",
    "citation_metadata",
    "provider_metadata",
    "interaction_id",
    "llm_request",
    "event_metadata",
];
/// The fields of ADK-Rust's actions the adapter keeps (under `actions`), each a field of
/// [`KeptActions`].
const ACTION_FIELDS: [&str; 4] = ["tool_confirmation", "tool_confirmation_decision", "compaction", "route"];

/// Refuses a field it has no place for, so that a name in [`EVENT_FIELDS`] it lacks is an error
/// rather than a field dropped.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptEvent {
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
    #[serde(default)]
    citation_metadata: Option<CitationMetadata>,
    #[serde(default)]
    provider_metadata: Option<Value>,
    #[serde(default)]
    interaction_id: Option<String>,
    #[serde(default)]
    llm_request: Option<String>,
    #[serde(default)]
    event_metadata: HashMap<String, String>,
}

/// As [`KeptEvent`], for [`ACTION_FIELDS`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptActions {
    #[serde(default)]
    tool_confirmation: Option<ToolConfirmationRequest>,
    #[serde(default)]
    tool_confirmation_decision: Option<ToolConfirmationDecision>,
    #[serde(default)]
    compaction: Option<EventCompaction>,
    #[serde(default)]
    route: Option<Vec<String>>,
}

/// Whether `kept` (what the adapter kept of an ADK-Rust event) has only fields read here.
pub(super) fn reads(kept: &Map<String, Value>) -> bool {
    let within = |fields: Option<&Value>, known: &[&str]| match fields {
        None => true,
        Some(Value::Object(fields)) => fields.keys().all(|k| known.contains(&k.as_str())),
        Some(_) => false,
    };
    kept.keys().all(|k| matches!(k.as_str(), "event" | "actions" | COPIES_OF_REQUEST))
        && within(kept.get("event"), &EVENT_FIELDS)
        && within(kept.get("actions"), &ACTION_FIELDS)
}

/// ADK-Rust's event from `event` (its kept fields already taken out of its metadata as `kept`,
/// which [`reads`] accepts) at `time`.
pub(super) fn rust_event(event: Event, time: Timestamp, mut kept: Map<String, Value>) -> serde_json::Result<RustEvent> {
    let mut fields = object(kept.remove("event"));
    put_request_copies(&mut fields, kept.remove(COPIES_OF_REQUEST));
    let own: KeptEvent = serde_json::from_value(Value::Object(fields))?;
    let own_actions: KeptActions = serde_json::from_value(Value::Object(object(kept.remove("actions"))))?;
    let content = match event.content.as_ref().map(serde_json::to_value).transpose()? {
        Some(Value::Object(content)) => Some(serde_json::from_value::<RustContent>(content_to_rust(content))?),
        _ => None,
    };
    let actions = event.actions;
    let yes = |flag: Option<bool>| flag == Some(true);
    Ok(RustEvent {
        id: event.id,
        timestamp: time.date_time(),
        invocation_id: event.invocation_id,
        branch: event.branch.unwrap_or_default(),
        author: event.author,
        llm_response: LlmResponse {
            content,
            usage_metadata: own.usage_metadata,
            finish_reason: own.finish_reason,
            citation_metadata: own.citation_metadata,
            partial: yes(event.partial),
            turn_complete: yes(event.turn_complete),
            interrupted: event.extra.get("interrupted") == Some(&Value::Bool(true)),
            error_code: event.error_code,
            error_message: event.error_message,
            provider_metadata: own.provider_metadata,
            interaction_id: own.interaction_id,
        },
        actions: RustActions {
            state_delta: actions.state_delta.into_iter().collect(),
            // ADK-Rust counts artifact versions in integers (the general conversion says so).
            artifact_delta: actions.artifact_delta.into_iter().filter_map(|(k, v)| Some((k, v.as_i64()?))).collect(),
            skip_summarization: yes(actions.skip_summarization),
            transfer_to_agent: actions.transfer_to_agent,
            escalate: yes(actions.escalate),
            tool_confirmation: own_actions.tool_confirmation,
            tool_confirmation_decision: own_actions.tool_confirmation_decision,
            compaction: own_actions.compaction,
            route: own_actions.route,
        },
        long_running_tool_ids: event.long_running_tool_ids.unwrap_or_default(),
        llm_request: own.llm_request,
        provider_metadata: own.event_metadata,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every field named as read here is a field of the struct it is read into.
    #[test]
    fn the_fields_read_are_the_structs_fields() {
        let unknown = |e: serde_json::Error| e.to_string().contains("unknown field");
        for field in EVENT_FIELDS {
            let one = Value::Object(Map::from_iter([(field.to_owned(), Value::Null)]));
            assert!(!serde_json::from_value::<KeptEvent>(one).is_err_and(unknown), "{field}");
        }
        for field in ACTION_FIELDS {
            let one = Value::Object(Map::from_iter([(field.to_owned(), Value::Null)]));
            assert!(!serde_json::from_value::<KeptActions>(one).is_err_and(unknown), "{field}");
        }
        let stranger = Value::Object(Map::from_iter([("not_a_field".to_owned(), Value::Null)]));
        assert!(serde_json::from_value::<KeptEvent>(stranger).is_err_and(unknown));
    }
}
