//! The body of `GET …/sessions/{id}`: a session in the camelCase JSON of ADK's HTTP API, at 100,
//! 2,000 and 10,000 events, against the floor of writing the same events' stored JSON (the bytes
//! a database hands back) into one array: no renaming, no tree. `stored` is what the server does
//! for the SQL stores: each event written from its stored text in one pass
//! (`agentstate::wire::write_stored_event`); `body` writes decoded events (the other stores).
//! Also measured, as the baseline of the change that replaced it: the JSON tree conversion the
//! server used before (`tree`: every event to a `Value`, every key converted into a new tree,
//! then written).
//!
//! Run: `cargo bench -p agentstate-bench --bench wire`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use agentstate::Session;
use agentstate::store::{LoadedSession, StoredEvent, secs_to_micros};
use agentstate::wire::{StoredWireSession, WireSession, to_camel, to_snake};
use agentstate::{Event, Value};
use agentstate_bench::{criterion_rows, grown_session, print_ratios, run_criterion};
use criterion::{BenchmarkId, Criterion};
use serde_json::json;

const SIZES: [usize; 3] = [100, 2_000, 10_000];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("wire");
    for n in SIZES {
        let session = grown_session(n);
        // What a database returns: each event's stored JSON text.
        let stored: Vec<String> = session.events().iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        group.bench_with_input(BenchmarkId::new("body", n), &session, |b, s| {
            b.iter(|| black_box(serde_json::to_vec(&WireSession(s)).unwrap()));
        });
        let raw = LoadedSession::stored(
            Session::from_storage(
                session.key().clone(),
                session.state().all().clone(),
                Vec::<Event>::new(),
                session.last_update_micros(),
            ),
            session
                .events()
                .iter()
                .zip(&stored)
                .map(|(e, text)| StoredEvent {
                    id: e.id.clone(),
                    invocation_id: e.invocation_id.clone(),
                    timestamp_micros: secs_to_micros(e.timestamp).unwrap(),
                    data: Some(text.clone()),
                })
                .collect(),
        );
        group.bench_with_input(BenchmarkId::new("stored", n), &raw, |b, raw| {
            b.iter(|| black_box(StoredWireSession(raw).to_vec().unwrap()));
        });
        group.bench_with_input(BenchmarkId::new("tree", n), &session, |b, s| {
            b.iter(|| black_box(serde_json::to_vec(&tree::session(s)).unwrap()));
        });
        group.bench_with_input(BenchmarkId::new("floor", n), &stored, |b, rows| {
            b.iter(|| {
                let mut out = Vec::with_capacity(rows.iter().map(String::len).sum::<usize>() + rows.len() + 2);
                out.push(b'[');
                for (i, row) in rows.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(row.as_bytes());
                }
                out.push(b']');
                black_box(out)
            });
        });
    }
    group.finish();
}

fn summary() {
    let rows = criterion_rows(
        SIZES
            .iter()
            .map(|n| (vec![format!("{n} events")], "wire".to_owned(), format!("body/{n}"), format!("floor/{n}"))),
    );
    print_ratios(&["GET body"], "agentstate", &rows);
    let rows = criterion_rows(
        SIZES
            .iter()
            .map(|n| (vec![format!("{n} events")], "wire".to_owned(), format!("stored/{n}"), format!("floor/{n}"))),
    );
    print_ratios(&["from stored"], "agentstate", &rows);
    let rows = criterion_rows(
        SIZES
            .iter()
            .map(|n| (vec![format!("{n} events")], "wire".to_owned(), format!("tree/{n}"), format!("floor/{n}"))),
    );
    print_ratios(&["before (tree)"], "agentstate", &rows);
}

/// The conversion the server used before the streaming writer, as it was.
mod tree {
    use super::*;

    const FREE_FORM: &[&str] =
        &["state", "state_delta", "artifact_delta", "custom_metadata", "args", "response", "agent_state", "output"];
    const MAP_OF_MODELS: &[&str] = &["requested_auth_configs", "requested_tool_confirmations"];

    fn convert(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let snake = to_snake(&k);
                        let v = if FREE_FORM.contains(&snake.as_str()) {
                            v
                        } else if MAP_OF_MODELS.contains(&snake.as_str()) {
                            match v {
                                Value::Object(m) => {
                                    Value::Object(m.into_iter().map(|(k, v)| (k, convert(v))).collect())
                                }
                                other => other,
                            }
                        } else {
                            convert(v)
                        };
                        (to_camel(&k), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(convert).collect()),
            other => other,
        }
    }

    fn event(event: &Event) -> Value {
        let mut value = serde_json::to_value(event).unwrap();
        if let Value::Object(map) = &mut value {
            if let Some(Value::Object(actions)) = map.get_mut("actions") {
                for default in MAP_OF_MODELS {
                    actions.entry(*default).or_insert_with(|| json!({}));
                }
            }
            map.entry("node_info").or_insert_with(|| json!({"path": ""}));
        }
        convert(value)
    }

    pub(super) fn session(session: &Session) -> Value {
        json!({
            "id": session.id(), "appName": session.app_name(), "userId": session.user_id(),
            "state": Value::Object(session.state().all().clone()),
            "events": session.events().iter().map(event).collect::<Vec<_>>(),
            "lastUpdateTime": session.last_update_time(),
        })
    }
}

fn main() {
    run_criterion(bench, summary);
}
