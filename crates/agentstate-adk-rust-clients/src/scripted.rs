//! An ADK-Rust agent whose model is a script, for runs that compare session services: the
//! model answers a user's message with a call of `remember` and the tool's answer with text; the
//! tool writes `user:name`, `user:seen_<name>` and `temp:scratch`; the agent's instruction reads
//! `{user:name}` and its `output_key` is `last_reply`. Needs only ADK-Rust's crates, so a program
//! that links ADK-Rust's own SQL stores (and cannot link agentstate's) includes this file as is.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use adk_agent::LlmAgentBuilder;
use adk_core::{
    Agent, Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part, SessionId, Tool, ToolContext, UserId,
};
use adk_runner::Runner;
use adk_session::{CreateRequest, SessionService};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

/// The scripted model; it keeps every request it was sent (configuration and contents, where
/// the instruction is).
#[derive(Debug, Default)]
pub struct ScriptedModel {
    /// The requests, as text.
    pub requests: Mutex<Vec<String>>,
}

#[async_trait]
impl Llm for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate_content(&self, req: LlmRequest, _stream: bool) -> adk_core::Result<LlmResponseStream> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("{:?} {:?}", req.config, req.contents));
        let answered_tool =
            req.contents.last().is_some_and(|c| c.parts.iter().any(|p| matches!(p, Part::FunctionResponse { .. })));
        let said = req
            .contents
            .iter()
            .rev()
            .find(|c| c.role == "user")
            .and_then(|c| c.parts.iter().find_map(|p| p.text().map(str::to_owned)))
            .unwrap_or_default();
        let part = if answered_tool {
            Part::Text { text: format!("Noted: {said}") }
        } else {
            Part::FunctionCall {
                name: "remember".into(),
                args: json!({"name": said}),
                id: None,
                thought_signature: None,
            }
        };
        let response = LlmResponse {
            content: Some(Content { role: "model".into(), parts: vec![part] }),
            turn_complete: true,
            ..LlmResponse::default()
        };
        Ok(Box::pin(futures::stream::iter(vec![Ok(response)])))
    }
}

/// The tool: `user:name` and `user:seen_<name>` for the user, `temp:scratch` for the turn.
#[derive(Debug)]
pub struct Remember;

#[async_trait]
impl Tool for Remember {
    fn name(&self) -> &str {
        "remember"
    }

    fn description(&self) -> &str {
        "Remembers the user's name"
    }

    async fn execute(&self, ctx: Arc<dyn ToolContext>, args: Value) -> adk_core::Result<Value> {
        let name = args["name"].as_str().unwrap_or_default().to_owned();
        let mut actions = ctx.actions();
        actions.state_delta.insert("user:name".into(), json!(name));
        actions.state_delta.insert(format!("user:seen_{name}"), json!(true));
        actions.state_delta.insert("temp:scratch".into(), json!(1));
        ctx.set_actions(actions);
        Ok(json!({"remembered": name}))
    }
}

/// The agent on `model`.
///
/// # Errors
/// When ADK-Rust refuses to build it.
pub fn assistant(model: Arc<ScriptedModel>) -> adk_core::Result<Arc<dyn Agent>> {
    let agent = LlmAgentBuilder::new("assistant")
        .model(model as Arc<dyn Llm>)
        .instruction("You help {user:name}.")
        .output_key("last_reply")
        .tool(Arc::new(Remember))
        .build()?;
    Ok(Arc::new(agent))
}

/// A runner of `agent` for app `app` on `service`.
///
/// # Errors
/// When ADK-Rust refuses to build it.
pub fn runner(app: &str, agent: Arc<dyn Agent>, service: Arc<dyn SessionService>) -> adk_core::Result<Runner> {
    Runner::builder().app_name(app).agent(agent).session_service(service).build()
}

/// Creates session `session` of `user` in `app` with `user:name` set.
///
/// # Errors
/// The service's.
pub async fn create(service: &dyn SessionService, app: &str, user: &str, session: &str) -> adk_core::Result<()> {
    let state = [("user:name".to_string(), json!("nobody"))].into_iter().collect();
    let request = CreateRequest { app_name: app.into(), user_id: user.into(), session_id: Some(session.into()), state };
    service.create(request).await.map(|_| ())
}

/// One turn: `said` by `user` in `session`, run to its end.
///
/// # Errors
/// The runner's, or the first error an event carries.
pub async fn turn(runner: &Runner, user: &str, session: &str, said: &str) -> adk_core::Result<()> {
    let content = Content { role: "user".into(), parts: vec![Part::Text { text: said.into() }] };
    let mut events = runner.run(UserId::new(user)?, SessionId::new(session)?, content).await?;
    while let Some(event) = events.next().await {
        event?;
    }
    Ok(())
}

/// The median of `turns` turns in one session (each a tool call and an answer: four appends).
///
/// # Errors
/// The first turn that fails.
pub async fn median_turn(service: Arc<dyn SessionService>, app: &str, turns: usize) -> adk_core::Result<Duration> {
    let runner = runner(app, assistant(Arc::default())?, Arc::clone(&service))?;
    create(service.as_ref(), app, "u", "s").await?;
    let mut times = Vec::with_capacity(turns);
    for i in 0..turns {
        let started = Instant::now();
        turn(&runner, "u", "s", &format!("n{i}")).await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times.get(times.len() / 2).copied().unwrap_or_default())
}

/// 16 runners at once on 16 sessions of one user, each writing its own `user:` key; how many
/// of the 16 keys the user's state keeps, and how many runs failed.
///
/// # Errors
/// When the sessions cannot be created or read.
pub async fn sixteen_writers(service: Arc<dyn SessionService>, app: &str) -> adk_core::Result<(usize, usize)> {
    let runner = Arc::new(runner(app, assistant(Arc::default())?, Arc::clone(&service))?);
    for i in 0..16 {
        create(service.as_ref(), app, "u", &format!("w{i}")).await?;
    }
    let runs = (0..16).map(|i| {
        let runner = Arc::clone(&runner);
        tokio::spawn(async move { turn(&runner, "u", &format!("w{i}"), &format!("w{i}")).await })
    });
    let mut failed = 0;
    for run in runs.collect::<Vec<_>>() {
        if !matches!(run.await, Ok(Ok(()))) {
            failed += 1;
        }
    }
    let get = adk_session::GetRequest {
        app_name: app.into(),
        user_id: "u".into(),
        session_id: "w0".into(),
        num_recent_events: Some(0),
        after: None,
    };
    let state = service.get(get).await?.state().all();
    Ok(((0..16).filter(|i| state.get(&format!("user:seen_w{i}")) == Some(&json!(true))).count(), failed))
}
