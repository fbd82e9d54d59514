//! Re-encryption: everything written with an older key (or before encryption) sealed again with
//! the ring's first key, in place, beside live traffic.

use serde_json::Value;

use super::{EncryptedStore, KeyRing, PREFIX, SEALED, sealed_without_facts};
use crate::error::{Error, Result};
use crate::key::SessionKey;
use crate::store::{
    AdminStore, EventCursor, EventQuery, EventSelect, HistorySnapshot, HistoryStore, ListCursor, ListQuery,
    MemoryStore, SessionStore, StateOwner, ValueSwap,
};

/// What [`EncryptedStore::rekey`] re-encrypted (values and events written with an older key, or
/// before encryption was turned on), and how far it got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rekeyed {
    /// Apps visited.
    pub apps: usize,
    /// Sessions visited.
    pub sessions: usize,
    /// State values re-encrypted (app, user and session state).
    pub values: usize,
    /// Events re-encrypted (or sealed again to carry the facts the compacted view reads, when an
    /// older release sealed them).
    pub events: usize,
    /// History snapshots re-encrypted.
    pub snapshots: usize,
    /// Memories re-encrypted (and re-indexed).
    pub memories: usize,
}

/// Sessions listed per page.
const PAGE: usize = 100;
/// Events read per page.
const EVENT_PAGE: usize = 256;
/// Expiry is not judged: expired sessions still hold data sealed with the old keys.
const EVERY_SESSION: i64 = i64::MIN;

impl KeyRing {
    /// Whether a stored value needs re-encryption: plaintext, or sealed with another key.
    pub(super) fn is_stale(&self, stored: &str) -> bool {
        let primary = self.ids()[0];
        match stored.strip_prefix(PREFIX).and_then(|rest| rest.split_once('$')) {
            Some((id, _)) => id != primary,
            None => true,
        }
    }
}

impl<S: SessionStore> EncryptedStore<S> {
    /// Re-encrypts with the ring's first key everything written with another one (or before
    /// encryption was turned on): every app's, user's and session's state values, every event,
    /// every history snapshot, every memory (re-indexed under the new key's terms). Runs beside
    /// normal traffic: a value is replaced only if it is
    /// still the one read (a concurrent write wins), events never change once written. Calls
    /// `progress` after each session. Run it again after an interruption; once it finished, the
    /// old keys can be dropped from the ring. Needs a store with the admin capability.
    pub async fn rekey(&self, mut progress: impl FnMut(&Rekeyed)) -> Result<Rekeyed> {
        let admin = self
            .inner()
            .capabilities()
            .admin
            .ok_or(Error::Unsupported { operation: "re-encrypt its data", capability: "admin" })?;
        let mut done = Rekeyed::default();
        for app in admin.apps().await? {
            self.rekey_owner(admin, &StateOwner::App(app.clone()), &mut done).await?;
            for user in admin.users(&app).await? {
                self.rekey_owner(admin, &StateOwner::User { app: app.clone(), user }, &mut done).await?;
            }
            let mut query = ListQuery { limit: Some(PAGE), ..ListQuery::all(app.clone(), None, EVERY_SESSION) };
            loop {
                let page = self.inner().list(&query).await?;
                for session in &page {
                    let key = session.key().clone();
                    self.rekey_owner(admin, &StateOwner::Session(key.clone()), &mut done).await?;
                    self.rekey_events(admin, &key, &mut done).await?;
                    self.rekey_snapshots(&key, &mut done).await?;
                    done.sessions += 1;
                    progress(&done);
                }
                match page.last() {
                    Some(last) if page.len() == PAGE => query.after = Some(ListCursor::of(last, query.order)),
                    _ => break,
                }
            }
            done.apps += 1;
            progress(&done);
        }
        // Every event seen: each sealed one now carries its facts.
        self.views_complete(admin).await?;
        if self.inner().capabilities().memory.is_some() {
            let mut after: Option<crate::memory::MemoryOwner> = None;
            loop {
                let owners = MemoryStore::memory_owners(self, after.as_ref(), PAGE).await?;
                for owner in &owners {
                    done.memories += self.rekey_memories_of(owner).await?;
                    progress(&done);
                }
                match owners.last() {
                    Some(last) if owners.len() == PAGE => after = Some(last.clone()),
                    _ => break,
                }
            }
        }
        Ok(done)
    }

    async fn rekey_owner(&self, admin: &dyn AdminStore, owner: &StateOwner, done: &mut Rekeyed) -> Result<()> {
        let keys = self.keys();
        let mut swaps = Vec::new();
        for (k, old) in admin.stored_state(owner).await? {
            if matches!(&old, Value::String(text) if !keys.is_stale(text)) {
                continue;
            }
            let plain = keys.open_owner_value(owner, &k, old.clone())?;
            let new = keys.seal_owner_value(owner, &k, &plain);
            swaps.push(ValueSwap { key: k, old, new });
        }
        if !swaps.is_empty() {
            done.values += admin.swap_values(owner, &swaps).await?;
        }
        Ok(())
    }

    async fn rekey_events(&self, admin: &dyn AdminStore, key: &SessionKey, done: &mut Rekeyed) -> Result<()> {
        let keys = self.keys();
        let mut after = None;
        loop {
            let select = EventSelect::Page { after: after.clone(), since_micros: None, limit: EVENT_PAGE };
            let query = EventQuery { key: key.clone(), select, now_micros: EVERY_SESSION };
            let Some(page) = self.inner().events(&query).await? else { return Ok(()) };
            let full = page.len() == EVENT_PAGE;
            for stored in page {
                after = Some(EventCursor::of(&stored));
                // Sealed with another key, not sealed, or sealed without the facts the
                // compacted view reads (by an older release).
                let stale = match stored.extra.get(SEALED) {
                    Some(Value::String(sealed)) => keys.is_stale(sealed) || sealed_without_facts(&stored),
                    _ => true,
                };
                if stale {
                    let plain = keys.open_event(key, stored)?;
                    if admin.rewrite_event(key, &keys.seal_event(key, &plain)?).await? {
                        done.events += 1;
                    }
                }
            }
            if !full {
                return Ok(());
            }
        }
    }

    async fn rekey_snapshots(&self, key: &SessionKey, done: &mut Rekeyed) -> Result<()> {
        let Some(history) = self.inner().capabilities().history else { return Ok(()) };
        let keys = self.keys();
        let mut at_or_before = i64::MAX;
        while let Some(snapshot) = history.snapshot(key, at_or_before).await? {
            let stale = snapshot.state.values().any(|v| !matches!(v, Value::String(t) if !keys.is_stale(t)));
            if stale {
                let plain = HistorySnapshot { at: snapshot.at.clone(), state: keys.open_flat(key, snapshot.state)? };
                HistoryStore::put_snapshots(self, key, std::slice::from_ref(&plain)).await?;
                done.snapshots += 1;
            }
            if snapshot.at == EventCursor::CREATION {
                return Ok(());
            }
            at_or_before = snapshot.at.timestamp_micros.saturating_sub(1);
        }
        Ok(())
    }
}
