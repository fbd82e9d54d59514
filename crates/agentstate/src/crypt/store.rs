//! [`EncryptedStore`]: any store, with what users and models wrote sealed before it sees it.
//!
//! It implements what it transforms and nothing else: the core (values and events sealed on the
//! way in, opened on the way out), history (snapshot states sealed) and memory (see
//! [`super::memory`]). Lifecycle and
//! administration pass through untouched (expiry and erasure see no values; re-encryption and
//! the key check work on the values as stored). History a store answers remotely does not pass:
//! it would be computed over ciphertext, so the service replays it here instead.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use super::{
    CHECK_AAD, CryptError, KeyRing, MARKER_CIPHER, MAX_KEYS, PREFIX, VIEWS_METADATA, parse_marker, sealed_without_facts,
};
use crate::compaction::EventView;
use crate::error::{ConflictKind, Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::Session;
use crate::store::{
    Capabilities, CommitOutcome, ENCRYPTION_METADATA, EventCommit, EventCopy, EventCursor, EventForm, EventQuery,
    EventSelect, HistorySnapshot, HistoryStore, ListQuery, LoadedSession, NewSession, SessionRead, SessionStore,
    SharedStateStore, SharedStateUpdate, SharedStateWrite, SharedStateWrites, StateOwner,
};
use serde_json::{Map, Value};

/// A [`SessionStore`] that encrypts what it hands to `S` and decrypts what it reads back. See
/// the [module](super).
pub struct EncryptedStore<S> {
    inner: S,
    keys: KeyRing,
    /// Whether every sealed event in the store carries its facts ([`VIEWS_METADATA`]): the store
    /// may then answer compacted views itself.
    views: AtomicBool,
}

impl<S> fmt::Debug for EncryptedStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptedStore").field("keys", &self.keys).finish_non_exhaustive()
    }
}

/// The store's admin capability, which encryption needs to record and check its keys.
fn admin_of(store: &dyn SessionStore) -> Result<&dyn crate::store::AdminStore, CryptError> {
    store.capabilities().admin.ok_or_else(|| {
        CryptError::Store("this store keeps no metadata (no admin capability), which encryption needs".to_owned())
    })
}

impl<S: SessionStore> EncryptedStore<S> {
    /// Wraps `inner`. Checks the keys against the ones the store records (each configured key
    /// whose id it knows must be the same key; at least one must be known unless the store is
    /// new to encryption) and records the new ones.
    pub async fn open(inner: S, keys: KeyRing) -> Result<Self, CryptError> {
        if keys.keys.len() > MAX_KEYS {
            return Err(CryptError::Keys(format!("at most {MAX_KEYS} keys at once (re-encrypt, then drop old ones)")));
        }
        let admin = admin_of(&inner)?;
        let marker = admin.metadata(ENCRYPTION_METADATA).await?;
        // A store new to encryption holds no sealed event without facts, nor ever will.
        let views = match &marker {
            None => {
                admin.set_metadata(VIEWS_METADATA, "1").await?;
                true
            }
            Some(_) => admin.metadata(VIEWS_METADATA).await?.as_deref() == Some("1"),
        };
        let recorded = match &marker {
            Some(text) => parse_marker(text)
                .ok_or_else(|| CryptError::Store("the store's encryption record is unreadable".to_owned()))?,
            None => Vec::new(),
        };
        let known: Vec<(&str, &str)> = recorded
            .iter()
            .filter(|(id, _)| keys.ids().contains(&id.as_str()))
            .map(|(id, check)| (id.as_str(), check.as_str()))
            .collect();
        if !recorded.is_empty() && known.is_empty() {
            return Err(CryptError::Store(format!(
                "none of the configured keys ({}) is one this database was encrypted with ({})",
                keys.ids().join(", "),
                recorded.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        for (id, check) in &known {
            if !matches!(keys.open(CHECK_AAD, &format!("{PREFIX}{id}${check}")), Some(Ok(text)) if text.is_empty()) {
                return Err(CryptError::Store(format!(
                    "the key with id {id} is not the key this database was encrypted with under that id"
                )));
            }
        }
        // The record lists the keys configured now (the column holds 256 characters).
        let now: Vec<(String, String)> = keys
            .ids()
            .into_iter()
            .map(|id| {
                let check = match known.iter().find(|(k, _)| *k == id) {
                    Some((_, check)) => (*check).to_owned(),
                    None => {
                        let sealed = keys.subset(id).seal(CHECK_AAD, b"");
                        sealed.rsplit('$').next().unwrap_or_default().to_owned()
                    }
                };
                (id.to_owned(), check)
            })
            .collect();
        if now != recorded {
            let text = format!(
                "{MARKER_CIPHER}:{}",
                now.iter().map(|(id, check)| format!("{id}={check}")).collect::<Vec<_>>().join(",")
            );
            if text.len() > 256 {
                return Err(CryptError::Keys("the key ids are too long to record: use shorter ids".to_owned()));
            }
            admin.set_metadata(ENCRYPTION_METADATA, &text).await?;
        }
        Ok(Self { inner, keys, views: AtomicBool::new(views) })
    }

    /// Records that every sealed event now carries its facts (a re-encryption gave them to
    /// those that had none): from now on the store may answer compacted views.
    pub(super) async fn views_complete(&self, admin: &dyn crate::store::AdminStore) -> Result<()> {
        admin.set_metadata(VIEWS_METADATA, "1").await?;
        self.views.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub(super) fn keys(&self) -> &KeyRing {
        &self.keys
    }
}

#[async_trait]
impl<S: SessionStore> SessionStore for EncryptedStore<S> {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let key = new.key.clone();
        let sealed = NewSession {
            state: self.keys.seal_scoped(&key, &new.state),
            history_start: new.history_start.as_ref().map(|start| self.keys.seal_flat(&key, start)),
            ..new
        };
        self.keys.open_session(&self.inner.create(sealed).await?)
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        // Stored text is ciphertext: always read decoded, and open. A view from the facts sealed
        // events carry, when every one carries them; else every event, for the service to narrow.
        let view = if self.views.load(Ordering::Relaxed) { read.view } else { EventView::Whole };
        let decoded = SessionRead { form: EventForm::Decoded, view, ..*read };
        let Some(loaded) = self.inner.get(key, &decoded).await? else { return Ok(None) };
        // A sealed event without facts after all (written by an older release beside this one)
        // makes the store's view every event: the service narrows it.
        let view = match loaded.view {
            EventView::Compacted { .. } if loaded.session.events().iter().any(sealed_without_facts) => EventView::Whole,
            view => view,
        };
        Ok(Some(LoadedSession { view, ..LoadedSession::decoded(self.keys.open_session(&loaded.session)?) }))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        // Sealed values cannot be compared where they are kept: the service checks the filter's
        // values on the opened sessions, and the store applies only its times.
        let query = ListQuery { filter: query.filter.times_only(), ..query.clone() };
        self.inner.list(&query).await?.iter().map(|s| self.keys.open_session(s)).collect()
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        self.inner.count_sessions(query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.inner.delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let (key, now_micros) = (commit.key.clone(), commit.now_micros);
        let plain = Arc::clone(&commit.event);
        let sealed = EventCommit {
            event: Arc::new(self.keys.seal_event(&key, &plain)?),
            delta: self.keys.seal_scoped(&key, &commit.delta),
            ..commit
        };
        match self.inner.commit(sealed).await {
            Ok(CommitOutcome::Committed) => Ok(CommitOutcome::Committed),
            // Two sealings of one event differ (fresh nonces): compare the plaintexts instead.
            Ok(CommitOutcome::Duplicate(_)) | Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { .. } }) => {
                let query = EventQuery { key: key.clone(), select: EventSelect::Id(plain.id.clone()), now_micros };
                let stored = self.inner.events(&query).await?.and_then(|mut found| found.pop());
                match stored.map(|e| self.keys.open_event(&key, e)).transpose()? {
                    Some(stored) => CommitOutcome::of_stored(stored, &plain),
                    None => {
                        Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: plain.id.clone() } })
                    }
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let Some(events) = self.inner.events(query).await? else { return Ok(None) };
        events.into_iter().map(|e| self.keys.open_event(&query.key, e)).collect::<Result<Vec<_>>>().map(Some)
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        self.inner.count_events(key, now_micros).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        self.inner.users_with_session(app, session_id, now_micros).await
    }

    fn system(&self) -> &'static str {
        self.inner.system()
    }

    fn capabilities(&self) -> Capabilities<'_> {
        let inner = self.inner.capabilities();
        let mut capabilities = Capabilities::none();
        if inner.history.is_some() {
            capabilities = capabilities.with_history(self);
        }
        if let Some(lifecycle) = inner.lifecycle {
            capabilities = capabilities.with_lifecycle(lifecycle);
        }
        if let Some(admin) = inner.admin {
            capabilities = capabilities.with_admin(admin);
        }
        if inner.shared_state.is_some() {
            capabilities = capabilities.with_shared_state(self);
        }
        if inner.memory.is_some() {
            capabilities = capabilities.with_memory(self);
        }
        if inner.artifacts.is_some() {
            capabilities = capabilities.with_artifacts(self);
        }
        // A lease holds ids and times only: nothing to seal.
        if let Some(leases) = inner.leases {
            capabilities = capabilities.with_leases(leases);
        }
        capabilities
    }
}

/// Shared state read from the inner store's values as stored, each opened where it is bound.
#[async_trait]
impl<S: SessionStore> SharedStateStore for EncryptedStore<S> {
    async fn shared_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let Some(shared) = self.inner.capabilities().shared_state else {
            return Err(Error::Unsupported { operation: "read shared state", capability: "shared_state" });
        };
        let keys = self.keys();
        shared
            .shared_state(owner)
            .await?
            .into_iter()
            .map(|(k, sealed)| Ok((k.clone(), keys.open_owner_value(owner, &k, sealed)?)))
            .collect()
    }

    async fn update_shared_state(&self, update: &SharedStateUpdate) -> Result<()> {
        let Some(shared) = self.inner.capabilities().shared_state else {
            return Err(Error::Unsupported { operation: "write shared state", capability: "shared_state" });
        };
        let keys = self.keys();
        let delta = update.delta.iter().map(|(k, v)| (k.clone(), keys.seal_owner_value(&update.owner, k, v))).collect();
        shared.update_shared_state(&SharedStateUpdate { delta, ..update.clone() }).await
    }

    /// The log holds keys and origins, no values: nothing to open.
    async fn shared_state_writes(&self, query: &SharedStateWrites) -> Result<Vec<SharedStateWrite>> {
        let Some(shared) = self.inner.capabilities().shared_state else {
            return Err(Error::Unsupported { operation: "read shared state writes", capability: "shared_state" });
        };
        shared.shared_state_writes(query).await
    }
}

impl<S: SessionStore> EncryptedStore<S> {
    /// The inner store's history: present whenever this store offers history.
    fn inner_history(&self) -> Result<&dyn HistoryStore> {
        self.inner.capabilities().history.ok_or(Error::Unsupported { operation: "keep history", capability: "history" })
    }
}

#[async_trait]
impl<S: SessionStore> HistoryStore for EncryptedStore<S> {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let Some(snapshot) = self.inner_history()?.snapshot(key, at_or_before_micros).await? else { return Ok(None) };
        Ok(Some(HistorySnapshot { at: snapshot.at, state: self.keys.open_flat(key, snapshot.state)? }))
    }

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let sealed: Vec<HistorySnapshot> = snapshots
            .iter()
            .map(|s| HistorySnapshot { at: s.at.clone(), state: self.keys.seal_flat(key, &s.state) })
            .collect();
        self.inner_history()?.put_snapshots(key, &sealed).await
    }

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        // An event's ciphertexts are bound to its app, user and id, which a copy keeps.
        self.inner_history()?.copy_events(copy).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let sealed = HistorySnapshot { at: boundary.at.clone(), state: self.keys.seal_flat(key, &boundary.state) };
        self.inner_history()?.drop_events_before(key, cut_micros, &sealed).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::{refuse_if_encrypted, tests::K1};
    use super::*;
    use crate::{CreateSession, GetSessionConfig, InMemoryStore, SessionService};

    /// One in-memory store reachable from several wrappers (and directly).
    fn shared() -> Arc<dyn SessionStore> {
        Arc::new(InMemoryStore::new())
    }

    async fn wrapped(store: &Arc<dyn SessionStore>, keys: &str) -> Result<SessionService, CryptError> {
        Ok(SessionService::new(EncryptedStore::open(Arc::clone(store), KeyRing::parse(keys)?).await?))
    }

    #[tokio::test]
    async fn storage_holds_ciphertext_and_names_what_cannot_be_read() {
        let store = shared();
        let plain = SessionService::shared(Arc::clone(&store));
        let service = wrapped(&store, K1).await.unwrap();
        let request =
            CreateSession::new("app", "alice").id("s").state("secret", json!("plain words")).state("user:u", json!(1));
        let mut session = service.create_session(request).await.unwrap();
        let event = Event::new("inv")
            .author("agent")
            .content(crate::Content::text("model", "hidden reply"))
            .delta("app:a", json!([1, 2]));
        service.append_event(&mut session, event).await.unwrap();

        // What the store holds: ciphertext for values and contents; keys, ids, times, authors plain.
        let raw = plain.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        let text = serde_json::to_string(&crate::wire::session_to_wire(&raw)).unwrap();
        for secret in ["plain words", "hidden reply", "[1,2]"] {
            assert!(!text.contains(secret), "{secret} is in storage: {text}");
        }
        assert!(raw.state().get("secret").unwrap().as_str().unwrap().starts_with("$as1$k1$"));
        assert_eq!(raw.events().first().unwrap().author, "agent");
        let read = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(read.state().get("secret"), Some(&json!("plain words")));
        assert_eq!(read.state().get("app:a"), Some(&json!([1, 2])));
        let reply = read.events().first().unwrap().content.as_ref().unwrap();
        assert_eq!(serde_json::to_value(reply).unwrap()["parts"][0]["text"], "hidden reply");

        // A ciphertext moved to another session does not open there: an error naming it.
        let moved = raw.state().get("secret").unwrap().clone();
        plain.create_session(CreateSession::new("app", "alice").id("t").state("secret", moved)).await.unwrap();
        let error = service
            .get_session(&SessionKey::new("app", "alice", "t").unwrap(), GetSessionConfig::default())
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("app/alice/t") || message.contains("alice"), "{message}");
        assert!(message.contains("cannot be decrypted") && message.contains("\"secret\""), "{message}");
        // A tampered one neither, never garbage, never a panic.
        let mut tampered = raw.state().get("secret").unwrap().as_str().unwrap().to_owned();
        tampered.replace_range(tampered.len() - 4.., "AAAA");
        let mut handle = plain.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        plain.append_event(&mut handle, Event::new("x").delta("secret", Value::String(tampered))).await.unwrap();
        let error = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap_err().to_string();
        assert!(error.contains("cannot be decrypted"), "{error}");
    }

    #[tokio::test]
    async fn keys_rotate_and_wrong_keys_are_refused_at_open() {
        let store = shared();
        let plain = SessionService::shared(Arc::clone(&store));
        let old = wrapped(&store, K1).await.unwrap();
        let s = old.create_session(CreateSession::new("app", "u").id("s").state("k", json!("v1"))).await.unwrap();
        // Rotation: the new key writes, the old one still reads.
        let k2 = KeyRing::generate("k2").unwrap();
        let rotated = wrapped(&store, &format!("{k2},{K1}")).await.unwrap();
        let s2 = rotated.create_session(CreateSession::new("app", "u").id("s2").state("k", json!("v2"))).await.unwrap();
        assert_eq!(
            rotated.get_session(s.key(), GetSessionConfig::default()).await.unwrap().unwrap().state().get("k"),
            Some(&json!("v1"))
        );
        let raw = plain.get_session(s2.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert!(raw.state().get("k").unwrap().as_str().unwrap().starts_with("$as1$k2$"));
        // Only the old key: what the new one wrote cannot be read, and says which key it needs.
        let error = old.get_session(s2.key(), GetSessionConfig::default()).await.unwrap_err().to_string();
        assert!(error.contains("key k2, which is not configured"), "{error}");

        // Another key under a known id, or only unknown keys: refused at open, clearly.
        let wrong = KeyRing::generate("k1").unwrap();
        let error = wrapped(&store, &wrong).await.unwrap_err().to_string();
        assert!(error.contains("key with id k1 is not the key"), "{error}");
        let error = wrapped(&store, &KeyRing::generate("k9").unwrap()).await.unwrap_err().to_string();
        assert!(error.contains("none of the configured keys (k9)"), "{error}");
        // Without keys at all: refused, not shown as ciphertext.
        let error = refuse_if_encrypted(store.as_ref()).await.unwrap_err().to_string();
        assert!(error.contains("this database is encrypted"), "{error}");
        assert!(refuse_if_encrypted(&InMemoryStore::new()).await.is_ok());
    }

    /// Sealed events carry the facts the compacted view reads, call ids as digests; a store new
    /// to encryption answers views itself. One whose sealed events an older release wrote (no
    /// facts) reads every event for the service to narrow, until a re-encryption gives them facts.
    #[tokio::test]
    async fn sealed_events_carry_the_facts_views_read() {
        use crate::compaction::{COMPACTION_KEY, FACTS_KEY};
        use crate::store::EventWindow;

        let store = shared();
        let service = wrapped(&store, K1).await.unwrap();
        let mut session = service.create_session(CreateSession::new("app", "alice").id("s")).await.unwrap();
        let call = json!({"function_call": {"id": "secret-call", "name": "lookup", "args": {}}});
        let answer = json!({"function_response": {"id": "secret-call", "name": "lookup", "response": {}}});
        for (n, part) in [json!({"text": "before"}), call, answer].into_iter().enumerate() {
            let mut event = Event::new(format!("i{n}")).author("agent");
            event.content = Some(serde_json::from_value(json!({"role": "model", "parts": [part]})).unwrap());
            service.append_event(&mut session, event).await.unwrap();
        }
        let times: Vec<f64> = session.events().iter().map(|e| e.timestamp).collect();
        let mut summary = Event::new("summary").author("user");
        summary.actions.extra.insert(
            COMPACTION_KEY.into(),
            json!({"start_timestamp": times[0], "end_timestamp": times[1], "compacted_content": {"parts": [{"text": "s"}]}}),
        );
        service.append_event(&mut session, summary).await.unwrap();

        let raw = store.get(session.key(), &SessionRead::decoded(EventWindow::ALL, i64::MIN)).await.unwrap().unwrap();
        let carried = raw.session.events()[1].extra[FACTS_KEY].as_str().unwrap().to_owned();
        assert!(carried.contains("\"fc\"") && !carried.contains("secret-call"), "{carried}");
        let expected = |svc: &SessionService| {
            let (svc, key) = (svc.clone(), session.key().clone());
            async move {
                let view = svc.get_session(&key, GetSessionConfig::compacted(0)).await.unwrap().unwrap();
                view.events().iter().map(|e| e.invocation_id.clone()).collect::<Vec<_>>()
            }
        };
        let answered = |svc: &SessionService| {
            let (svc, key) = (svc.clone(), session.key().clone());
            async move {
                let read = SessionRead {
                    view: EventView::Compacted { overlap: 0 },
                    ..SessionRead::decoded(EventWindow::ALL, 0)
                };
                svc.store().get(&key, &read).await.unwrap().unwrap().view != EventView::Whole
            }
        };
        // i0 is summarised; i1's call too, but its response (i2) is shown: the call comes back,
        // matched by its digest.
        assert_eq!(expected(&service).await, ["i1", "i2", "summary"]);
        assert!(answered(&service).await, "a store new to encryption answers views");

        // As an older release left it: no record of facts, sealed events without them.
        let admin = store.capabilities().admin.unwrap();
        admin.set_metadata(super::super::VIEWS_METADATA, "").await.unwrap();
        for event in raw.session.events() {
            let mut legacy = Event::clone(event);
            legacy.extra.remove(FACTS_KEY);
            assert!(admin.rewrite_event(session.key(), &legacy).await.unwrap());
        }
        let service = wrapped(&store, K1).await.unwrap();
        assert!(!answered(&service).await, "every event read, for the service to narrow");
        assert_eq!(expected(&service).await, ["i1", "i2", "summary"]);
        // Even when the record says otherwise, an event without facts makes the view the service's.
        admin.set_metadata(super::super::VIEWS_METADATA, "1").await.unwrap();
        let trusting = wrapped(&store, K1).await.unwrap();
        assert!(!answered(&trusting).await);
        assert_eq!(expected(&trusting).await, ["i1", "i2", "summary"]);

        admin.set_metadata(super::super::VIEWS_METADATA, "").await.unwrap();
        let encrypted = EncryptedStore::open(Arc::clone(&store), KeyRing::parse(K1).unwrap()).await.unwrap();
        let rekeyed = encrypted.rekey(|_| {}).await.unwrap();
        assert_eq!(rekeyed.events, 4, "each sealed again with its facts");
        let service = SessionService::new(encrypted);
        assert!(answered(&service).await, "views answered again after the re-encryption");
        assert_eq!(expected(&service).await, ["i1", "i2", "summary"]);
    }

    #[tokio::test]
    async fn capabilities_pass_through_as_declared() {
        let store = EncryptedStore::open(InMemoryStore::new(), KeyRing::parse(K1).unwrap()).await.unwrap();
        let names = store.capabilities().names();
        assert_eq!(
            names,
            ["history", "lifecycle", "admin", "shared_state", "memory", "leases", "artifacts"],
            "what the in-memory store has, history, shared state, memory and artifacts transformed, leases passed through"
        );
        let error = EncryptedStore::open(CoreOnly, KeyRing::parse(K1).unwrap()).await.unwrap_err().to_string();
        assert!(error.contains("no admin capability"), "{error}");
    }

    /// A store with the core alone (whose calls are never reached here).
    struct CoreOnly;

    #[async_trait]
    impl SessionStore for CoreOnly {
        async fn create(&self, _: NewSession) -> Result<Session> {
            Err(Error::invalid("test", "unused"))
        }
        async fn get(&self, _: &SessionKey, _: &SessionRead) -> Result<Option<LoadedSession>> {
            Ok(None)
        }
        async fn list(&self, _: &ListQuery) -> Result<Vec<Session>> {
            Ok(Vec::new())
        }
        async fn delete(&self, _: &SessionKey) -> Result<()> {
            Ok(())
        }
        async fn commit(&self, _: EventCommit) -> Result<CommitOutcome> {
            Err(Error::invalid("test", "unused"))
        }
        async fn events(&self, _: &EventQuery) -> Result<Option<Vec<Event>>> {
            Ok(None)
        }
        async fn count_events(&self, _: &SessionKey, _: i64) -> Result<Option<usize>> {
            Ok(None)
        }
        async fn users_with_session(&self, _: &str, _: &str, _: i64) -> Result<Vec<String>> {
            Ok(Vec::new())
        }
    }
}
