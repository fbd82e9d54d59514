//! A session handle: identity, merged state, history and the storage marker used for stale checks.

use std::ops::Index;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::Event;
use crate::key::SessionKey;
use crate::state::State;
use crate::time::{micros_to_secs, secs_to_micros};

/// One conversation, as loaded from a [`SessionService`](crate::SessionService).
///
/// A `Session` is a *handle*: a snapshot taken at load time plus what this handle appended since.
/// Appending through a handle that is older than storage (another handle appended meanwhile)
/// fails with a stale-session conflict instead of silently interleaving histories.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    key: SessionKey,
    state: State,
    events: Events,
    last_update_micros: i64,
}

impl Session {
    /// Builds a handle from stored parts. For [`SessionStore`](crate::store::SessionStore) implementations.
    ///
    /// `state` is the merged view (session keys, then `app:`-prefixed, then `user:`-prefixed);
    /// `last_update_micros` is the storage marker of the session row (its last update time in
    /// epoch microseconds), the value the next append must find unchanged.
    pub fn from_storage(
        key: SessionKey,
        state: Map<String, Value>,
        events: impl IntoIterator<Item = impl Into<Arc<Event>>>,
        last_update_micros: i64,
    ) -> Self {
        Self {
            key,
            state: State::from_map(state),
            events: Events(events.into_iter().map(Into::into).collect()),
            last_update_micros,
        }
    }

    /// The session's identity.
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.key.session_id()
    }

    /// The app the session belongs to.
    pub fn app_name(&self) -> &str {
        self.key.app_name()
    }

    /// The user the session belongs to.
    pub fn user_id(&self) -> &str {
        self.key.user_id()
    }

    /// The merged, read-only state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The events loaded with this handle (all of them, or the window asked for) plus those
    /// appended through it.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Time of the last change, epoch seconds.
    pub fn last_update_time(&self) -> f64 {
        micros_to_secs(self.last_update_micros)
    }

    /// Time of the last change, epoch microseconds: the storage marker of this handle.
    pub fn last_update_micros(&self) -> i64 {
        self.last_update_micros
    }

    /// Records an append that storage has committed: the invocation's `temp:` keys, then the
    /// persisted delta, then the event.
    pub(crate) fn record_commit(&mut self, event: Arc<Event>, temp: &Map<String, Value>) {
        self.state.apply(temp);
        self.state.apply(&event.actions.state_delta);
        self.last_update_micros = secs_to_micros(event.timestamp).unwrap_or(self.last_update_micros);
        self.events.0.push(event);
    }
}

/// The ordered events of a session handle. Events are immutable once stored, so handles share
/// them instead of copying.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Events(Vec<Arc<Event>>);

impl Events {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The event at `index`, oldest first.
    pub fn get(&self, index: usize) -> Option<&Event> {
        self.0.get(index).map(AsRef::as_ref)
    }

    /// The oldest event.
    pub fn first(&self) -> Option<&Event> {
        self.0.first().map(AsRef::as_ref)
    }

    /// The newest event.
    pub fn last(&self) -> Option<&Event> {
        self.0.last().map(AsRef::as_ref)
    }

    /// Iterates oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Event> + ExactSizeIterator {
        self.0.iter().map(AsRef::as_ref)
    }

    /// The shared events, for stores that hand them on without copying.
    pub fn shared(&self) -> &[Arc<Event>] {
        &self.0
    }
}

impl Index<usize> for Events {
    type Output = Event;

    fn index(&self, index: usize) -> &Event {
        &self.0[index]
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, Arc<Event>>, fn(&'a Arc<Event>) -> &'a Event>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(AsRef::as_ref)
    }
}
