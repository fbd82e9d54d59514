//! Services to run on and small helpers.

use agentstate::{Content, CreateSession, Event, GetSessionConfig, Session, SessionKey, SessionService};
use agentstate_runtime::{Runner, RuntimeError};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// Every scenario runs on the in-memory service and on SQLite (the embedded default).
pub(crate) async fn services() -> Vec<(&'static str, SessionService)> {
    let sqlite = SessionService::new(agentstate_sql::SqlStore::connect("sqlite::memory:").await.unwrap());
    vec![("memory", SessionService::in_memory()), ("sqlite", sqlite)]
}

/// [`services`], each with a session `id` of user `u` in app `app`.
pub(crate) async fn services_with(id: &str) -> Vec<(&'static str, SessionService)> {
    let services = services().await;
    for (_, service) in &services {
        create(service, id).await;
    }
    services
}

pub(crate) async fn create(service: &SessionService, id: &str) -> Session {
    service.create_session(CreateSession::new("app", "u").id(id)).await.unwrap()
}

pub(crate) async fn stored(service: &SessionService, id: &str) -> Session {
    let key = SessionKey::new("app", "u", id).unwrap();
    service.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap()
}

/// Runs to the end: the events yielded and the error it ended with, if any.
pub(crate) async fn run(runner: &Runner, session: &str, text: &str) -> (Vec<Event>, Option<RuntimeError>) {
    let mut stream = runner.run("u", session, Content::text("user", text));
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "nothing after the error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// Runs and expects success.
pub(crate) async fn run_ok(runner: &Runner, session: &str, text: &str) -> Vec<Event> {
    let (events, error) = run(runner, session, text).await;
    assert!(error.is_none(), "run failed: {error:?}");
    events
}

pub(crate) fn authors(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.author.as_str()).collect()
}

/// The agent's own instruction: what comes before the identity line the runtime appends.
pub(crate) fn instruction(request: &agentstate_runtime::model::LlmRequest) -> &str {
    let text = request.system_instruction.as_deref().unwrap_or_default();
    text.split("\n\nYou are an agent. Your internal name is").next().unwrap_or_default()
}

pub(crate) fn schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A scripted model `m` that answers each request with the next of `texts`.
pub(crate) fn answering(texts: &[&str]) -> agentstate_runtime::testing::ScriptedModel {
    let model = agentstate_runtime::testing::ScriptedModel::new("m");
    texts.iter().fold(model, |model, text| model.reply(agentstate_runtime::model::LlmResponse::text(*text)))
}

/// A Runner of app `app` on `service` for the agent `agent` builds.
pub(crate) fn runner_of(service: &SessionService, agent: agentstate_runtime::LlmAgentBuilder) -> Runner {
    Runner::new("app", agent.build().unwrap(), service.clone())
}
