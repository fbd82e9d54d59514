//! Memory Bank scopes, and the memory owners they are kept under.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::BankMemory;
use crate::error::{Error, Result};
use crate::key::validate_id;
use crate::memory::model::MemoryOwner;
use crate::store::{MemoryList, MemoryStore};

/// The most keys a scope may have.
pub const MAX_SCOPE_KEYS: usize = 10;

/// How the user of a scope's digest owner starts (no user id may start with whitespace).
const DIGEST_PREFIX: &str = " scope:";

/// A Memory Bank scope: string keys and values, matched exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope(pub(super) BTreeMap<String, String>);

impl Scope {
    /// Validates a scope: 1 to [`MAX_SCOPE_KEYS`] keys, keys and values printable, non-empty,
    /// at most 128 characters.
    pub fn new(entries: BTreeMap<String, String>) -> Result<Self> {
        if entries.is_empty() {
            return Err(Error::invalid("scope", "must have at least one key, such as user_id"));
        }
        if entries.len() > MAX_SCOPE_KEYS {
            let n = entries.len();
            return Err(Error::invalid("scope", format!("has {n} keys; at most {MAX_SCOPE_KEYS} are allowed")));
        }
        for (key, value) in &entries {
            validate_id("scope key", key)?;
            validate_id("scope value", value).map_err(|e| Error::invalid("scope", format!("{key:?}: {e}")))?;
        }
        Ok(Self(entries))
    }

    /// The scope ADK sends for an app's user: `{app_name, user_id}`.
    pub fn of_user(app: &str, user: &str) -> Self {
        Self(BTreeMap::from([("app_name".to_owned(), app.to_owned()), ("user_id".to_owned(), user.to_owned())]))
    }

    /// Its keys and values.
    pub fn entries(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// The owner its memories of `engine` are kept under (see the module).
    pub fn owner(&self, engine: &str) -> MemoryOwner {
        let app = self.0.get("app_name").map(String::as_str);
        match (self.0.len(), app, self.0.get("user_id")) {
            (2, Some(app), Some(user)) if app == engine => MemoryOwner::from_storage(engine, user),
            _ => MemoryOwner::from_storage(engine, self.digest()),
        }
    }

    fn digest(&self) -> String {
        let canonical = serde_json::to_string(&self.0).unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("{DIGEST_PREFIX}{hex}")
    }
}

/// The owner of the scope `{user_id: user}` in `app`.
pub fn user_only_owner(app: &str, user: &str) -> MemoryOwner {
    Scope(BTreeMap::from([("user_id".to_owned(), user.to_owned())])).owner(app)
}

/// The owners of `user`'s memories in `app`: the user's own, then the digest owners whose
/// scope's `user_id` is `user` (`{user_id: user}`, and any other scope naming that user): what
/// `erase-user` removes. Digest users start with a space, so they sort before every user id: the
/// walk reads the app's digest owners only, one memory of each (an owner's memories share its
/// scope).
pub(crate) async fn owners_of_user(store: &dyn MemoryStore, app: &str, user: &str) -> Result<Vec<MemoryOwner>> {
    const PAGE: usize = 100;
    let mut found = vec![MemoryOwner::new(app, user)?];
    let mut after = MemoryOwner::from_storage(app, DIGEST_PREFIX);
    loop {
        let owners = store.memory_owners(Some(&after), PAGE).await?;
        let full = owners.len() == PAGE;
        for owner in owners {
            if owner.app_name() != app || !owner.user_id().starts_with(DIGEST_PREFIX) {
                return Ok(found);
            }
            let list = MemoryList { owner: owner.clone(), after: None, limit: 1, now_micros: i64::MIN };
            let scope =
                store.list_memories(&list).await?.into_iter().next().map(|m| BankMemory::from_memory(&owner, m).scope);
            if scope.is_some_and(|s| s.0.get("user_id").is_some_and(|u| u == user)) {
                found.push(owner.clone());
            }
            after = owner;
        }
        if !full {
            return Ok(found);
        }
    }
}
