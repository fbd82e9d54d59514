//! State in agent code (SPEC §5): callbacks and tools read the live state and write through a
//! context, whose writes become the `state_delta` of the event it produces.
//!
//! A context starts from the live state of the invocation (the session handle's state, this
//! invocation's `temp:` keys included) and layers its own writes on top: a read after a write sees
//! it, and the writes are collected as the pending delta. Other contexts see them once the event
//! is appended. Tools called in parallel each get a context of their own; their deltas are merged
//! in call order with [`merge_deltas`] (a later call wins a key both wrote), so no write is lost.
//!
//! ```
//! use agentstate::{CreateSession, InMemorySessionService, SessionService};
//! use agentstate_runtime::CallbackContext;
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> agentstate::Result<()> {
//! let service = InMemorySessionService::new();
//! let mut session = service.create_session(CreateSession::new("app", "u")).await?;
//!
//! // In an agent callback, as in the seeds:
//! let mut ctx = CallbackContext::new("inv-1", "assistant", session.state());
//! let count = ctx.get("user_action_count").and_then(|v| v.as_i64()).unwrap_or(0);
//! ctx.state_mut().set("user_action_count", json!(count + 1));
//! ctx.state_mut().set("temp:last_operation_status", json!("success"));
//! assert_eq!(ctx.get("user_action_count"), Some(&json!(1)));
//!
//! // The runner appends the event the callback produced; the writes travel on it.
//! service.append_event(&mut session, ctx.into_event()).await?;
//! assert_eq!(session.state().get("temp:last_operation_status"), Some(&json!("success")));
//! # Ok(()) }
//! ```

use std::sync::Arc;

use agentstate::{Event, EventActions, Map, State, Value};

/// What a callback (or a tool, see [`ToolContext`]) can see and change.
#[derive(Debug, Clone)]
pub struct CallbackContext {
    invocation_id: String,
    agent_name: String,
    function_call_id: Option<String>,
    base: Arc<Map<String, Value>>,
    actions: EventActions,
}

/// A tool's context: a [`CallbackContext`] for the tool call.
pub type ToolContext = CallbackContext;

/// Writes through a context (`ctx.state_mut().set(k, v)`).
#[derive(Debug)]
pub struct StateMut<'a> {
    delta: &'a mut Map<String, Value>,
}

impl StateMut<'_> {
    /// Sets `key` (with its scope prefix) to `value` for the rest of this context, and records it
    /// in the pending delta.
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.delta.insert(key.into(), value);
    }
}

impl CallbackContext {
    /// A context of agent `agent_name` in invocation `invocation_id`, over the live `state`.
    pub fn new(invocation_id: impl Into<String>, agent_name: impl Into<String>, state: &State) -> Self {
        Self::over(invocation_id, agent_name, Arc::new(state.all().clone()))
    }

    /// A context over a snapshot of the live state that several contexts share (parallel tools).
    pub fn over(
        invocation_id: impl Into<String>,
        agent_name: impl Into<String>,
        state: Arc<Map<String, Value>>,
    ) -> Self {
        Self {
            invocation_id: invocation_id.into(),
            agent_name: agent_name.into(),
            function_call_id: None,
            base: state,
            actions: EventActions::default(),
        }
    }

    /// The same context for the tool call `id`.
    pub fn for_call(mut self, id: impl Into<String>) -> Self {
        self.function_call_id = Some(id.into());
        self
    }

    /// In a tool: the id of the function call being answered.
    pub fn function_call_id(&self) -> Option<&str> {
        self.function_call_id.as_deref()
    }

    /// The invocation.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The agent the context belongs to.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// The value of `key`: this context's write if any, else the live state's.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.actions.state_delta.get(key).or_else(|| self.base.get(key))
    }

    /// Whether `key` has a value (a write of `null` counts).
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The state as this context sees it: the live state with this context's writes on top.
    pub fn state(&self) -> Map<String, Value> {
        let mut view = Map::clone(&self.base);
        view.extend(self.actions.state_delta.iter().map(|(k, v)| (k.clone(), v.clone())));
        view
    }

    /// Where writes go.
    pub fn state_mut(&mut self) -> StateMut<'_> {
        StateMut { delta: &mut self.actions.state_delta }
    }

    /// The writes so far.
    pub fn delta(&self) -> &Map<String, Value> {
        &self.actions.state_delta
    }

    /// Whether anything was written (the reference emits a state-only event only then).
    pub fn has_delta(&self) -> bool {
        !self.actions.state_delta.is_empty()
    }

    /// The actions of the event this context produces (its writes as `state_delta`).
    pub fn actions(&self) -> &EventActions {
        &self.actions
    }

    /// The same, to set more than state (`skip_summarization`, `escalate`, `transfer_to_agent`).
    pub fn actions_mut(&mut self) -> &mut EventActions {
        &mut self.actions
    }

    /// The event this context produces: authored by the agent, carrying the writes.
    pub fn into_event(self) -> Event {
        let mut event = Event::new(self.invocation_id).author(self.agent_name);
        event.actions = self.actions;
        event
    }

    /// Only the actions, for an event the caller builds.
    pub fn into_actions(self) -> EventActions {
        self.actions
    }
}

/// Merges the deltas of tools called in parallel, in call order: every key any of them wrote is
/// kept; a key several wrote gets the value of the latest call.
pub fn merge_deltas<'a>(deltas: impl IntoIterator<Item = &'a Map<String, Value>>) -> Map<String, Value> {
    let mut merged = Map::new();
    for delta in deltas {
        merged.extend(delta.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentstate::{CreateSession, GetSessionConfig, InMemorySessionService, SessionService};
    use serde_json::json;

    #[tokio::test]
    async fn writes_are_visible_in_the_context_and_travel_on_the_event() {
        let service = InMemorySessionService::new();
        let mut session =
            service.create_session(CreateSession::new("app", "u").state("user_action_count", json!(4))).await.unwrap();
        let mut ctx = CallbackContext::new("inv", "agent", session.state());
        assert_eq!(ctx.get("user_action_count"), Some(&json!(4)));
        assert!(!ctx.has_delta());
        ctx.state_mut().set("user_action_count", json!(5));
        ctx.state_mut().set("temp:status", json!("success"));
        ctx.state_mut().set("user:seen", json!(true));
        assert_eq!(ctx.get("user_action_count"), Some(&json!(5)));
        assert_eq!(ctx.state()["temp:status"], json!("success"));
        // The session itself is untouched until the event is appended.
        assert_eq!(session.state().get("user_action_count"), Some(&json!(4)));

        let event = ctx.into_event();
        assert_eq!((event.author.as_str(), event.invocation_id.as_str()), ("agent", "inv"));
        service.append_event(&mut session, event).await.unwrap();
        assert_eq!(session.state().get("temp:status"), Some(&json!("success")));
        let stored = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(stored.state().get("user_action_count"), Some(&json!(5)));
        assert_eq!(stored.state().get("user:seen"), Some(&json!(true)));
        assert!(!stored.state().contains("temp:status"));
    }

    #[tokio::test]
    async fn parallel_tools_lose_no_write() {
        let service = InMemorySessionService::new();
        let mut session = service.create_session(CreateSession::new("app", "u")).await.unwrap();
        // Two tools of one model turn, each with its own context over the same live state.
        let mut weather = CallbackContext::new("inv", "agent", session.state());
        let mut news = CallbackContext::new("inv", "agent", session.state());
        weather.state_mut().set("weather", json!("sunny"));
        weather.state_mut().set("last_tool", json!("weather"));
        news.state_mut().set("news", json!(["a", "b"]));
        news.state_mut().set("last_tool", json!("news"));
        let delta = merge_deltas([weather.delta(), news.delta()]);
        assert_eq!(
            delta,
            match json!({"weather": "sunny", "last_tool": "news", "news": ["a", "b"]}) {
                Value::Object(m) => m,
                _ => unreachable!(),
            }
        );
        let mut event = Event::new("inv").author("agent");
        event.actions.state_delta = delta;
        service.append_event(&mut session, event).await.unwrap();
        let stored = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        for key in ["weather", "news", "last_tool"] {
            assert!(stored.state().contains(key), "{key} lost");
        }
    }
}
