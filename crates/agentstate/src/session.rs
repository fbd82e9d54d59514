//! A session handle: identity, merged state, history and the storage marker used for stale checks.

use std::collections::BTreeMap;
use std::ops::Index;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::Event;
use crate::key::SessionKey;
use crate::state::State;
use crate::time::micros_to_secs;

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
    create_time_micros: i64,
    attributes: Option<Arc<SessionAttributes>>,
}

/// The one rule of expiry: a session that expires at `expire_micros` (epoch µs; `None`: never)
/// is live at `now_micros` until that time, and expired from it on. Every store judges expiry
/// with it.
pub fn live_at(expire_micros: Option<i64>, now_micros: i64) -> bool {
    expire_micros.is_none_or(|t| t > now_micros)
}

/// What a session carries besides its state and history: a name to show, labels, and when it
/// expires. All optional; the managed service's `displayName`, `labels` and `expireTime`.
///
/// ```
/// use agentstate::{CreateSession, SessionService};
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// # async fn run() -> agentstate::Result<()> {
/// let service = SessionService::in_memory();
/// let request = CreateSession::new("app", "alice").display_name("Trip planning").label("team", "travel");
/// let session = service.create_session(request).await?;
/// assert_eq!(session.attributes().display_name.as_deref(), Some("Trip planning"));
/// assert_eq!(session.attributes().labels["team"], "travel");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionAttributes {
    /// A name to show people.
    pub display_name: Option<String>,
    /// Labels to organize sessions by.
    pub labels: BTreeMap<String, String>,
    /// When the session expires, epoch microseconds. From then on it behaves as deleted for
    /// every read and write, whether or not a sweep has removed it yet
    /// ([`SessionService::sweep_expired`](crate::SessionService::sweep_expired)).
    pub expire_time_micros: Option<i64>,
}

/// The longest display name, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 256;
/// The most labels a session may carry.
pub const MAX_LABELS: usize = 64;
/// The longest label key or value, in characters.
pub const MAX_LABEL_CHARS: usize = 64;

static NO_ATTRIBUTES: SessionAttributes =
    SessionAttributes { display_name: None, labels: BTreeMap::new(), expire_time_micros: None };

impl SessionAttributes {
    /// Whether it carries nothing.
    pub fn is_empty(&self) -> bool {
        self.display_name.is_none() && self.labels.is_empty() && self.expire_time_micros.is_none()
    }

    /// Whether a session with these attributes has expired at `now_micros` (epoch µs): its
    /// expire time is at or before then.
    pub fn expired_at(&self, now_micros: i64) -> bool {
        !live_at(self.expire_time_micros, now_micros)
    }

    /// Checks the sizes: a display name of at most [`MAX_DISPLAY_NAME_CHARS`], at most
    /// [`MAX_LABELS`] labels, keys and values of at most [`MAX_LABEL_CHARS`], keys not empty,
    /// no control characters.
    pub fn validate(&self) -> crate::Result<()> {
        use crate::Error;
        let printable = |s: &str| !s.chars().any(char::is_control);
        if let Some(name) = &self.display_name {
            let chars = name.chars().count();
            if chars > MAX_DISPLAY_NAME_CHARS || !printable(name) {
                return Err(Error::invalid(
                    "display_name",
                    format!("must be printable and at most {MAX_DISPLAY_NAME_CHARS} characters (is {chars})"),
                ));
            }
        }
        if self.labels.len() > MAX_LABELS {
            return Err(Error::invalid(
                "labels",
                format!("at most {MAX_LABELS} are allowed, not {}", self.labels.len()),
            ));
        }
        for (key, value) in &self.labels {
            let fits = |s: &str| s.chars().count() <= MAX_LABEL_CHARS && printable(s);
            if key.is_empty() || !fits(key) || !fits(value) {
                return Err(Error::invalid(
                    "labels",
                    format!(
                        "{key:?}: keys and values are printable, at most {MAX_LABEL_CHARS} characters, keys not empty"
                    ),
                ));
            }
        }
        Ok(())
    }
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
            create_time_micros: last_update_micros,
            attributes: None,
        }
    }

    /// Sets when the session was created (epoch microseconds); without it, the handle says it
    /// was created at its last update. For stores.
    #[must_use]
    pub fn created_at(mut self, create_time_micros: i64) -> Self {
        self.create_time_micros = create_time_micros;
        self
    }

    /// Sets the session's attributes. For stores.
    #[must_use]
    pub fn with_attributes(mut self, attributes: Option<Arc<SessionAttributes>>) -> Self {
        self.attributes = attributes.filter(|a| !a.is_empty());
        self
    }

    /// Takes the handle's events out, leaving it with none: for a caller that turns them into
    /// something else and would otherwise copy each.
    pub fn take_events(&mut self) -> Events {
        std::mem::take(&mut self.events)
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

    /// When the session was created, epoch seconds.
    pub fn create_time(&self) -> f64 {
        micros_to_secs(self.create_time_micros)
    }

    /// When the session was created, epoch microseconds.
    pub fn create_time_micros(&self) -> i64 {
        self.create_time_micros
    }

    /// Whether it has expired at `now_micros` (epoch microseconds): its expire time is at or
    /// before then.
    pub fn is_expired_at(&self, now_micros: i64) -> bool {
        self.attributes().expired_at(now_micros)
    }

    /// Its display name, labels and expiry (all empty when it has none).
    pub fn attributes(&self) -> &SessionAttributes {
        self.attributes.as_deref().unwrap_or(&NO_ATTRIBUTES)
    }

    /// The attributes, shared, for stores that hand them on without copying.
    pub fn shared_attributes(&self) -> Option<&Arc<SessionAttributes>> {
        self.attributes.as_ref()
    }

    /// Time of the last change, epoch seconds.
    pub fn last_update_time(&self) -> f64 {
        micros_to_secs(self.last_update_micros)
    }

    /// Time of the last change, epoch microseconds: the storage marker of this handle.
    pub fn last_update_micros(&self) -> i64 {
        self.last_update_micros
    }

    /// Drops the handle's oldest event (one outside the window asked for).
    pub(crate) fn drop_first_event(&mut self) {
        if !self.events.0.is_empty() {
            self.events.0.remove(0);
        }
    }

    /// Keeps only the handle's events at `positions` (ascending).
    pub(crate) fn keep_events(&mut self, positions: &[usize]) {
        keep_positions(&mut self.events.0, positions);
    }

    /// Records an append that storage has committed: the invocation's `temp:` changes, then the
    /// persisted delta and deletions, then the event; and the expire time the append moved to
    /// `extended_expiry` (as the store did: only an expiring session, only later).
    pub(crate) fn record_commit(&mut self, event: Arc<Event>, temp: &TempChanges, extended_expiry: Option<i64>) {
        if let (Some(to), Some(expire)) = (extended_expiry, self.attributes().expire_time_micros)
            && to > expire
        {
            let mut attributes = self.attributes().clone();
            attributes.expire_time_micros = Some(to);
            self.attributes = Some(Arc::new(attributes));
        }
        self.state.apply(&temp.set);
        self.state.remove(&temp.deleted);
        self.state.apply(&event.actions.state_delta);
        self.state.remove(&event.deleted_keys);
        self.last_update_micros = event.time().micros();
        self.events.0.push(event);
    }
}

/// Keeps only the items at `positions` (ascending) of `items`.
pub(crate) fn keep_positions<T>(items: &mut Vec<T>, positions: &[usize]) {
    let mut next = positions.iter().peekable();
    let mut at = 0;
    items.retain(|_| {
        let keep = next.next_if_eq(&&at).is_some();
        at += 1;
        keep
    });
}

/// The invocation's `temp:` changes of an append, which only the caller's handle sees.
#[derive(Debug, Default)]
pub(crate) struct TempChanges {
    /// `temp:` keys set.
    pub(crate) set: Map<String, Value>,
    /// `temp:` keys deleted.
    pub(crate) deleted: Vec<String>,
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

    /// The events still live after rewinds, oldest first: what a model is shown (see
    /// [`history::live_events`](crate::history::live_events)).
    pub fn live(&self) -> Vec<&Event> {
        crate::history::live_events(&self.0).into_iter().map(AsRef::as_ref).collect()
    }

    /// The shared events, for stores that hand them on without copying.
    pub fn shared(&self) -> &[Arc<Event>] {
        &self.0
    }

    /// The events still live after rewinds, oldest first, as [`live`](Self::live) finds them,
    /// handed over rather than borrowed: an event no other handle shares can then be taken
    /// out of its `Arc` without a copy.
    pub fn into_live(mut self) -> Vec<Arc<Event>> {
        let live = crate::history::rewound::<Event, Arc<Event>>(&self.0).live;
        keep_positions(&mut self.0, &live);
        self.0
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
