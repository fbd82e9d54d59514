//! Compaction against ADK for Python 2.13's own, on the same scripted conversation
//! (`tests/reference/compaction.py`): the model is sent the same requests (summaries included),
//! and the summaries cover the same events; ADK's events of a compacted session read the same here.

use std::process::Command;
use std::sync::{Arc, Mutex};

use agentstate::{Content, Event, GetSessionConfig, Part, SessionService};
use agentstate_conformance::reference::adk_python;
use agentstate_runtime::compaction::EventsCompactionConfig;
use agentstate_runtime::model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream};
use agentstate_runtime::{FunctionTool, LlmAgent, Runner};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use serde_json::{Value, json};

const SUMMARY_PROMPT: &str = "The following is a conversation history";

/// The reference script's model: a summary named by its prompt's length (in characters, as
/// Python counts them) for a summariser's prompt, "done" after a
/// tool's response, else a call of `remember` with what the user said. Keeps every request; with
/// `usage`, reports a prompt of 10 tokens per content.
#[derive(Default)]
struct Scripted {
    requests: Mutex<Vec<Vec<Content>>>,
    usage: bool,
}

fn text_of(content: &Content) -> String {
    content.parts().iter().filter_map(|p| p.text.as_deref()).collect()
}

#[async_trait]
impl Model for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate(&self, request: LlmRequest, _stream: bool) -> Result<ResponseStream, ModelError> {
        let answer = {
            self.requests.lock().unwrap().push(request.contents.clone());
            let first = request.contents.first().map(text_of).unwrap_or_default();
            let last = request.contents.last().cloned().unwrap_or_default();
            if first.starts_with(SUMMARY_PROMPT) {
                LlmResponse::text(format!("summary of {} characters", first.chars().count()))
            } else if last.parts().iter().any(|p| p.function_response.is_some()) {
                LlmResponse::text("done")
            } else {
                let call = agentstate::FunctionCall {
                    name: Some("remember".into()),
                    args: json!({"what": text_of(&last)}).as_object().cloned(),
                    ..Default::default()
                };
                let part = Part { function_call: Some(call), ..Part::default() };
                let mut response = LlmResponse::text("");
                response.content =
                    Some(Content { parts: Some(vec![part]), role: Some("model".into()), ..Content::default() });
                response
            }
        };
        let mut answer = answer;
        if self.usage {
            answer.usage = Some(json!({"prompt_token_count": 10 * request.contents.len()}));
        }
        Ok(Box::pin(futures_util::stream::iter([Ok(answer)])))
    }
}

/// What ADK for Python sent its model, and its session's events, for this config.
fn reference(config: &Value, turns: usize, usage: bool) -> (Vec<Value>, Vec<Value>) {
    reference_with(config, turns, if usage { &["--usage"] } else { &[] })
}

/// [`reference`] with more arguments for the script.
fn reference_with(config: &Value, turns: usize, more: &[&str]) -> (Vec<Value>, Vec<Value>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/compaction.py");
    let out = Command::new(adk_python())
        .arg(script)
        .arg(config.to_string())
        .arg(turns.to_string())
        .args(more)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = answer["requests"].as_array().unwrap().clone();
    (requests, answer["events"].as_array().unwrap().clone())
}

/// The runtime's requests and events for the same conversation.
async fn ours(
    config: EventsCompactionConfig,
    service: SessionService,
    turns: usize,
    usage: bool,
) -> (Vec<Value>, Vec<Event>) {
    let model = Arc::new(Scripted { usage, ..Scripted::default() });
    let remember = FunctionTool::new(
        "remember",
        "Remembers what the user said.",
        json!({"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]}),
        |args, _| Ok(json!({"remembered": args.get("what").cloned().unwrap_or_default()})),
    );
    let agent = LlmAgent::builder("helper", Arc::clone(&model) as Arc<dyn Model>)
        .instruction("Help.")
        .tool(remember)
        .build()
        .unwrap();
    let runner = Runner::new("compacting", agent, service.clone()).compaction(config);
    let session = service.create_session(agentstate::CreateSession::new("compacting", "u").id("s1")).await.unwrap();
    for n in 1..=turns {
        let _: Vec<Event> = runner
            .run("u", session.key().session_id(), Content::text("user", format!("hi {n}")))
            .try_collect()
            .await
            .unwrap();
    }
    let requests = model.requests.lock().unwrap().iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    let whole = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    (requests, whole.events().iter().map(Event::clone).collect())
}

/// `value` without call ids (random on both sides; ADK drops its own from requests).
fn without_ids(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            for key in ["function_call", "function_response"] {
                if let Some(Value::Object(inner)) = map.get_mut(key) {
                    inner.remove("id");
                }
            }
            for item in map.values_mut() {
                *item = without_ids(item.take());
            }
        }
        Value::Array(items) => {
            for item in items {
                *item = without_ids(item.take());
            }
        }
        _ => {}
    }
    value
}

/// An event as compared: author, time, what it says, the range it summarises (a compaction).
type Described = (String, f64, String, Option<(f64, f64)>);

/// Each summary of a session as the texts of the events it covers (`user: hi 1`, …).
fn summarised(events: &[Described]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|(_, _, _, range)| *range)
        .map(|(start, end)| {
            events
                .iter()
                .filter(|(_, time, _, range)| range.is_none() && start <= *time && *time <= end)
                .map(|(author, _, text, _)| format!("{author}: {text}"))
                .collect()
        })
        .collect()
}

fn reference_events(events: &[Value]) -> Vec<Described> {
    events
        .iter()
        .map(|e| {
            let compaction = &e["actions"]["compaction"];
            let range = compaction["start_timestamp"].as_f64().zip(compaction["end_timestamp"].as_f64());
            let content: Content = serde_json::from_value(e["content"].clone()).unwrap_or_default();
            (
                e["author"].as_str().unwrap_or_default().to_owned(),
                e["timestamp"].as_f64().unwrap(),
                describe(&content),
                range,
            )
        })
        .collect()
}

fn our_events(events: &[Event]) -> Vec<Described> {
    events
        .iter()
        .map(|e| {
            let range = agentstate::compaction::Range::of(e).map(|r| (r.start, r.end));
            (e.author.clone(), e.timestamp, describe(&e.content.clone().unwrap_or_default()), range)
        })
        .collect()
}

/// An event's content in a word: its text, or the tool it calls or answers.
fn describe(content: &Content) -> String {
    content
        .parts()
        .iter()
        .map(|p| match (&p.text, &p.function_call, &p.function_response) {
            (Some(text), _, _) => text.clone(),
            (_, Some(call), _) => format!("call {}", call.name.clone().unwrap_or_default()),
            (_, _, Some(response)) => format!("response {}", response.name.clone().unwrap_or_default()),
            _ => String::new(),
        })
        .collect()
}

async fn agrees_with_adk(reference_config: Value, config: EventsCompactionConfig, turns: usize, usage: bool) {
    let (want, want_events) = reference(&reference_config, turns, usage);
    for (_, service) in crate::support::services().await {
        let (got, got_events) = ours(config.clone(), service, turns, usage).await;
        assert_eq!(got.len(), want.len(), "{reference_config}: model calls");
        for (n, (have, wanted)) in got.into_iter().zip(&want).enumerate() {
            assert_eq!(without_ids(have), without_ids(wanted.clone()), "{reference_config}: request {n}");
        }
        let summaries = summarised(&our_events(&got_events));
        assert_eq!(summaries, summarised(&reference_events(&want_events)), "{reference_config}: summaries");
        assert!(!summaries.is_empty(), "{reference_config}: the history was compacted");
    }
}

#[tokio::test]
async fn the_sliding_window_summarises_as_adk_does() {
    for (interval, overlap) in [(2, 0), (2, 1), (3, 2)] {
        let reference_config = json!({"compaction_interval": interval, "overlap_size": overlap});
        agrees_with_adk(reference_config, EventsCompactionConfig::sliding_window(interval, overlap).unwrap(), 8, false)
            .await;
    }
}

/// The prompt's size as the model reported it, and as estimated without a report (characters /
/// 4, every agent's turn counted as ADK 2.13 retells it, fenced).
#[tokio::test]
async fn the_token_threshold_summarises_as_adk_does() {
    for (threshold, retention, usage) in [(60, 3, true), (50, 0, true), (600, 3, false), (400, 0, false)] {
        let reference_config = json!({"token_threshold": threshold, "event_retention_size": retention});
        let config = EventsCompactionConfig::token_threshold(threshold, retention).unwrap();
        agrees_with_adk(reference_config, config, 8, usage).await;
    }
}

/// Both triggers at once: the token threshold first, the window when it wrote nothing.
#[tokio::test]
async fn both_triggers_summarise_as_adk_does() {
    let reference_config =
        json!({"compaction_interval": 3, "overlap_size": 1, "token_threshold": 90, "event_retention_size": 2});
    let config = EventsCompactionConfig::sliding_window(3, 1).unwrap().and_token_threshold(90, 2).unwrap();
    agrees_with_adk(reference_config, config, 8, true).await;
}

/// ADK for Python goes on with a session the runtime compacted, on the same SQLite file (ADK's
/// `DatabaseSessionService`): it sends its model what it sends having held the whole conversation
/// itself, summaries included.
#[tokio::test]
async fn adk_for_python_goes_on_with_a_session_the_runtime_compacted() {
    let reference_config = json!({"compaction_interval": 2, "overlap_size": 1});
    let (want, _) = reference(&reference_config, 10, false);
    let dir = std::env::temp_dir().join("agentstate-tests").join(Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sessions.db");
    let store = agentstate_sql::SqlStore::connect(&format!("sqlite://{}", file.display())).await.unwrap();
    let config = EventsCompactionConfig::sliding_window(2, 1).unwrap();
    let (ours, events) = ours(config, SessionService::new(store), 7, false).await;
    assert!(events.iter().any(|e| agentstate::compaction::Range::of(e).is_some()), "compacted");
    let ours: Vec<Value> = ours.into_iter().map(without_ids).collect();
    assert_eq!(ours[..], want[..ours.len()], "the runtime's seven turns");
    let file = file.display().to_string();
    let (then, _) = reference_with(&reference_config, 10, &["--continue", &file, "s1", "8"]);
    assert!(!then.is_empty() && then.len() < want.len());
    assert_eq!(then[..], want[want.len() - then.len()..], "ADK's last three turns");
}
