//! State in agent code: callbacks and tools read the live state and write through a context,
//! whose writes become the `state_delta` of the event it produces. Instruction providers read it
//! through a [`ReadonlyContext`].
//!
//! A context starts from the live state of the invocation (the session handle's state, this
//! invocation's `temp:` keys included) and layers writes on top: a read after a write sees it,
//! and the context's own writes are collected as its delta.
//!
//! Tools called in one model turn run concurrently, each with a context of its own, made with
//! [`CallbackContext::sibling`]. Siblings share one layer of writes, as the tools of one turn
//! share the live state in ADK for Python: a tool reads what another wrote a moment before, so
//! read-modify-write (a counter, a list) adds up, and [`CallbackContext::shared_writes`] gives
//! every key any of them wrote with its latest value. No write is lost. A read and the write that
//! depends on it with an `.await` between them can still race with a sibling doing the same; keep
//! them together.
//!
//! ```
//! use agentstate::{CreateSession, SessionService};
//! use agentstate_runtime::CallbackContext;
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> agentstate::Result<()> {
//! let service = SessionService::in_memory();
//! let mut session = service.create_session(CreateSession::new("app", "u")).await?;
//!
//! // In an agent callback, as in the ADK state guide:
//! let mut ctx = CallbackContext::new("inv-1", "assistant", session.state());
//! let count = ctx.get("user_action_count").and_then(|v| v.as_i64()).unwrap_or(0);
//! ctx.state_mut().set("user_action_count", json!(count + 1));
//! ctx.state_mut().set("temp:last_operation_status", json!("success"));
//! assert_eq!(ctx.get("user_action_count"), Some(json!(1)));
//!
//! // The runner appends the event the callback produced; the writes travel on it.
//! service.append_event(&mut session, ctx.into_event()).await?;
//! assert_eq!(session.state().get("temp:last_operation_status"), Some(&json!("success")));
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentstate::artifact::{ArtifactScope, ArtifactService};
use agentstate::memory::{Memory, MemoryOwner, MemoryService};
use agentstate::{Event, EventActions, Map, Part, Session, State, Value};

use crate::template::{Template, TemplateError};

/// What a callback (or a tool, see [`ToolContext`]) can see and change.
#[derive(Debug, Clone)]
pub struct CallbackContext {
    invocation_id: String,
    agent_name: String,
    function_call_id: Option<String>,
    base: Arc<Map<String, Value>>,
    /// Writes of this context and of its siblings, latest value per key.
    written: Arc<Mutex<Writes>>,
    changes: Changes,
    memory: Option<MemoryAccess>,
    artifacts: Option<ArtifactAccess>,
}

/// The artifacts an invocation may save and load: the runner's artifact service, in the
/// session's scope (its `user:` names are the user's in every session).
#[derive(Debug, Clone)]
pub struct ArtifactAccess {
    /// The service.
    pub service: ArtifactService,
    /// The session's app.
    pub app: String,
    /// The session's user.
    pub user: String,
    /// The session.
    pub session: String,
}

impl ArtifactAccess {
    /// The session's scope.
    pub fn scope(&self) -> ArtifactScope<'_> {
        ArtifactScope::new(&self.app, &self.user, Some(&self.session))
    }
}

fn no_artifact_service() -> agentstate::Error {
    agentstate::Error::Unsupported {
        operation: "artifacts: the runner has no artifact service (Runner::artifacts)",
        capability: "artifacts",
    }
}

/// The memory an invocation may search: the runner's memory service, for the session's user.
#[derive(Debug, Clone)]
pub struct MemoryAccess {
    /// The service.
    pub service: MemoryService,
    /// Whose memories (the session's app and user).
    pub owner: MemoryOwner,
}

/// The writes of a context and its siblings: values set, and keys deleted, each key in at most
/// one of the two (its latest write).
#[derive(Debug, Default)]
struct Writes {
    set: Map<String, Value>,
    deleted: Vec<String>,
}

/// What a context changed: the actions of the event it produces (its writes as
/// `state_delta`) and the keys it deleted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// The event's actions; `state_delta` holds the context's writes.
    pub actions: EventActions,
    /// Keys the context deleted (see [`Event::delete`]).
    pub deleted_keys: Vec<String>,
}

impl Changes {
    /// Whether the state changed (a write or a deletion).
    pub fn touches_state(&self) -> bool {
        !self.actions.state_delta.is_empty() || !self.deleted_keys.is_empty()
    }

    /// Puts these changes on `event`: its actions, and its deletions.
    pub fn apply_to(self, event: &mut Event) {
        event.actions = self.actions;
        for key in self.deleted_keys {
            event.actions.state_delta.insert(key.clone(), Value::Null);
            if !event.deleted_keys.contains(&key) {
                event.deleted_keys.push(key);
            }
        }
    }
}

/// A tool's context: a [`CallbackContext`] for the tool call.
pub type ToolContext = CallbackContext;

/// Writes through a context (`ctx.state_mut().set(k, v)`).
#[derive(Debug)]
pub struct StateMut<'a> {
    context: &'a mut CallbackContext,
}

impl StateMut<'_> {
    /// Sets `key` (with its scope prefix) to `value`: visible at once to this context and its
    /// siblings, and recorded in this context's delta.
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        {
            let mut written = self.context.written();
            written.deleted.retain(|k| *k != key);
            written.set.insert(key.clone(), value.clone());
        }
        let changes = &mut self.context.changes;
        changes.deleted_keys.retain(|k| *k != key);
        changes.actions.state_delta.insert(key, value);
    }

    /// Deletes `key` (with its scope prefix): gone at once for this context and its siblings,
    /// and removed from the stored state when the event is appended.
    pub fn remove(&mut self, key: impl Into<String>) {
        let key = key.into();
        {
            let mut written = self.context.written();
            written.set.shift_remove(&key);
            if !written.deleted.contains(&key) {
                written.deleted.push(key.clone());
            }
        }
        let changes = &mut self.context.changes;
        changes.actions.state_delta.insert(key.clone(), Value::Null);
        if !changes.deleted_keys.contains(&key) {
            changes.deleted_keys.push(key);
        }
    }
}

impl CallbackContext {
    /// A context of agent `agent_name` in invocation `invocation_id`, over the live `state`.
    pub fn new(invocation_id: impl Into<String>, agent_name: impl Into<String>, state: &State) -> Self {
        Self::from_snapshot(invocation_id, agent_name, Arc::new(state.all().clone()))
    }

    /// A context over a snapshot of the live state (shared, so making one copies nothing).
    pub fn from_snapshot(
        invocation_id: impl Into<String>,
        agent_name: impl Into<String>,
        state: Arc<Map<String, Value>>,
    ) -> Self {
        Self {
            invocation_id: invocation_id.into(),
            agent_name: agent_name.into(),
            function_call_id: None,
            base: state,
            written: Arc::default(),
            changes: Changes::default(),
            memory: None,
            artifacts: None,
        }
    }

    /// With access to memory (the [`Runner`](crate::Runner) gives it when it has a memory
    /// service).
    #[must_use]
    pub fn with_memory(mut self, memory: Option<MemoryAccess>) -> Self {
        self.memory = memory;
        self
    }

    /// With access to artifacts (the [`Runner`](crate::Runner) gives it when it has an artifact
    /// service).
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Option<ArtifactAccess>) -> Self {
        self.artifacts = artifacts;
        self
    }

    /// ADK's `save_artifact`: saves `part` as the next version of `name` in the session (a
    /// `user:` name, for the user) and records it in the event's `artifact_delta`; the version.
    ///
    /// # Errors
    /// `Unsupported` when the runner has no artifact service; the service's refusals.
    pub async fn save_artifact(&mut self, name: &str, part: &Part) -> agentstate::Result<i64> {
        let access = self.artifacts.as_ref().ok_or_else(no_artifact_service)?;
        let saved = access.service.save(access.scope(), name, part, None).await?;
        self.changes.actions.artifact_delta.insert(name.to_owned(), Value::from(saved.version));
        Ok(saved.version)
    }

    /// ADK's `load_artifact`: a version of `name` (`None`: the latest), or `None`.
    ///
    /// # Errors
    /// `Unsupported` when the runner has no artifact service; the service's errors.
    pub async fn load_artifact(&self, name: &str, version: Option<i64>) -> agentstate::Result<Option<Part>> {
        let access = self.artifacts.as_ref().ok_or_else(no_artifact_service)?;
        access.service.load(access.scope(), name, version).await
    }

    /// ADK's `list_artifacts`: the names of the session's artifacts and the user's `user:` ones,
    /// sorted.
    ///
    /// # Errors
    /// `Unsupported` when the runner has no artifact service; the service's errors.
    pub async fn list_artifacts(&self) -> agentstate::Result<Vec<String>> {
        let access = self.artifacts.as_ref().ok_or_else(no_artifact_service)?;
        access.service.list_keys(access.scope()).await
    }

    /// ADK's `search_memory`: the memories of the session's user that share words with `query`,
    /// those sharing the most first (at most 10).
    ///
    /// # Errors
    /// `Unsupported` when the runner has no memory service ([`Runner::memory`](crate::Runner::memory));
    /// the service's errors (a query without words, a store without memory).
    pub async fn search_memory(&self, query: &str) -> agentstate::Result<Vec<Memory>> {
        let Some(memory) = &self.memory else {
            return Err(agentstate::Error::Unsupported {
                operation: "search memory: the runner has no memory service (Runner::memory)",
                capability: "memory",
            });
        };
        memory.service.search(&memory.owner, query, None).await
    }

    /// A context for another tool call of the same turn: the same state and the same layer of
    /// writes (each sees the other's writes at once), a delta and actions of its own.
    pub fn sibling(&self, function_call_id: impl Into<String>) -> Self {
        Self {
            invocation_id: self.invocation_id.clone(),
            agent_name: self.agent_name.clone(),
            function_call_id: Some(function_call_id.into()),
            base: Arc::clone(&self.base),
            written: Arc::clone(&self.written),
            changes: Changes::default(),
            memory: self.memory.clone(),
            artifacts: self.artifacts.clone(),
        }
    }

    fn written(&self) -> MutexGuard<'_, Writes> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The invocation.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The agent the context belongs to.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// In a tool: the id of the function call being answered.
    pub fn function_call_id(&self) -> Option<&str> {
        self.function_call_id.as_deref()
    }

    /// The value of `key`: the latest write to it (by this context or a sibling), else the live
    /// state's; `None` once deleted.
    pub fn get(&self, key: &str) -> Option<Value> {
        let written = self.written();
        if written.deleted.iter().any(|k| k == key) {
            return None;
        }
        written.set.get(key).or_else(|| self.base.get(key)).cloned()
    }

    /// Whether `key` has a value (a write of `null` counts; a deletion does not).
    pub fn contains(&self, key: &str) -> bool {
        let written = self.written();
        !written.deleted.iter().any(|k| k == key) && (written.set.contains_key(key) || self.base.contains_key(key))
    }

    /// The state as this context sees it: the live state with the writes on top.
    pub fn state(&self) -> Map<String, Value> {
        let mut view = Map::clone(&self.base);
        let written = self.written();
        view.extend(written.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        for key in &written.deleted {
            view.shift_remove(key);
        }
        view
    }

    /// Where writes go.
    pub fn state_mut(&mut self) -> StateMut<'_> {
        StateMut { context: self }
    }

    /// This context's own writes so far (a deleted key shows as `null`).
    pub fn delta(&self) -> &Map<String, Value> {
        &self.changes.actions.state_delta
    }

    /// Every key this context and its siblings wrote (set or deleted), with its latest change.
    pub fn shared_writes(&self) -> Changes {
        let written = self.written();
        let mut changes = Changes::default();
        changes.actions.state_delta = written.set.clone();
        changes.deleted_keys = written.deleted.clone();
        changes
    }

    /// Whether this context changed state (the reference emits a state-only event only then).
    pub fn has_delta(&self) -> bool {
        self.changes.touches_state()
    }

    /// The actions of the event this context produces (its writes as `state_delta`).
    pub fn actions(&self) -> &EventActions {
        &self.changes.actions
    }

    /// The same, to set more than state (`skip_summarization`, `escalate`, `transfer_to_agent`).
    pub fn actions_mut(&mut self) -> &mut EventActions {
        &mut self.changes.actions
    }

    /// Starts this context from changes made earlier in the same step (they stay part of the
    /// event it produces).
    #[must_use]
    pub fn with_changes(mut self, changes: Changes) -> Self {
        for key in &changes.deleted_keys {
            self.state_mut().remove(key.clone());
        }
        for (key, value) in &changes.actions.state_delta {
            if !changes.deleted_keys.contains(key) {
                self.state_mut().set(key.clone(), value.clone());
            }
        }
        self.changes = changes;
        self
    }

    /// The event this context produces: authored by the agent, carrying its changes.
    pub fn into_event(self) -> Event {
        let mut event = Event::new(&self.invocation_id).author(&self.agent_name);
        self.changes.apply_to(&mut event);
        event
    }

    /// Only the changes, for an event the caller builds ([`Changes::apply_to`]).
    pub fn into_changes(self) -> Changes {
        self.changes
    }
}

/// What an [`InstructionProvider`](crate::InstructionProvider) sees: the invocation, the agent
/// and the live state, read-only.
#[derive(Debug, Clone, Copy)]
pub struct ReadonlyContext<'a> {
    /// The invocation id.
    pub invocation_id: &'a str,
    /// The agent whose instruction is being built.
    pub agent_name: &'a str,
    /// The session.
    pub session: &'a Session,
}

impl ReadonlyContext<'_> {
    /// The live state (this invocation's `temp:` keys included).
    pub fn state(&self) -> &Map<String, Value> {
        self.session.state().all()
    }

    /// One value of it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.state().get(key)
    }
}

/// Fills `{key}` placeholders of `template` from the live state, as an agent's instruction
/// template is filled: for an [`InstructionProvider`](crate::InstructionProvider) that wants
/// injection after all.
pub fn inject_session_state(template: &str, ctx: &ReadonlyContext<'_>) -> Result<String, TemplateError> {
    Template::parse(template).render(ctx.state(), ctx.agent_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentstate::{CreateSession, GetSessionConfig, SessionService};
    use serde_json::json;

    #[tokio::test]
    async fn writes_are_visible_in_the_context_and_travel_on_the_event() {
        let service = SessionService::in_memory();
        let mut session =
            service.create_session(CreateSession::new("app", "u").state("user_action_count", json!(4))).await.unwrap();
        let mut ctx = CallbackContext::new("inv", "agent", session.state());
        assert_eq!(ctx.get("user_action_count"), Some(json!(4)));
        assert!(!ctx.has_delta());
        ctx.state_mut().set("user_action_count", json!(5));
        ctx.state_mut().set("temp:status", json!("success"));
        ctx.state_mut().set("user:seen", json!(true));
        assert_eq!(ctx.get("user_action_count"), Some(json!(5)));
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

    #[test]
    fn siblings_see_each_other_and_lose_no_write() {
        let base = Arc::new(Map::from_iter([("count".to_owned(), json!(10))]));
        let turn = CallbackContext::from_snapshot("inv", "agent", base);
        let (mut weather, mut news) = (turn.sibling("c1"), turn.sibling("c2"));
        for ctx in [&mut weather, &mut news] {
            let count = ctx.get("count").and_then(|v| v.as_i64()).unwrap_or(0);
            ctx.state_mut().set("count", json!(count + 1));
        }
        weather.state_mut().set("weather", json!("sunny"));
        news.state_mut().set("news", json!(["a", "b"]));
        assert_eq!(weather.get("news"), Some(json!(["a", "b"])), "a sibling's write is visible at once");
        assert_eq!(weather.delta().len(), 2, "each keeps its own delta");
        assert_eq!(
            Value::Object(news.shared_writes().actions.state_delta),
            json!({"count": 12, "weather": "sunny", "news": ["a", "b"]}),
            "both increments count"
        );
        // A context that is not a sibling shares nothing.
        let other = CallbackContext::from_snapshot("inv", "agent", Arc::new(Map::new()));
        assert!(!other.shared_writes().touches_state());
    }

    #[tokio::test]
    async fn removed_keys_are_gone_for_the_context_its_siblings_and_storage() {
        let service = SessionService::in_memory();
        let state = json!({"k": 1, "user:u": 2, "keep": 3}).as_object().unwrap().clone();
        let mut session = service.create_session(CreateSession::new("app", "u").with_state(state)).await.unwrap();
        let turn = CallbackContext::new("inv", "agent", session.state());
        let (mut a, b) = (turn.sibling("c1"), turn.sibling("c2"));
        a.state_mut().remove("k");
        a.state_mut().remove("user:u");
        a.state_mut().set("user:u", json!(5));
        a.state_mut().remove("user:u");
        assert_eq!((b.get("k"), b.contains("user:u")), (None, false), "a sibling sees the deletions");
        assert_eq!(Value::Object(b.state()), json!({"keep": 3}));
        assert!(a.has_delta());
        let mut event = Event::new("inv").author("agent");
        turn.shared_writes().apply_to(&mut event);
        assert_eq!(event.deleted_keys, ["k", "user:u"]);
        assert_eq!(Value::Object(event.actions.state_delta.clone()), json!({"k": null, "user:u": null}));
        service.append_event(&mut session, event).await.unwrap();
        let stored = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(Value::Object(stored.state().all().clone()), json!({"keep": 3}));
        assert_eq!(session.state(), stored.state(), "the handle saw the same");
        // Set after delete wins, in this context's own changes too.
        let mut c = CallbackContext::new("inv", "agent", session.state());
        c.state_mut().remove("keep");
        c.state_mut().set("keep", json!(4));
        assert_eq!(c.into_event().deleted_keys, Vec::<String>::new());
    }
}
