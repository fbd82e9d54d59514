//! Appending: the rules every append follows before it reaches a store, written once.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::key::{SessionKey, validate_id};
use crate::scope::{Scope, ScopedKeys, ScopedState};
use crate::session::TempChanges;
use crate::store::EventCommit;
use crate::time::Timestamp;

/// The longest invocation id accepted, in characters (the reference's `VARCHAR(256)`).
pub const MAX_INVOCATION_ID_CHARS: usize = 256;

/// What [`SessionService::append_at`](crate::SessionService::append_at) did.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// The event as stored (id assigned, `temp:` keys removed, timestamp normalised); a partial
    /// event as given, since it is not stored.
    pub event: Event,
    /// The same event was stored already (a retry): nothing changed, and `event` is the stored
    /// one.
    pub duplicate: bool,
}

/// Where an append goes and when it happens.
pub(crate) struct Target<'a> {
    /// The session.
    pub(crate) key: &'a SessionKey,
    /// The marker the caller saw.
    pub(crate) marker: i64,
    /// The service's time now.
    pub(crate) now_micros: i64,
    /// Where the refresh policy moves the expire time, if it applies.
    pub(crate) extend_expiry_to: Option<i64>,
}

/// Validates `event`, assigns its id, moves its `temp:` keys out, normalises its deletions
/// (each key once, and `null` in the delta) and its time ([`Event::place_after`]
/// `target.marker`). Returns
/// the commit and the `temp:` changes for the caller's handle.
pub(crate) fn prepare(target: &Target<'_>, mut event: Event) -> Result<(EventCommit, TempChanges)> {
    if event.id.is_empty() {
        event.id = Event::new_id();
    } else {
        validate_id("event.id", &event.id)?;
    }
    let invocation_chars = event.invocation_id.chars().count();
    if invocation_chars > MAX_INVOCATION_ID_CHARS {
        return Err(Error::invalid(
            "event.invocation_id",
            format!("is {invocation_chars} characters long; at most {MAX_INVOCATION_ID_CHARS} are allowed"),
        ));
    }
    Timestamp::try_from_secs("event.timestamp", event.timestamp)?;
    crate::compaction::validate(&event)?;
    let timestamp_micros = event.place_after(target.marker);

    let mut deleted: Vec<String> = Vec::with_capacity(event.deleted_keys.len());
    for key in std::mem::take(&mut event.deleted_keys) {
        if key.is_empty() {
            return Err(Error::invalid("event.deleted_keys", "holds an empty key"));
        }
        if !deleted.contains(&key) {
            event.actions.state_delta.insert(key.clone(), Value::Null);
            deleted.push(key);
        }
    }
    let is_temp = |k: &str| Scope::of(k).0 == Scope::Temp;
    let (temp_deleted, kept_deleted): (Vec<String>, Vec<String>) = deleted.into_iter().partition(|k| is_temp(k));
    event.deleted_keys = kept_deleted;
    // Most events carry no `temp:` key: their delta stays as it is.
    let temp = if event.actions.state_delta.keys().any(|k| is_temp(k)) {
        let (temp, kept): (Map<String, Value>, Map<String, Value>) =
            std::mem::take(&mut event.actions.state_delta).into_iter().partition(|(k, _)| is_temp(k));
        event.actions.state_delta = kept;
        temp
    } else {
        Map::new()
    };
    let delta = ScopedState::split_copy(&event.actions.state_delta);
    let deleted = ScopedKeys::split(&event.deleted_keys);
    let commit = EventCommit {
        key: target.key.clone(),
        expected_last_update_micros: target.marker,
        event: Arc::new(event),
        timestamp_micros,
        delta,
        deleted,
        now_micros: target.now_micros,
        extend_expiry_to: target.extend_expiry_to,
    };
    Ok((commit, TempChanges { set: temp, deleted: temp_deleted }))
}
