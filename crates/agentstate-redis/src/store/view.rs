//! The compacted view, answered by the store: each event's facts kept in a hash beside its
//! text (see `keys.rs`), read in one script with the session, the view computed from them, then
//! only the view's events read.

use agentstate::compaction::{self, Facts};
use agentstate::store::{LoadedSession, SessionRead};
use agentstate::{Event, Result, SessionKey};
use redis::Value as Reply;

use super::{array, backend, bytes, corrupt, decode_event, expiry_arg, handle, integer, meta, state, text};
use crate::RedisStore;
use crate::scripts;

/// What the compacted view keeps of an event: `[invocation id, facts]` (see `keys.rs`).
pub(super) fn facts_value(event: &Event) -> String {
    let invocation = serde_json::to_string(&event.invocation_id).unwrap_or_default();
    format!("[{invocation},{}]", Facts::of(event).to_text())
}

/// The facts of an event as `get.lua` answers them (its id and time from the times it lists): the
/// kept `[invocation id, facts]`, or the event's own JSON where none were kept.
fn facts_of(id: &Reply, micros: &Reply, value: &Reply, key: &SessionKey) -> Result<Facts> {
    let bad = || corrupt(format!("session {key}: an event's facts are unreadable"));
    let id = text(id).ok_or_else(bad)?.to_owned();
    let micros = integer(micros).ok_or_else(bad)?;
    let value = bytes(value).ok_or_else(bad)?;
    if value.first() == Some(&b'[') {
        let (invocation, kept): (String, &serde_json::value::RawValue) =
            serde_json::from_slice(value).map_err(|_| bad())?;
        return Facts::from_text(id, invocation, micros, kept.get()).ok_or_else(bad);
    }
    let event: Event =
        serde_json::from_slice(value).map_err(|e| corrupt(format!("session {key}: an event is unreadable: {e}")))?;
    Ok(Facts { micros, ..Facts::of(&event) })
}

impl RedisStore {
    /// The compacted view with this `overlap`, in two steps: the session, its states and every
    /// event's facts at one point in time (no event text but that of events without facts); the
    /// view computed from them; then only the view's events, if the session has not moved on in
    /// between. `Ok(None)`: it has (an append, or retention), read again; `Ok(Some(None))`: there
    /// is no such session.
    pub(super) async fn compacted_view(
        &self,
        key: &SessionKey,
        read: &SessionRead,
        overlap: usize,
    ) -> Result<Option<Option<LoadedSession>>> {
        let keys = self.keys(key);
        let reply: Reply = Self::get_script(&keys)
            .arg("")
            .arg("")
            .arg(expiry_arg(read.now_micros))
            .arg("facts")
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("get", e))?;
        if reply == Reply::Nil {
            return Ok(Some(None));
        }
        let mut parts = array(reply).into_iter();
        let mut next = || parts.next().unwrap_or(Reply::Nil);
        let what = || format!("session {key}");
        let meta = meta(next(), key)?;
        let (session, app, user) = (state(next(), &what)?, state(next(), &what)?, state(next(), &what)?);
        let (times, values) = (array(next()), array(next()));
        let facts = times
            .chunks_exact(2)
            .zip(&values)
            .map(|(at, value)| facts_of(&at[0], &at[1], value, key))
            .collect::<Result<Vec<_>>>()?;
        let kept = compaction::view(&facts, overlap);

        let mut invocation = scripts::VIEW.prepare_invoke();
        invocation.key(&keys.meta).key(&keys.data).arg(meta.update);
        for &i in &kept {
            invocation.arg(&facts[i].id);
        }
        let reply: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("get", e))?;
        let found = array(reply);
        if found.len() != kept.len() {
            return Ok(None);
        }
        let events = found.iter().map(|e| decode_event(e, key)).collect::<Result<Vec<_>>>()?;
        let loaded = LoadedSession::decoded(handle(key.clone(), meta, &session, &app, &user, events));
        Ok(Some(Some(LoadedSession { view: read.view, ..loaded })))
    }
}
