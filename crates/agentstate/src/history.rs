//! A session's history as the log of its state: the state at any event, what each event
//! changed, rewinds and forks.
//!
//! Every state change travels on an event, so a session's events are a complete log of what it
//! wrote. The **history state** at a position is the fold of the session's creation state and
//! its events' deltas and deletions up to that position: the session's own keys, and the
//! `app:`/`user:` keys as *this session's* creation and events set them. Other sessions' writes
//! to shared keys are in their own histories, so the history value of a shared key is what this
//! session last wrote, not necessarily what the app or user held at that moment (that is not
//! knowable from one session). `temp:` keys are never stored and never appear.
//!
//! Sessions created by agentstate record their creation state. Sessions written by another
//! program (ADK for Python) or imported from an archive do not: their history starts empty, as
//! the reference's rewind assumes.
//!
//! Reads do not replay the whole history each time: stores keep a snapshot of the history state
//! every [`SNAPSHOT_EVERY`] events, written by the first read that replayed past them, so a
//! question costs one snapshot and at most that many events.
//!
//! ```
//! use agentstate::history::HistoryAt;
//! use agentstate::{CreateSession, Event, SessionService};
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> agentstate::Result<()> {
//! let service = SessionService::in_memory();
//! let mut session = service.create_session(CreateSession::new("app", "u").state("step", json!(0))).await?;
//! let first = service.append_event(&mut session, Event::new("inv-1").delta("step", json!(1))).await?;
//! service.append_event(&mut session, Event::new("inv-2").delta("step", json!(2)).delete("gone")).await?;
//!
//! let then = service.state_at(session.key(), HistoryAt::AfterEvent(first.id.clone())).await?.unwrap();
//! assert_eq!(then.state.get("step"), Some(&json!(1)));
//! let diff = service.event_diff(session.key(), &first.id).await?.unwrap();
//! assert_eq!((diff.changes[0].before.clone(), diff.changes[0].after.clone()), (Some(json!(0)), Some(json!(1))));
//!
//! // Undo the second turn: one more event restores the session's own keys.
//! service.rewind(&mut session, "inv-2").await?;
//! assert_eq!(session.state().get("step"), Some(&json!(1)));
//! # Ok(()) }
//! ```

use std::borrow::Borrow;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::event::Event;
use crate::key::SessionKey;
use crate::scope::{Scope, TEMP_PREFIX};

/// Stores keep a snapshot of the history state every this many events (see the module docs).
pub const SNAPSHOT_EVERY: usize = 64;

/// A position in a session's history.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryAt {
    /// As the session was created, before any event.
    Creation,
    /// Just after this event (by id).
    AfterEvent(String),
    /// Just before this event (by id).
    BeforeEvent(String),
    /// After the last event at or before this time (epoch seconds), or as created if none.
    Time(f64),
}

/// The history state of a session at a position.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateAt {
    /// The last event applied; `None` at creation.
    pub event_id: Option<String>,
    /// Its time (or the creation time), epoch seconds.
    pub timestamp: f64,
    /// The state: session keys, and `app:`/`user:` keys as this session set them.
    pub state: Map<String, Value>,
}

/// One key an event changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyChange {
    /// The key, with its prefix.
    pub key: String,
    /// Its value before the event; `None` if it had none.
    pub before: Option<Value>,
    /// Its value after; `None` if the event deleted it.
    pub after: Option<Value>,
}

/// What a [`KeyChange`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The key had no value and got one.
    Set,
    /// The key's value changed.
    Changed,
    /// The key was deleted.
    Deleted,
}

impl KeyChange {
    /// Set, changed or deleted.
    pub fn kind(&self) -> ChangeKind {
        match (&self.before, &self.after) {
            (None, _) => ChangeKind::Set,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(_), Some(_)) => ChangeKind::Changed,
        }
    }
}

/// What one event changed in the history state: every key whose value it set, changed or
/// deleted (a write of the value a key already had is no change).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventDiff {
    /// The event.
    pub event_id: String,
    /// Its time, epoch seconds.
    pub timestamp: f64,
    /// Its invocation.
    pub invocation_id: String,
    /// Its author.
    pub author: String,
    /// The changes, by key.
    pub changes: Vec<KeyChange>,
}

/// Arguments of [`SessionService::fork_session`](crate::SessionService::fork_session).
#[derive(Debug, Clone, PartialEq)]
pub struct ForkSession {
    /// The session to fork.
    pub source: SessionKey,
    /// The last event the fork keeps.
    pub at_event_id: String,
    /// The fork's id; generated (a UUIDv4) if `None` or empty.
    pub session_id: Option<String>,
}

fn is_temp(key: &str) -> bool {
    key.starts_with(TEMP_PREFIX)
}

/// Applies `event` to a history state: its delta, then its deletions (`temp:` keys never).
pub fn apply(state: &mut Map<String, Value>, event: &Event) {
    for (key, value) in event.actions.state_delta.iter().filter(|(k, _)| !is_temp(k)) {
        state.insert(key.clone(), value.clone());
    }
    for key in event.deleted_keys.iter().filter(|k| !is_temp(k)) {
        state.shift_remove(key);
    }
}

/// What `event` changes in the history state `before`, by key.
pub fn diff(before: &Map<String, Value>, event: &Event) -> Vec<KeyChange> {
    let mut after = before.clone();
    apply(&mut after, event);
    let touched = event.actions.state_delta.keys().chain(&event.deleted_keys).filter(|k| !is_temp(k));
    let mut changes: Vec<KeyChange> = Vec::new();
    for key in touched {
        if changes.iter().any(|c| c.key == *key) {
            continue;
        }
        let (was, now) = (before.get(key), after.get(key));
        if was != now {
            changes.push(KeyChange { key: key.clone(), before: was.cloned(), after: now.cloned() });
        }
    }
    // By key: stores keep a delta's keys in different orders (PostgreSQL's jsonb sorts them).
    changes.sort_by(|a, b| a.key.cmp(&b.key));
    changes
}

/// The session-scoped keys of a state (no `app:`, `user:` or `temp:` keys).
pub fn session_keys(state: &Map<String, Value>) -> Map<String, Value> {
    state.iter().filter(|(k, _)| Scope::of(k).0 == Scope::Session).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The events still live after rewinds, in order, as ADK for Python decides it: walking back
/// from the newest, an event carrying `actions.rewind_before_invocation_id = X` is dropped
/// together with every event from X's first event up to it; rewinds of rewinds included. A
/// rewind to an event (`rewind_after_event_id = E`, agentstate's, for ADK-Rust's rewind) drops
/// every event after E up to it, and wins over an invocation marker on the same event. What the
/// model sees and which agent answers next are decided on these.
pub fn live_events<E: Borrow<Event>>(events: &[E]) -> Vec<&E> {
    rewound::<Event, E>(events).live.into_iter().map(|i| &events[i]).collect()
}

/// The positions still live after rewinds (see [`live_events`]),
/// and the positions a rewind needs to be seen doing the same: each rewind that takes effect and
/// the event it rewinds to.
pub(crate) struct Rewound {
    pub(crate) live: Vec<usize>,
    pub(crate) anchors: Vec<usize>,
}

/// What the rewind walk reads of an event.
pub(crate) trait RewindFacts {
    fn id(&self) -> &str;
    fn invocation_id(&self) -> &str;
    fn rewind_after_event(&self) -> Option<&str>;
    fn rewind_before_invocation(&self) -> Option<&str>;
}

impl RewindFacts for Event {
    fn id(&self) -> &str {
        &self.id
    }
    fn invocation_id(&self) -> &str {
        &self.invocation_id
    }
    fn rewind_after_event(&self) -> Option<&str> {
        self.rewind_after_event_id.as_deref()
    }
    fn rewind_before_invocation(&self) -> Option<&str> {
        self.actions.rewind_before_invocation_id.as_deref().filter(|x| !x.is_empty())
    }
}

/// Walks back from the newest event: a rewind drops itself and everything back to its target.
pub(crate) fn rewound<R: RewindFacts, E: Borrow<R>>(events: &[E]) -> Rewound {
    let mut first_of: Option<HashMap<&str, usize>> = None;
    let mut index_of: Option<HashMap<&str, usize>> = None;
    let (mut live, mut anchors) = (Vec::with_capacity(events.len()), Vec::new());
    let mut i = events.len();
    while i > 0 {
        i -= 1;
        let event: &R = events[i].borrow();
        if let Some(target) = event.rewind_after_event() {
            let index =
                index_of.get_or_insert_with(|| events.iter().enumerate().map(|(i, e)| (e.borrow().id(), i)).collect());
            anchors.push(i);
            if let Some(&at) = index.get(target).filter(|&&at| at < i) {
                anchors.push(at);
                i = at + 1;
            }
            continue;
        }
        match event.rewind_before_invocation() {
            Some(target) => {
                let first = first_of.get_or_insert_with(|| {
                    let mut first = HashMap::new();
                    for (index, e) in events.iter().enumerate() {
                        let id = e.borrow().invocation_id();
                        if !id.is_empty() {
                            first.entry(id).or_insert(index);
                        }
                    }
                    first
                });
                anchors.push(i);
                if let Some(&start) = first.get(target).filter(|&&start| start < i) {
                    anchors.push(start);
                    i = start;
                }
            }
            None => live.push(i),
        }
    }
    live.reverse();
    Rewound { live, anchors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(invocation: &str) -> Event {
        Event::new(invocation).author("a")
    }

    fn rewind(invocation: &str, target: &str) -> Event {
        let mut e = event(invocation);
        e.actions.rewind_before_invocation_id = Some(target.into());
        e
    }

    fn invocations(events: &[Event]) -> Vec<&str> {
        live_events(events).into_iter().map(|e| e.invocation_id.as_str()).collect()
    }

    #[test]
    fn rewound_events_are_not_live() {
        let events = [event("a"), event("b"), event("b"), event("c"), rewind("r1", "b"), event("d")];
        assert_eq!(invocations(&events), ["a", "d"]);
        // A rewind of a rewind: the first rewind and what it dropped are gone together.
        let events = [event("a"), event("b"), rewind("r1", "b"), event("c"), rewind("r2", "a")];
        assert_eq!(invocations(&events), Vec::<&str>::new());
        // An unknown or later invocation drops only the rewind event.
        let events = [event("a"), rewind("r1", "zzz"), event("b")];
        assert_eq!(invocations(&events), ["a", "b"]);
    }

    /// A session's events handed over are the live ones, as borrowed.
    #[test]
    fn events_handed_over_are_the_live_ones() {
        let events = [event("a"), event("b"), rewind("r1", "b"), event("c"), event("d")];
        let mut session = crate::Session::from_storage(
            crate::SessionKey::new("app", "u", "s").unwrap(),
            serde_json::Map::new(),
            events,
            0,
        );
        let borrowed: Vec<Event> = session.events().live().into_iter().cloned().collect();
        let handed: Vec<Event> = session.take_events().into_live().into_iter().map(|e| (*e).clone()).collect();
        assert_eq!(handed, borrowed);
        assert_eq!(handed.iter().map(|e| e.invocation_id.as_str()).collect::<Vec<_>>(), ["a", "c", "d"]);
    }

    #[test]
    fn diffs_name_what_changed() {
        let before = json!({"k": 1, "same": 2, "gone": 3}).as_object().unwrap().clone();
        let e = event("i").delta("k", json!(5)).delta("same", json!(2)).delta("new", json!(0)).delete("gone");
        let changes = diff(&before, &e.delta("temp:t", json!(1)));
        let summary: Vec<(&str, ChangeKind)> = changes.iter().map(|c| (c.key.as_str(), c.kind())).collect();
        assert_eq!(summary, [("gone", ChangeKind::Deleted), ("k", ChangeKind::Changed), ("new", ChangeKind::Set)]);
        assert_eq!(changes[0].before, Some(json!(3)));
    }
}
