//! The JSON of the API's resources, read into agentstate's types and written from them.

use std::sync::Arc;

use agentstate::{Error, Event, Map, Session, SessionAttributes, SessionKey, Value, wire};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::json;

fn unreadable(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::Backend {
        message: format!("the service answered {what} that cannot be read: {detail}"),
        retryable: false,
        source: None,
    }
}

/// Epoch microseconds as RFC 3339, UTC, to the microsecond.
pub(crate) fn rfc3339(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// An RFC 3339 time as epoch microseconds (finer fractions cut).
pub(crate) fn micros(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_micros())
}

fn time(resource: &Value, field: &str, what: &str) -> Result<i64, Error> {
    let text = resource.get(field).and_then(Value::as_str).ok_or_else(|| unreadable(what, format!("no {field}")))?;
    micros(text).ok_or_else(|| unreadable(what, format!("{field} {text:?} is not an RFC 3339 time")))
}

/// The last segment of a resource name.
fn id_of(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// A session resource, with `events` (agentstate's extension), as a handle of `app`. Its
/// last update time is the storage marker.
pub(crate) fn session(resource: &Value, app: &str, events: Vec<Event>) -> Result<Session, Error> {
    let what = "a session";
    let name = resource.get("name").and_then(Value::as_str).ok_or_else(|| unreadable(what, "no name"))?;
    let user = resource.get("userId").and_then(Value::as_str).ok_or_else(|| unreadable(what, "no userId"))?;
    let key = SessionKey::from_storage(app, user, id_of(name));
    let state = match resource.get("sessionState") {
        Some(Value::Object(state)) => state.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(other) => return Err(unreadable(what, format!("sessionState {other} is not an object"))),
    };
    let mut attributes = SessionAttributes {
        display_name: resource.get("displayName").and_then(Value::as_str).map(str::to_owned),
        ..SessionAttributes::default()
    };
    if let Some(Value::Object(labels)) = resource.get("labels") {
        for (k, v) in labels {
            attributes.labels.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
        }
    }
    if resource.get("expireTime").is_some() {
        attributes.expire_time_micros = Some(time(resource, "expireTime", what)?);
    }
    let update = time(resource, "updateTime", what)?;
    let create = if resource.get("createTime").is_some() { time(resource, "createTime", what)? } else { update };
    Ok(Session::from_storage(key, state, events, update).created_at(create).with_attributes(Some(Arc::new(attributes))))
}

/// The items of the list `field` of `body`, taken out of it.
pub(crate) fn take_array(body: &mut Value, field: &str) -> Result<Vec<Value>, Error> {
    match body.get_mut(field).map(Value::take) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(unreadable("a page", format!("{field} {other} is not a list"))),
    }
}

/// An event resource: the ADK event in `rawEvent` when there is one, else rebuilt from the
/// typed fields; the time is the resource's (to the microsecond).
pub(crate) fn event(mut resource: Value) -> Result<Event, Error> {
    let what = "an event";
    let raw = match resource.get_mut("rawEvent").map(Value::take) {
        Some(Value::Object(raw)) if !raw.is_empty() => Value::Object(raw),
        _ => typed_event(&resource),
    };
    let mut event = wire::event_from_wire(raw).map_err(|e| unreadable(what, e))?;
    if event.id.is_empty()
        && let Some(name) = resource.get("name").and_then(Value::as_str)
    {
        event.id = id_of(name).to_owned();
    }
    if resource.get("timestamp").is_some() {
        event.timestamp = agentstate::store::micros_to_secs(time(&resource, "timestamp", what)?);
    }
    Ok(event)
}

/// An event written by a client that sends no `rawEvent`, in ADK's (camelCase) field names.
fn typed_event(resource: &Value) -> Value {
    let mut event = Map::new();
    for field in ["author", "invocationId", "content", "errorCode", "errorMessage"] {
        if let Some(value) = resource.get(field).filter(|v| !v.is_null()) {
            event.insert(field.into(), value.clone());
        }
    }
    if let Some(Value::Object(metadata)) = resource.get("eventMetadata") {
        for (field, value) in metadata {
            event.insert(field.clone(), value.clone());
        }
    }
    if let Some(Value::Object(typed)) = resource.get("actions") {
        let mut actions = typed.clone();
        if let Some(target) = actions.remove("transferAgent") {
            actions.insert("transferToAgent".into(), target);
        }
        event.insert("actions".into(), Value::Object(actions));
    }
    Value::Object(event)
}

/// The body of `:appendEvent`: the typed fields the managed service reads, and the whole event
/// as `rawEvent`, at `timestamp_micros`. `delta` is what the service is to merge (the typed
/// `actions.stateDelta`): the event's own, but for an import, which records deltas without
/// applying them again.
pub(crate) fn append_body(event: &Event, delta: Map<String, Value>, timestamp_micros: i64) -> Value {
    let mut raw = wire::event_to_camel(event);
    if let Value::Object(fields) = &mut raw {
        fields.remove("timestamp");
    }
    let actions = &event.actions;
    let mut typed = Map::new();
    typed.insert("stateDelta".into(), Value::Object(delta));
    typed.insert("artifactDelta".into(), Value::Object(actions.artifact_delta.clone()));
    if let Some(target) = &actions.transfer_to_agent {
        typed.insert("transferAgent".into(), json!(target));
    }
    if let Some(escalate) = actions.escalate {
        typed.insert("escalate".into(), json!(escalate));
    }
    if let Some(skip) = actions.skip_summarization {
        typed.insert("skipSummarization".into(), json!(skip));
    }
    let mut body = json!({
        "author": event.author,
        "invocationId": event.invocation_id,
        "timestamp": rfc3339(timestamp_micros),
        "actions": typed,
    });
    if let Some(content) = raw.get("content") {
        body["content"] = content.clone();
    }
    if let Some(code) = &event.error_code {
        body["errorCode"] = json!(code);
    }
    if let Some(message) = &event.error_message {
        body["errorMessage"] = json!(message);
    }
    let mut metadata = Map::new();
    for field in ["partial", "turnComplete", "interrupted", "branch", "customMetadata", "longRunningToolIds"] {
        if let Some(value) = raw.get(field) {
            metadata.insert(field.into(), value.clone());
        }
    }
    if !metadata.is_empty() {
        body["eventMetadata"] = Value::Object(metadata);
    }
    body["rawEvent"] = raw;
    body
}

/// The body of a create: the user, the initial state and the attributes.
pub(crate) fn create_body(user: &str, state: Map<String, Value>, attributes: &SessionAttributes) -> Value {
    let mut body = json!({ "userId": user });
    body["sessionState"] = Value::Object(state);
    if let Some(name) = &attributes.display_name {
        body["displayName"] = json!(name);
    }
    if !attributes.labels.is_empty() {
        body["labels"] = json!(attributes.labels);
    }
    if let Some(expire) = attributes.expire_time_micros {
        body["expireTime"] = json!(rfc3339(expire));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_survives_the_round_trip_through_a_body() {
        let mut sent: Event = serde_json::from_value(json!({
            "id": "e1", "author": "agent", "invocation_id": "inv", "timestamp": 1_800_000_000.123_456,
            "content": {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"snake_key": 1}}}]},
            "actions": {"state_delta": {"k": 1, "user:u": 2}, "transfer_to_agent": "b", "escalate": true},
            "branch": "a.b", "turn_complete": true, "custom_metadata": {"x_y": 1}, "error_code": "E",
        }))
        .unwrap();
        sent.timestamp = agentstate::store::micros_to_secs(1_800_000_000_123_456);
        let body = append_body(&sent, sent.actions.state_delta.clone(), 1_800_000_000_123_456);
        assert_eq!(body["timestamp"], "2027-01-15T08:00:00.123456Z");
        assert_eq!(body["actions"]["transferAgent"], "b");
        assert_eq!(body["eventMetadata"]["branch"], "a.b");
        assert!(body["rawEvent"].get("timestamp").is_none());
        // As a server answers it: the body, named, with the raw event's time restored.
        let mut resource = body;
        resource["name"] = json!("reasoningEngines/1/sessions/s/events/e1");
        let back = event(resource.clone()).unwrap();
        assert_eq!(back.id, "e1");
        assert_eq!(back.timestamp, sent.timestamp);
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&sent).unwrap());
        // From the typed fields alone (another client that sends no rawEvent).
        resource.as_object_mut().unwrap().remove("rawEvent");
        let typed = event(resource).unwrap();
        assert_eq!((typed.id.as_str(), typed.author.as_str(), typed.branch.as_deref()), ("e1", "agent", Some("a.b")));
        assert_eq!(typed.actions.transfer_to_agent.as_deref(), Some("b"));
        assert_eq!(typed.actions.state_delta, sent.actions.state_delta);
        assert_eq!(typed.content, sent.content);
    }

    #[test]
    fn sessions_are_read_with_their_times_and_attributes() {
        let resource = json!({
            "name": "projects/p/locations/l/reasoningEngines/1/sessions/s9",
            "userId": "u", "sessionState": {"k": 1},
            "createTime": "2026-01-01T00:00:00.000001Z", "updateTime": "2026-01-01T00:00:01.5Z",
            "displayName": "chat", "labels": {"team": "a"}, "expireTime": "2026-02-01T00:00:00Z",
        });
        let s = session(&resource, "app", Vec::new()).unwrap();
        assert_eq!((s.app_name(), s.user_id(), s.id()), ("app", "u", "s9"));
        assert_eq!(s.last_update_micros() - s.create_time_micros(), 1_499_999);
        assert_eq!(s.attributes().display_name.as_deref(), Some("chat"));
        assert_eq!(s.attributes().labels["team"], "a");
        assert!(s.attributes().expire_time_micros.is_some());
        let broken = json!({"name": "x/sessions/s", "userId": "u", "updateTime": "soon"});
        assert!(session(&broken, "app", Vec::new()).unwrap_err().to_string().contains("updateTime"));
    }
}
