//! Encryption at rest: [`EncryptedStore`] wraps any [`SessionStore`] and encrypts what users and
//! models wrote (state values, event contents) with AES-256-GCM before the store sees it.
//!
//! What stays plaintext, so scoping, per-key merges and queries keep working: ids (app, user,
//! session, event, invocation), state keys, timestamps, an event's author, the keys it deletes and
//! the invocation a rewind event names. Everything else of an event (content, errors, artifact
//! deltas, transfers, unknown fields) is sealed in one ciphertext; each state value (in the state,
//! in an event's delta, in a history snapshot) is its own ciphertext, so the store still merges
//! `user:`/`app:` keys one by one and concurrent writers lose nothing.
//!
//! Each ciphertext names the key that sealed it (`$as1$<key id>$<base64 nonce‖ciphertext‖tag>`)
//! and is bound (as associated data) to where it belongs: a value to its scope, owner and key, an
//! event's parts to the app, user and event id, so a ciphertext moved elsewhere does not open. New
//! writes use the key ring's first key; reads accept any key of the ring, so keys rotate without
//! downtime: put the new key first and keep the old ones until everything is re-encrypted.
//!
//! The store records that it is encrypted, with a check value per key id, so a wrong key, or
//! opening it without keys, is refused at start with a message that says so (see
//! [`refuse_if_encrypted`]); a value that does not open is an error naming the session, never
//! garbage. Values written before encryption was turned on are read as they are.
//!
//! ```
//! use agentstate::crypt::{EncryptedStore, KeyRing};
//! use agentstate::{CreateSession, GetSessionConfig, InMemorySessionService, SessionService};
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = KeyRing::parse("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")?;
//! let service = EncryptedStore::open(InMemorySessionService::new(), keys).await?;
//! let session = service.create_session(CreateSession::new("app", "alice").state("k", json!(1))).await?;
//! let loaded = service.get_session(session.key(), GetSessionConfig::default()).await?.unwrap();
//! assert_eq!(loaded.state().get("k"), Some(&json!(1)));
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

use crate::error::{ConflictKind, Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::scope::{APP_PREFIX, Scope, ScopedState, USER_PREFIX};
use crate::session::Session;
use crate::store::{
    CommitOutcome, ENCRYPTION_METADATA, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListQuery,
    NewSession, SessionStore, StateOwner, UserData, ValueSwap,
};

/// The envelope's prefix: format 1.
const PREFIX: &str = "$as1$";
/// The field of a stored event that holds its sealed parts.
const SEALED: &str = "agentstate_sealed";
/// The associated data of each key's check value (which seals nothing).
const CHECK_AAD: &[u8] = b"agentstate encryption key check";
/// The cipher, as the store's record names it.
const MARKER_CIPHER: &str = "aes-256-gcm";
/// Keys at once: the record of their check values must fit 256 characters.
const MAX_KEYS: usize = 4;
const NONCE_BYTES: usize = 12;

/// Why keys could not be read, or a store could not be opened with them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CryptError {
    /// The key list is malformed (the message never contains key material).
    #[error("encryption keys: {0}")]
    Keys(String),
    /// The keys do not fit the store.
    #[error("{0}")]
    Store(String),
    /// The store failed.
    #[error(transparent)]
    Backend(#[from] Error),
}

/// The encryption keys: each with an id, the first used for new writes, all accepted for reads.
/// `Debug` shows the ids only.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<[(String, Aes256Gcm)]>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing").field("ids", &self.ids()).finish_non_exhaustive()
    }
}

/// A value that does not open.
#[derive(Debug)]
enum Unsealed {
    UnknownKey(String),
    Tampered(String),
    Malformed,
}

impl KeyRing {
    /// Parses `id:base64-key` entries, separated by commas or new lines (blank lines and lines
    /// starting with `#` are skipped); each key is 32 bytes (AES-256), ids are 1–32 letters,
    /// digits, `-` or `_`. The first entry encrypts new writes.
    pub fn parse(text: &str) -> Result<Self, CryptError> {
        let mut keys: Vec<(String, Aes256Gcm)> = Vec::new();
        let entries = text.split([',', '\n']).map(str::trim).filter(|e| !e.is_empty() && !e.starts_with('#'));
        for (n, entry) in entries.enumerate() {
            let bad = |what: &str| CryptError::Keys(format!("entry {}: {what}", n + 1));
            let (id, encoded) = entry.split_once(':').ok_or_else(|| bad("expected id:base64-key"))?;
            let valid_id = !id.is_empty()
                && id.len() <= 32
                && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid_id {
                return Err(bad("the id must be 1–32 letters, digits, - or _"));
            }
            let bytes = BASE64.decode(encoded.trim()).map_err(|_| bad("the key is not base64"))?;
            if bytes.len() != 32 {
                return Err(bad(&format!("the key is {} bytes; AES-256 needs 32", bytes.len())));
            }
            if keys.iter().any(|(k, _)| k == id) {
                return Err(bad(&format!("the id {id} is given twice")));
            }
            let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| bad("the key is not 32 bytes"))?;
            keys.push((id.to_owned(), cipher));
        }
        if keys.is_empty() {
            return Err(CryptError::Keys("no key given".to_owned()));
        }
        Ok(Self { keys: keys.into() })
    }

    /// A new random key as `id:base64`, for a key file; the id is checked as [`parse`](Self::parse)
    /// checks it.
    pub fn generate(id: &str) -> Result<String, CryptError> {
        let key = Aes256Gcm::generate_key(OsRng);
        let entry = format!("{id}:{}", BASE64.encode(key));
        Self::parse(&entry)?;
        Ok(entry)
    }

    /// The key ids, the writing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn seal(&self, aad: &[u8], plaintext: &[u8]) -> String {
        let (id, cipher) = &self.keys[0];
        let nonce = Aes256Gcm::generate_nonce(OsRng);
        // Encrypting into a Vec cannot fail for these sizes; an empty ciphertext would not open.
        let sealed = cipher.encrypt(&nonce, Payload { msg: plaintext, aad }).unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_BYTES + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{id}${}", BASE64.encode(bytes))
    }

    /// `None` when `text` is not an envelope (written before encryption was on).
    fn open(&self, aad: &[u8], text: &str) -> Option<Result<Vec<u8>, Unsealed>> {
        let rest = text.strip_prefix(PREFIX)?;
        Some((|| {
            let (id, encoded) = rest.split_once('$').ok_or(Unsealed::Malformed)?;
            let (_, cipher) =
                self.keys.iter().find(|(k, _)| k == id).ok_or_else(|| Unsealed::UnknownKey(id.to_owned()))?;
            let bytes = BASE64.decode(encoded).map_err(|_| Unsealed::Malformed)?;
            if bytes.len() < NONCE_BYTES + 16 {
                return Err(Unsealed::Malformed);
            }
            let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
            let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| Unsealed::Malformed)?;
            cipher
                .decrypt(&Nonce::from(nonce), Payload { msg: sealed, aad })
                .map_err(|_| Unsealed::Tampered(id.to_owned()))
        })())
    }
}

/// Refuses a store that was encrypted, for a program that has no keys for it: a clear error
/// instead of ciphertext shown as values. The `agentstate` binary calls it when it opens a
/// database without keys.
pub async fn refuse_if_encrypted(store: &dyn SessionStore) -> Result<(), CryptError> {
    match store.metadata(ENCRYPTION_METADATA).await? {
        Some(marker) => Err(CryptError::Store(format!(
            "this database is encrypted (agentstate encryption at rest, key ids: {}); give its keys \
             (--encryption-keys-file or AGENTSTATE_ENCRYPTION_KEYS)",
            marker_ids(&marker).join(", ")
        ))),
        None => Ok(()),
    }
}

fn marker_ids(marker: &str) -> Vec<String> {
    parse_marker(marker).unwrap_or_default().into_iter().map(|(id, _)| id).collect()
}

/// The record `aes-256-gcm:<id>=<check>,…`: each key id with its check value (the base64 of a
/// nonce and the tag of an empty plaintext).
fn parse_marker(text: &str) -> Option<Vec<(String, String)>> {
    let entries = text.strip_prefix(MARKER_CIPHER)?.strip_prefix(':')?;
    entries
        .split(',')
        .filter(|e| !e.is_empty())
        .map(|e| e.split_once('=').map(|(id, check)| (id.to_owned(), check.to_owned())))
        .collect()
}

/// A [`SessionStore`] that encrypts what it hands to `S` and decrypts what it reads back. See
/// the [module](self).
pub struct EncryptedStore<S> {
    inner: S,
    keys: KeyRing,
}

impl<S> fmt::Debug for EncryptedStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptedStore").field("keys", &self.keys).finish_non_exhaustive()
    }
}

impl<S: SessionStore> EncryptedStore<S> {
    /// Wraps `inner`. Checks the keys against the ones the store records (each configured key
    /// whose id it knows must be the same key; at least one must be known unless the store is
    /// new to encryption) and records the new ones.
    pub async fn open(inner: S, keys: KeyRing) -> Result<Self, CryptError> {
        if keys.keys.len() > MAX_KEYS {
            return Err(CryptError::Keys(format!("at most {MAX_KEYS} keys at once (re-encrypt, then drop old ones)")));
        }
        let marker = inner.metadata(ENCRYPTION_METADATA).await?;
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
            inner.set_metadata(ENCRYPTION_METADATA, &text).await?;
        }
        Ok(Self { inner, keys })
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Re-encrypts with the ring's first key everything written with another one (or before
    /// encryption was turned on): every app's, user's and session's state values, every event,
    /// every history snapshot. Runs beside normal traffic: a value is replaced only if it is
    /// still the one read (a concurrent write wins), events never change once written. Calls
    /// `progress` after each session. Run it again after an interruption; once it finished, the
    /// old keys can be dropped from the ring.
    pub async fn rekey(&self, mut progress: impl FnMut(&Rekeyed)) -> Result<Rekeyed> {
        let mut done = Rekeyed::default();
        for app in self.inner.apps().await? {
            self.rekey_owner(&StateOwner::App(app.clone()), &mut done).await?;
            for user in self.inner.users(&app).await? {
                self.rekey_owner(&StateOwner::User { app: app.clone(), user }, &mut done).await?;
            }
            const PAGE: usize = 100;
            let mut query = ListQuery { app_name: app.clone(), user_id: None, after: None, limit: Some(PAGE) };
            loop {
                let page = self.inner.list(&query).await?;
                for session in &page {
                    let key = session.key().clone();
                    self.rekey_owner(&StateOwner::Session(key.clone()), &mut done).await?;
                    self.rekey_events(&key, &mut done).await?;
                    self.rekey_snapshots(&key, &mut done).await?;
                    done.sessions += 1;
                    progress(&done);
                }
                match page.last() {
                    Some(last) if page.len() == PAGE => {
                        query.after = Some(crate::store::ListCursor {
                            last_update_micros: last.last_update_micros(),
                            user_id: last.user_id().to_owned(),
                            session_id: last.id().to_owned(),
                        });
                    }
                    _ => break,
                }
            }
            done.apps += 1;
            progress(&done);
        }
        Ok(done)
    }

    /// Whether a stored value needs re-encryption: plaintext, or sealed with another key.
    fn stale(&self, stored: &str) -> bool {
        let primary = self.keys.ids()[0];
        match stored.strip_prefix(PREFIX).and_then(|rest| rest.split_once('$')) {
            Some((id, _)) => id != primary,
            None => true,
        }
    }

    async fn rekey_owner(&self, owner: &StateOwner, done: &mut Rekeyed) -> Result<()> {
        let (app, user, session, prefix) = match owner {
            StateOwner::App(app) => (app.as_str(), "", "", APP_PREFIX),
            StateOwner::User { app, user } => (app.as_str(), user.as_str(), "", USER_PREFIX),
            StateOwner::Session(key) => (key.app_name(), key.user_id(), key.session_id(), ""),
        };
        let mut swaps = Vec::new();
        for (k, old) in self.inner.stored_state(owner).await? {
            let stale = match &old {
                Value::String(text) => self.stale(text),
                _ => true,
            };
            if !stale {
                continue;
            }
            let flat = format!("{prefix}{k}");
            let aad = scope_aad(app, user, session, &flat);
            let what = || format!("app {app}: state key {flat:?}");
            let plain = self.open_value(&aad, old.clone(), &what)?;
            swaps.push(ValueSwap { key: k, old, new: self.seal_value(&aad, &plain) });
        }
        if !swaps.is_empty() {
            done.values += self.inner.swap_values(owner, &swaps).await?;
        }
        Ok(())
    }

    async fn rekey_events(&self, key: &SessionKey, done: &mut Rekeyed) -> Result<()> {
        let mut query = EventQuery { key: key.clone(), after: None, since_micros: None, limit: 256 };
        loop {
            let Some(page) = self.inner.events(&query).await? else { return Ok(()) };
            let full = page.len() == query.limit;
            for stored in page {
                query.after = Some(EventCursor::of(&stored));
                let stale = match stored.extra.get(SEALED) {
                    Some(Value::String(sealed)) => self.stale(sealed),
                    _ => true,
                };
                if stale {
                    let plain = self.open_event(key, stored)?;
                    if self.inner.rewrite_event(key, &self.seal_event(key, &plain)?).await? {
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
        let mut at_or_before = i64::MAX;
        while let Some(snapshot) = self.inner.history_snapshot(key, at_or_before).await? {
            let stale = snapshot.state.values().any(|v| !matches!(v, Value::String(t) if !self.stale(t)));
            if stale {
                let plain = HistorySnapshot { at: snapshot.at.clone(), state: self.open_flat(key, snapshot.state)? };
                self.put_history_snapshots(key, std::slice::from_ref(&plain)).await?;
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

impl KeyRing {
    /// A ring of the one key `id` (which must be in this ring).
    fn subset(&self, id: &str) -> KeyRing {
        let keys: Vec<(String, Aes256Gcm)> = self.keys.iter().filter(|(k, _)| k == id).cloned().collect();
        KeyRing { keys: keys.into() }
    }
}

/// Associated data binding a state value to where it belongs.
fn value_aad(key: &SessionKey, flat_key: &str) -> Vec<u8> {
    scope_aad(key.app_name(), key.user_id(), key.session_id(), flat_key)
}

/// [`value_aad`] from the parts (the user and session matter only for their scopes).
fn scope_aad(app: &str, user: &str, session: &str, flat_key: &str) -> Vec<u8> {
    match Scope::of(flat_key) {
        (Scope::App, rest) => format!("a\0{app}\0{rest}"),
        (Scope::User, rest) => format!("u\0{app}\0{user}\0{rest}"),
        _ => format!("s\0{app}\0{user}\0{session}\0{flat_key}"),
    }
    .into_bytes()
}

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
    /// Events re-encrypted.
    pub events: usize,
    /// History snapshots re-encrypted.
    pub snapshots: usize,
}

fn event_aad(key: &SessionKey, event_id: &str, part: &str) -> Vec<u8> {
    format!("e\0{}\0{}\0{event_id}\0{part}", key.app_name(), key.user_id()).into_bytes()
}

impl<S> EncryptedStore<S> {
    fn seal_value(&self, aad: &[u8], value: &Value) -> Value {
        Value::String(self.keys.seal(aad, value.to_string().as_bytes()))
    }

    fn open_value(&self, aad: &[u8], value: Value, what: &dyn Fn() -> String) -> Result<Value> {
        let Value::String(text) = &value else { return Ok(value) };
        match self.keys.open(aad, text) {
            None => Ok(value),
            Some(Ok(plain)) => {
                serde_json::from_slice(&plain).map_err(|_| undecryptable(&what(), "it is not JSON inside"))
            }
            Some(Err(Unsealed::UnknownKey(id))) => {
                Err(undecryptable(&what(), &format!("it was encrypted with key {id}, which is not configured")))
            }
            Some(Err(Unsealed::Tampered(id))) => Err(undecryptable(
                &what(),
                &format!("it does not open with key {id}: the ciphertext was altered, moved, or the key is wrong"),
            )),
            Some(Err(Unsealed::Malformed)) => Err(undecryptable(&what(), "the ciphertext is malformed")),
        }
    }

    /// A flat map (prefixed keys) of `key`'s session, sealed.
    fn seal_flat(&self, key: &SessionKey, flat: &Map<String, Value>) -> Map<String, Value> {
        flat.iter().map(|(k, v)| (k.clone(), self.seal_value(&value_aad(key, k), v))).collect()
    }

    fn open_flat(&self, key: &SessionKey, flat: Map<String, Value>) -> Result<Map<String, Value>> {
        flat.into_iter()
            .map(|(k, v)| {
                let value = self.open_value(&value_aad(key, &k), v, &|| format!("session {key}: state key {k:?}"))?;
                Ok((k, value))
            })
            .collect()
    }

    fn seal_scoped(&self, key: &SessionKey, scoped: &ScopedState) -> ScopedState {
        let seal = |prefix: &str, map: &Map<String, Value>| -> Map<String, Value> {
            map.iter().map(|(k, v)| (k.clone(), self.seal_value(&value_aad(key, &format!("{prefix}{k}")), v))).collect()
        };
        ScopedState {
            app: seal(APP_PREFIX, &scoped.app),
            user: seal(USER_PREFIX, &scoped.user),
            session: seal("", &scoped.session),
        }
    }

    fn seal_event(&self, key: &SessionKey, event: &Event) -> Result<Event> {
        let Value::Object(mut all) = serde_json::to_value(event).map_err(|e| Error::invalid("event", e))? else {
            return Err(Error::invalid("event", "is not a JSON object"));
        };
        for plain in ["id", "invocation_id", "author", "timestamp", "partial", "deleted_keys"] {
            all.remove(plain);
        }
        if let Some(Value::Object(actions)) = all.get_mut("actions") {
            actions.remove("rewind_before_invocation_id");
        }
        let sealed = self.keys.seal(&event_aad(key, &event.id, "sealed"), Value::Object(all).to_string().as_bytes());
        let mut stored = Event {
            id: event.id.clone(),
            invocation_id: event.invocation_id.clone(),
            author: event.author.clone(),
            timestamp: event.timestamp,
            partial: event.partial,
            deleted_keys: event.deleted_keys.clone(),
            ..Event::default()
        };
        stored.actions.rewind_before_invocation_id = event.actions.rewind_before_invocation_id.clone();
        stored.extra.insert(SEALED.to_owned(), Value::String(sealed));
        Ok(stored)
    }

    fn open_event(&self, key: &SessionKey, mut stored: Event) -> Result<Event> {
        let Some(Value::String(sealed)) = stored.extra.remove(SEALED) else { return Ok(stored) };
        let event_id = stored.id.clone();
        let what = || format!("session {key}: event {event_id}");
        let parts = match self.keys.open(&event_aad(key, &stored.id, "sealed"), &sealed) {
            Some(Ok(plain)) => plain,
            None => return Err(undecryptable(&what(), "its sealed parts are not a ciphertext")),
            Some(Err(Unsealed::UnknownKey(id))) => {
                return Err(undecryptable(
                    &what(),
                    &format!("it was encrypted with key {id}, which is not configured"),
                ));
            }
            Some(Err(_)) => {
                return Err(undecryptable(
                    &what(),
                    "it does not open: the ciphertext was altered, moved, or the key is wrong",
                ));
            }
        };
        let Ok(Value::Object(mut all)) = serde_json::from_slice::<Value>(&parts) else {
            return Err(undecryptable(&what(), "it is not JSON inside"));
        };
        // The sealed parts, and the plaintext fields beside them.
        all.insert("id".to_owned(), Value::String(std::mem::take(&mut stored.id)));
        all.insert("invocation_id".to_owned(), Value::String(std::mem::take(&mut stored.invocation_id)));
        all.insert("author".to_owned(), Value::String(std::mem::take(&mut stored.author)));
        all.insert("timestamp".to_owned(), json_number(stored.timestamp));
        if let Some(partial) = stored.partial {
            all.insert("partial".to_owned(), Value::Bool(partial));
        }
        if !stored.deleted_keys.is_empty() {
            let deleted = std::mem::take(&mut stored.deleted_keys).into_iter().map(Value::String).collect();
            all.insert("deleted_keys".to_owned(), Value::Array(deleted));
        }
        if let Some(rewind) = stored.actions.rewind_before_invocation_id.take() {
            let actions = all.entry("actions").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(actions) = actions {
                actions.insert("rewind_before_invocation_id".to_owned(), Value::String(rewind));
            }
        }
        serde_json::from_value(Value::Object(all))
            .map_err(|e| undecryptable(&what(), &format!("it does not read as an event: {e}")))
    }

    fn open_session(&self, session: &Session) -> Result<Session> {
        let key = session.key().clone();
        let state = self.open_flat(&key, session.state().all().clone())?;
        let events = session.events().iter().map(|e| self.open_event(&key, e.clone())).collect::<Result<Vec<_>>>()?;
        Ok(Session::from_storage(key, state, events, session.last_update_micros())
            .created_at(session.create_time_micros())
            .with_attributes(session.shared_attributes().cloned()))
    }
}

fn json_number(n: f64) -> Value {
    serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
}

fn undecryptable(what: &str, why: &str) -> Error {
    Error::Backend { message: format!("{what} cannot be decrypted: {why}"), retryable: false, source: None }
}

#[async_trait]
impl<S: SessionStore> SessionStore for EncryptedStore<S> {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let key = new.key.clone();
        let sealed = NewSession {
            state: self.seal_scoped(&key, &new.state),
            history_start: new.history_start.as_ref().map(|start| self.seal_flat(&key, start)),
            ..new
        };
        self.open_session(&self.inner.create(sealed).await?)
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        self.inner.get(key, window).await?.map(|s| self.open_session(&s)).transpose()
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.inner.list(query).await?.into_iter().map(|s| self.open_session(&s)).collect()
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.inner.delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let key = commit.key.clone();
        let plain = Arc::clone(&commit.event);
        let sealed = EventCommit {
            event: Arc::new(self.seal_event(&key, &plain)?),
            delta: self.seal_scoped(&key, &commit.delta),
            ..commit
        };
        match self.inner.commit(sealed).await {
            Ok(CommitOutcome::Committed) => Ok(CommitOutcome::Committed),
            // Two sealings of one event differ (fresh nonces): compare the plaintexts instead.
            Ok(CommitOutcome::Duplicate(_)) | Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { .. } }) => {
                let stored = self.inner.event(&key, &plain.id).await?;
                match stored.map(|e| self.open_event(&key, e)).transpose()? {
                    Some(stored) if stored.same_as_retry(&plain) => Ok(CommitOutcome::Duplicate(Box::new(stored))),
                    _ => Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: plain.id.clone() } }),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let Some(events) = self.inner.events(query).await? else { return Ok(None) };
        events.into_iter().map(|e| self.open_event(&query.key, e)).collect::<Result<Vec<_>>>().map(Some)
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let Some(snapshot) = self.inner.history_snapshot(key, at_or_before_micros).await? else { return Ok(None) };
        Ok(Some(HistorySnapshot { at: snapshot.at, state: self.open_flat(key, snapshot.state)? }))
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let sealed: Vec<HistorySnapshot> = snapshots
            .iter()
            .map(|s| HistorySnapshot { at: s.at.clone(), state: self.seal_flat(key, &s.state) })
            .collect();
        self.inner.put_history_snapshots(key, &sealed).await
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        self.inner.event(key, event_id).await?.map(|e| self.open_event(key, e)).transpose()
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        self.inner.first_event_of_invocation(key, invocation_id).await?.map(|e| self.open_event(key, e)).transpose()
    }

    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        // An event's ciphertexts are bound to its app, user and id, which a copy keeps.
        self.inner.copy_events(from, to, upto, to_marker).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        self.inner.users_with_session(app, session_id).await
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.inner.delete_expired(before_micros, limit).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        self.inner.erase_user(app, user).await
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        self.inner.user_data(app, user).await
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        self.inner.metadata(name).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        self.inner.set_expire_time(key, expire_micros).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let sealed = HistorySnapshot { at: boundary.at.clone(), state: self.seal_flat(key, &boundary.state) };
        self.inner.drop_events_before(key, cut_micros, &sealed).await
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        self.inner.set_metadata(name, value).await
    }

    async fn apps(&self) -> Result<Vec<String>> {
        self.inner.apps().await
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        self.inner.event_count(key).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        self.inner.users(app).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        self.inner.stored_state(owner).await
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        self.inner.swap_values(owner, swaps).await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        self.inner.rewrite_event(key, event).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    #[test]
    fn keys_are_checked_and_never_shown() {
        let ring = KeyRing::parse(&format!("{K1}\n# old\n{}", KeyRing::generate("k0").unwrap())).unwrap();
        assert_eq!(ring.ids(), ["k1", "k0"]);
        let shown = format!("{ring:?}");
        assert!(!shown.contains("MDEy"), "{shown}");
        for (bad, says) in [
            ("", "no key"),
            ("k1", "id:base64"),
            ("k 1:AAAA", "the id"),
            ("k1:not base64!", "base64"),
            ("k1:AAAA", "32"),
            (&format!("{K1},{K1}"), "twice"),
        ] {
            let error = KeyRing::parse(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad:?}: {error}");
            assert!(!error.contains("MDEy"), "{error}");
        }
    }

    #[test]
    fn envelopes_open_only_where_they_were_sealed() {
        let ring = KeyRing::parse(K1).unwrap();
        let sealed = ring.seal(b"here", b"secret");
        assert!(sealed.starts_with("$as1$k1$"), "{sealed}");
        assert_eq!(ring.open(b"here", &sealed).unwrap().unwrap(), b"secret");
        assert!(matches!(ring.open(b"there", &sealed), Some(Err(Unsealed::Tampered(_)))));
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(matches!(ring.open(b"here", std::str::from_utf8(&flipped).unwrap()), Some(Err(_))));
        let other = KeyRing::parse(&KeyRing::generate("k2").unwrap()).unwrap();
        assert!(matches!(other.open(b"here", &sealed), Some(Err(Unsealed::UnknownKey(id))) if id == "k1"));
        assert!(ring.open(b"here", "plain text").is_none());
        assert_ne!(ring.seal(b"here", b"secret"), sealed, "a fresh nonce every time");
    }

    use crate::store::DelegatingStore;
    use crate::{CreateSession, GetSessionConfig, InMemorySessionService, SessionService};
    use serde_json::json;

    /// One in-memory store reachable from several wrappers (and directly).
    #[derive(Clone, Default)]
    struct Shared(Arc<InMemorySessionService>);

    impl DelegatingStore for Shared {
        fn delegate(&self) -> &dyn SessionStore {
            &*self.0
        }
    }

    async fn wrapped(store: &Shared, keys: &str) -> Result<EncryptedStore<Shared>, CryptError> {
        EncryptedStore::open(store.clone(), KeyRing::parse(keys)?).await
    }

    #[tokio::test]
    async fn storage_holds_ciphertext_and_names_what_cannot_be_read() {
        let store = Shared::default();
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
        let raw = store.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
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
        store.create_session(CreateSession::new("app", "alice").id("t").state("secret", moved)).await.unwrap();
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
        let mut handle = store.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        store.append_event(&mut handle, Event::new("x").delta("secret", Value::String(tampered))).await.unwrap();
        let error = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap_err().to_string();
        assert!(error.contains("cannot be decrypted"), "{error}");
    }

    #[tokio::test]
    async fn keys_rotate_and_wrong_keys_are_refused_at_open() {
        let store = Shared::default();
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
        let raw = store.get_session(s2.key(), GetSessionConfig::default()).await.unwrap().unwrap();
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
        let error = refuse_if_encrypted(&store).await.unwrap_err().to_string();
        assert!(error.contains("this database is encrypted"), "{error}");
        assert!(refuse_if_encrypted(&InMemorySessionService::new()).await.is_ok());
    }
}
