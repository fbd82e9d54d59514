//! Sealing and opening what a store keeps: each state value its own ciphertext, bound to where
//! it belongs; an event's content sealed in one ciphertext beside its plaintext fields.

use serde_json::{Map, Value};

use base64::Engine;

use super::{BASE64, KeyRing, SEALED, Unsealed};
use crate::compaction::{FACTS_KEY, Facts};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::scope::{APP_PREFIX, Scope, ScopedState, USER_PREFIX};
use crate::session::Session;
use crate::store::StateOwner;

/// Associated data binding a state value to where it belongs.
fn value_aad(key: &SessionKey, flat_key: &str) -> Vec<u8> {
    scope_aad(key.app_name(), key.user_id(), key.session_id(), flat_key)
}

/// [`value_aad`] from the parts (the user and session matter only for their scopes).
pub(super) fn scope_aad(app: &str, user: &str, session: &str, flat_key: &str) -> Vec<u8> {
    match Scope::of(flat_key) {
        (Scope::App, rest) => format!("a\0{app}\0{rest}"),
        (Scope::User, rest) => format!("u\0{app}\0{user}\0{rest}"),
        _ => format!("s\0{app}\0{user}\0{session}\0{flat_key}"),
    }
    .into_bytes()
}

fn event_aad(key: &SessionKey, event_id: &str, part: &str) -> Vec<u8> {
    format!("e\0{}\0{}\0{event_id}\0{part}", key.app_name(), key.user_id()).into_bytes()
}

/// A function call id as a sealed event's facts carry it in the clear: SHA-256 of the id bound
/// like an event's parts (app, user), 16 bytes in base64. Equal ids give equal digests (the
/// compacted view matches calls with their responses), across key rotations; the id is not
/// readable from it.
fn call_digest(key: &SessionKey, call_id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(event_aad(key, call_id, "call"));
    BASE64.encode(&digest[..16])
}

/// Where a stored value of `owner` under `key` (without its scope's prefix) is bound, and the
/// key as a session's state shows it (for messages).
fn owner_value_aad(owner: &StateOwner, key: &str) -> (Vec<u8>, String) {
    let (app, user, session, prefix) = match owner {
        StateOwner::App(app) => (app.as_str(), "", "", APP_PREFIX),
        StateOwner::User { app, user } => (app.as_str(), user.as_str(), "", USER_PREFIX),
        StateOwner::Session(key) => (key.app_name(), key.user_id(), key.session_id(), ""),
    };
    let flat = format!("{prefix}{key}");
    (scope_aad(app, user, session, &flat), format!("app {app}: state key {flat:?}"))
}

impl KeyRing {
    pub(super) fn seal_value(&self, aad: &[u8], value: &Value) -> Value {
        Value::String(self.seal(aad, value.to_string().as_bytes()))
    }

    pub(super) fn open_value(&self, aad: &[u8], value: Value, what: &dyn Fn() -> String) -> Result<Value> {
        let Value::String(text) = &value else { return Ok(value) };
        match self.open(aad, text) {
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

    /// A stored value of `owner` under `key`, opened.
    pub(super) fn open_owner_value(&self, owner: &StateOwner, key: &str, value: Value) -> Result<Value> {
        let (aad, what) = owner_value_aad(owner, key);
        self.open_value(&aad, value, &|| what.clone())
    }

    /// A value of `owner` under `key`, sealed for storage.
    pub(super) fn seal_owner_value(&self, owner: &StateOwner, key: &str, value: &Value) -> Value {
        self.seal_value(&owner_value_aad(owner, key).0, value)
    }

    /// A flat map (prefixed keys) of `key`'s session, sealed.
    pub(super) fn seal_flat(&self, key: &SessionKey, flat: &Map<String, Value>) -> Map<String, Value> {
        flat.iter().map(|(k, v)| (k.clone(), self.seal_value(&value_aad(key, k), v))).collect()
    }

    pub(super) fn open_flat(&self, key: &SessionKey, flat: Map<String, Value>) -> Result<Map<String, Value>> {
        flat.into_iter()
            .map(|(k, v)| {
                let value = self.open_value(&value_aad(key, &k), v, &|| format!("session {key}: state key {k:?}"))?;
                Ok((k, value))
            })
            .collect()
    }

    pub(super) fn seal_scoped(&self, key: &SessionKey, scoped: &ScopedState) -> ScopedState {
        let seal = |prefix: &str, map: &Map<String, Value>| -> Map<String, Value> {
            map.iter().map(|(k, v)| (k.clone(), self.seal_value(&value_aad(key, &format!("{prefix}{k}")), v))).collect()
        };
        ScopedState {
            app: seal(APP_PREFIX, &scoped.app),
            user: seal(USER_PREFIX, &scoped.user),
            session: seal("", &scoped.session),
        }
    }

    pub(super) fn seal_event(&self, key: &SessionKey, event: &Event) -> Result<Event> {
        let Value::Object(mut all) = serde_json::to_value(event).map_err(|e| Error::invalid("event", e))? else {
            return Err(Error::invalid("event", "is not a JSON object"));
        };
        for plain in ["id", "invocation_id", "author", "timestamp", "partial", "deleted_keys"] {
            all.remove(plain);
        }
        if let Some(Value::Object(actions)) = all.get_mut("actions") {
            actions.remove("rewind_before_invocation_id");
        }
        let sealed = self.seal(&event_aad(key, &event.id, "sealed"), Value::Object(all).to_string().as_bytes());
        let mut stored = Event {
            id: event.id.clone(),
            invocation_id: event.invocation_id.clone(),
            author: event.author.clone(),
            partial: event.partial,
            deleted_keys: event.deleted_keys.clone(),
            ..Event::default()
        };
        // The time in the clear, exactly: stores order events by it.
        stored.set_time(event.time());
        stored.actions.rewind_before_invocation_id = event.actions.rewind_before_invocation_id.clone();
        stored.extra.insert(SEALED.to_owned(), Value::String(sealed));
        // What the compacted view needs, which it could not read from the sealed parts.
        let facts = Facts::of(event).with_call_ids(|id| call_digest(key, id));
        stored.extra.insert(FACTS_KEY.to_owned(), Value::String(facts.to_text()));
        Ok(stored)
    }

    pub(super) fn open_event(&self, key: &SessionKey, mut stored: Event) -> Result<Event> {
        let Some(Value::String(sealed)) = stored.extra.remove(SEALED) else { return Ok(stored) };
        let event_id = stored.id.clone();
        let what = || format!("session {key}: event {event_id}");
        let mut all = self.open_sealed_object(&event_aad(key, &stored.id, "sealed"), &sealed, &what)?;
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

    /// The JSON object sealed in `sealed` (the sealed parts of an event or a memory), opened;
    /// an error naming `what` when it does not open.
    pub(super) fn open_sealed_object(
        &self,
        aad: &[u8],
        sealed: &str,
        what: &dyn Fn() -> String,
    ) -> Result<Map<String, Value>> {
        let plain = match self.open(aad, sealed) {
            Some(Ok(plain)) => plain,
            None => return Err(undecryptable(&what(), "its sealed parts are not a ciphertext")),
            Some(Err(Unsealed::UnknownKey(id))) => {
                let why = format!("it was encrypted with key {id}, which is not configured");
                return Err(undecryptable(&what(), &why));
            }
            Some(Err(_)) => {
                let why = "it does not open: the ciphertext was altered, moved, or the key is wrong";
                return Err(undecryptable(&what(), why));
            }
        };
        match serde_json::from_slice::<Value>(&plain) {
            Ok(Value::Object(object)) => Ok(object),
            _ => Err(undecryptable(&what(), "it is not JSON inside")),
        }
    }

    pub(super) fn open_session(&self, session: &Session) -> Result<Session> {
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

pub(super) fn undecryptable(what: &str, why: &str) -> Error {
    Error::Backend { message: format!("{what} cannot be decrypted: {why}"), retryable: false, source: None }
}
