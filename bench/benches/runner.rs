//! What the runtime costs on top of storage: one invocation through the `Runner` against the
//! storage work it cannot avoid, measured in the same run.
//!
//! - `text`: the agent answers with text saved under `output_key`. Floor: load the session's
//!   20 most recent events, append the user's message, append an answer carrying the delta.
//! - `tool`: the agent calls a tool that writes state, then answers. Floor: the same load and
//!   four appends (message, call, tool answer, final answer).
//!
//! The model answers instantly (a function of the request), so the figures are the runtime's
//! own work: rendering the instruction, building the request from history, contexts, events,
//! the stream. Every measured turn gets a fresh session with 20 earlier events, made and deleted
//! outside the timing, so no turn pays for the history of the ones before it. Each runs on the
//! in-memory service and on SQLite (a file, `synchronous=normal`).
//! The summary printed at the end gives every figure as a ratio to its floor.
//!
//! Run: `cargo bench -p agentstate-bench --bench runner`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use agentstate::{Content, CreateSession, Event, GetSessionConfig, SessionKey, SessionService};
use agentstate_bench::{criterion_rows, print_ratios};
use agentstate_runtime::model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream};
use agentstate_runtime::{FunctionTool, LlmAgent, Runner};
use criterion::{BenchmarkId, Criterion};
use futures_util::StreamExt;
use serde_json::json;

/// Calls `note` once per turn when the agent has tools, then answers.
struct Instant;

#[async_trait::async_trait]
impl Model for Instant {
    fn name(&self) -> &str {
        "instant"
    }

    async fn generate(&self, request: LlmRequest, _: bool) -> Result<ResponseStream, ModelError> {
        let last = request.contents.last().cloned().unwrap_or_default();
        let answered = last.parts().iter().any(|p| p.function_response.is_some());
        let response = if request.tools.is_empty() || answered {
            LlmResponse::text("Here is a short, friendly answer to your question.")
        } else {
            LlmResponse::call("note", json!({"topic": "bench"}))
        };
        Ok(Box::pin(futures_util::stream::iter([Ok(response)])))
    }
}

fn agent(with_tool: bool) -> LlmAgent {
    let mut builder = LlmAgent::builder("bench_agent", Arc::new(Instant) as Arc<dyn Model>)
        .instruction("Answer {user:name} about {topic}. Be brief; keep {{braces}}.")
        .output_key("last_answer")
        .history_limit(20);
    if with_tool {
        builder = builder.tool(FunctionTool::new(
            "note",
            "Notes the topic.",
            json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
            |args, ctx| {
                ctx.state_mut().set("user:last_topic", args["topic"].clone());
                Ok(json!({"noted": true}))
            },
        ));
    }
    builder.build().unwrap()
}

/// The storage work of one invocation, done directly.
async fn floor(service: &SessionService, key: &SessionKey, appends: usize) {
    let mut session = service.get_session(key, GetSessionConfig::recent(20)).await.unwrap().unwrap();
    let invocation = format!("e-{}", uuid::Uuid::new_v4());
    let user = Event::new(&invocation).author("user").content(Content::text("user", "What about it?"));
    service.append_event(&mut session, user).await.unwrap();
    for i in 1..appends {
        let mut event = Event::new(&invocation)
            .author("bench_agent")
            .content(Content::text("model", "Here is a short, friendly answer to your question."));
        if i + 1 == appends {
            event = event.delta("last_answer", json!("Here is a short, friendly answer to your question."));
        }
        service.append_event(&mut session, event).await.unwrap();
    }
}

async fn services(dir: &std::path::Path) -> Vec<(&'static str, SessionService)> {
    let url = format!("sqlite://{}?synchronous=normal", dir.join("bench.db").display());
    let sqlite = SessionService::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
    vec![("memory", SessionService::in_memory()), ("sqlite", sqlite)]
}

/// A session with the agent's state and 20 earlier events, for one measured turn.
async fn fresh(service: &SessionService, id: &str) -> SessionKey {
    let create =
        CreateSession::new("bench", "u").id(id).state("user:name", json!("Ann")).state("topic", json!("tides"));
    let mut session = service.create_session(create).await.unwrap();
    for i in 0..20 {
        let (author, role) = if i % 2 == 0 { ("user", "user") } else { ("bench_agent", "model") };
        let event =
            Event::new(format!("e-old-{}", i / 2)).author(author).content(Content::text(role, format!("turn {i}")));
        service.append_event(&mut session, event).await.unwrap();
    }
    session.key().clone()
}

/// Times `turn` on fresh sessions (made and deleted outside the timing), so no run sees a
/// history grown by the runs before it.
async fn timed<F, Fut>(service: &SessionService, iters: u64, turn: F) -> Duration
where
    F: Fn(SessionKey) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let key = fresh(service, &format!("s{i}")).await;
        let start = std::time::Instant::now();
        turn(key.clone()).await;
        total += start.elapsed();
        service.delete_session(&key).await.unwrap();
    }
    total
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = std::env::temp_dir().join(format!("agentstate-bench-runner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (backend, service) in rt.block_on(services(&dir)) {
        for (kind, with_tool, appends) in [("text", false, 2), ("tool", true, 4)] {
            let mut group = c.benchmark_group(format!("{kind}_{backend}"));
            let runner = Runner::new("bench", agent(with_tool), service.clone());
            group.bench_function(BenchmarkId::new("runner", backend), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let (service, runner) = (service.clone(), runner.clone());
                    async move {
                        timed(&service, iters, |key| {
                            let runner = runner.clone();
                            async move {
                                let message = Content::text("user", "What about it?");
                                let mut events = runner.run("u", key.session_id(), message);
                                while let Some(event) = events.next().await {
                                    event.unwrap();
                                }
                            }
                        })
                        .await
                    }
                });
            });
            group.bench_function(BenchmarkId::new("floor", backend), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let service = service.clone();
                    async move {
                        let direct = service.clone();
                        timed(&service, iters, |key| {
                            let direct = direct.clone();
                            async move { floor(&direct, &key, appends).await }
                        })
                        .await
                    }
                });
            });
            group.finish();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn summary() {
    let mut specs = Vec::new();
    for kind in ["text", "tool"] {
        for backend in ["memory", "sqlite"] {
            let labels = vec![kind.to_owned(), backend.to_owned()];
            specs.push((labels, format!("{kind}_{backend}"), format!("runner/{backend}"), format!("floor/{backend}")));
        }
    }
    print_ratios(&["turn", "backend"], "runner", &criterion_rows(specs));
}

fn main() {
    agentstate_bench::run_criterion(bench, summary);
}
