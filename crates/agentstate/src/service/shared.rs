//! `app:` and `user:` state without a session: read, written, and the log of those writes.

use super::SessionService;
use crate::error::{Error, Result};
use crate::key::validate_id;
use crate::store::{SharedStateStore, SharedStateUpdate, SharedStateWrite, SharedStateWrites, StateOwner};
use crate::{APP_PREFIX, Map, TEMP_PREFIX, USER_PREFIX, Value};

/// The longest origin a write records, in characters (longer ones are cut).
pub const MAX_ORIGIN_CHARS: usize = 256;

/// The most log entries one page holds.
pub const MAX_WRITES_PAGE: usize = 1000;

/// A write of `app:` or `user:` state without a session: keys (without their prefix) to set and
/// to remove, and what writes them (recorded in the owner's log of writes).
///
/// ```
/// # use agentstate::StateWrite;
/// # use serde_json::json;
/// let write = StateWrite::new("billing job").set("plan", json!("pro")).delete("trial");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateWrite {
    /// Keys to set and their values.
    pub delta: Map<String, Value>,
    /// Keys to remove.
    pub deleted: Vec<String>,
    /// What writes it: a route, a job, a tool (at most [`MAX_ORIGIN_CHARS`] are kept).
    pub origin: String,
}

impl StateWrite {
    /// An empty write by `origin`.
    pub fn new(origin: impl Into<String>) -> Self {
        Self { origin: origin.into(), ..Self::default() }
    }

    /// Sets `key` to `value`.
    #[must_use]
    pub fn set(mut self, key: impl Into<String>, value: Value) -> Self {
        self.delta.insert(key.into(), value);
        self
    }

    /// Removes `key`.
    #[must_use]
    pub fn delete(mut self, key: impl Into<String>) -> Self {
        self.deleted.push(key.into());
        self
    }
}

impl SessionService {
    /// A user's `user:` state in `app_name`, without a session: keys without the prefix, as ADK
    /// for Python's `get_user_state` answers (empty when the user has none). It outlives the
    /// user's sessions.
    pub async fn user_state(&self, app_name: &str, user_id: &str) -> Result<Map<String, Value>> {
        let owner = user_owner(app_name, user_id)?;
        self.shared_state_store("read a user's state")?.shared_state(&owner).await
    }

    /// An app's `app:` state, without a session: keys without the prefix (empty when it has none).
    pub async fn app_state(&self, app_name: &str) -> Result<Map<String, Value>> {
        validate_id("app_name", app_name)?;
        self.shared_state_store("read an app's state")?.shared_state(&StateOwner::App(app_name.to_owned())).await
    }

    /// Writes a user's `user:` state without a session: `write`'s keys set, then its deletions
    /// removed, atomically per key as an append's `user:` changes are; recorded in the user's log
    /// of writes ([`user_state_writes`](Self::user_state_writes)). Every session of the user sees
    /// the result on its next read.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad id, an empty key or one with a scope prefix (give
    /// `lang`, not `user:lang`); [`Error::Unsupported`] on a store without shared state.
    pub async fn update_user_state(&self, app_name: &str, user_id: &str, write: StateWrite) -> Result<()> {
        self.update_shared(user_owner(app_name, user_id)?, write, "write a user's state").await
    }

    /// Writes an app's `app:` state without a session, as
    /// [`update_user_state`](Self::update_user_state) does a user's.
    ///
    /// # Errors
    /// As [`update_user_state`](Self::update_user_state).
    pub async fn update_app_state(&self, app_name: &str, write: StateWrite) -> Result<()> {
        validate_id("app_name", app_name)?;
        self.update_shared(StateOwner::App(app_name.to_owned()), write, "write an app's state").await
    }

    /// A page of a user's log of `user:` state writes without a session, newest first, strictly
    /// before `before` (a [`SharedStateWrite::position`]); at most `limit` (up to
    /// [`MAX_WRITES_PAGE`]). Writes through sessions are their events.
    pub async fn user_state_writes(
        &self,
        app_name: &str,
        user_id: &str,
        before: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<SharedStateWrite>> {
        let query = SharedStateWrites { owner: user_owner(app_name, user_id)?, before, limit: page(limit)? };
        self.shared_state_store("read a user's state writes")?.shared_state_writes(&query).await
    }

    /// A page of an app's log of `app:` state writes without a session, as
    /// [`user_state_writes`](Self::user_state_writes).
    pub async fn app_state_writes(
        &self,
        app_name: &str,
        before: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<SharedStateWrite>> {
        validate_id("app_name", app_name)?;
        let query = SharedStateWrites { owner: StateOwner::App(app_name.to_owned()), before, limit: page(limit)? };
        self.shared_state_store("read an app's state writes")?.shared_state_writes(&query).await
    }

    async fn update_shared(&self, owner: StateOwner, write: StateWrite, operation: &'static str) -> Result<()> {
        let StateWrite { mut delta, mut deleted, origin } = write;
        for key in delta.keys().chain(&deleted) {
            if key.is_empty() {
                return Err(Error::invalid("stateDelta", "a state key is empty"));
            }
            if let Some(prefix) = [APP_PREFIX, USER_PREFIX, TEMP_PREFIX].into_iter().find(|p| key.starts_with(p)) {
                return Err(Error::invalid(
                    "stateDelta",
                    format!("key {key:?}: give keys without their scope prefix ({prefix:?}); the route sets the scope"),
                ));
            }
        }
        deleted.sort_unstable();
        deleted.dedup();
        for key in &deleted {
            delta.insert(key.clone(), Value::Null);
        }
        let store = self.shared_state_store(operation)?;
        if delta.is_empty() {
            return Ok(());
        }
        let update = SharedStateUpdate {
            owner,
            delta,
            deleted,
            now_micros: self.now_micros(),
            origin: origin.chars().take(MAX_ORIGIN_CHARS).collect(),
            write_id: uuid::Uuid::new_v4().to_string(),
        };
        store.update_shared_state(&update).await
    }

    fn shared_state_store(&self, operation: &'static str) -> Result<&dyn SharedStateStore> {
        self.capabilities().shared_state.ok_or(Error::Unsupported { operation, capability: "shared_state" })
    }
}

fn user_owner(app_name: &str, user_id: &str) -> Result<StateOwner> {
    validate_id("app_name", app_name)?;
    validate_id("user_id", user_id)?;
    Ok(StateOwner::User { app: app_name.to_owned(), user: user_id.to_owned() })
}

fn page(limit: usize) -> Result<usize> {
    if limit == 0 || limit > MAX_WRITES_PAGE {
        return Err(Error::invalid("limit", format!("a page holds 1 to {MAX_WRITES_PAGE} writes")));
    }
    Ok(limit)
}
