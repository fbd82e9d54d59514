//! History computed from a store's events: the state at a position replayed from the newest
//! snapshot (keeping snapshots along the way, where the store has [`HistoryStore`]), event
//! diffs, forks by copying history. The service uses it for every store with [`HistoryStore`].
//! The public functions serve stores that answer history themselves
//! ([`RemoteHistory`](super::RemoteHistory)) from their events alone, with a history that starts
//! empty (a client of a service that keeps no creation state), and [`copy_events`] stores whose
//! own copy cannot take every case.

use serde_json::Map;

use super::{
    EventCommit, EventCopy, EventCursor, EventQuery, EventSelect, EventWindow, HistorySnapshot, HistoryStore,
    NewSession, ScopedState, SessionRead, SessionStore, micros_to_secs, secs_to_micros,
};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{self, EventDiff, ForkSession, HistoryAt, SNAPSHOT_EVERY, StateAt};
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};

/// Events read per page while replaying.
const PAGE: usize = 256;

/// Where a replay stops.
enum Target {
    /// After this event.
    Upto(EventCursor),
    /// Before this event.
    Before(EventCursor),
    /// After the last event at or before this time (epoch microseconds).
    Time(i64),
}

impl Target {
    fn admits(&self, at: &EventCursor) -> bool {
        match self {
            Self::Upto(end) => at <= end,
            Self::Before(end) => at < end,
            Self::Time(end) => at.timestamp_micros <= *end,
        }
    }

    /// The latest snapshot time that can be in range.
    fn snapshot_bound(&self) -> i64 {
        match self {
            Self::Upto(end) => end.timestamp_micros,
            Self::Before(end) => end.timestamp_micros.saturating_sub(1),
            Self::Time(end) => *end,
        }
    }
}

/// A store's history, read at one time: its events, and its snapshots if it keeps them. The
/// service's history answers for a store with [`HistoryStore`]; a remote store without its own
/// answers (an Agent Engine without agentstate's extensions) uses it too.
pub struct Replay<'a> {
    store: &'a dyn SessionStore,
    history: Option<&'a dyn HistoryStore>,
    now_micros: i64,
}

impl<'a> Replay<'a> {
    /// The history of `store`'s sessions, judging expiry at `now_micros`.
    pub fn new(store: &'a dyn SessionStore, now_micros: i64) -> Self {
        Self { store, history: store.capabilities().history, now_micros }
    }

    async fn events(&self, key: &SessionKey, select: EventSelect) -> Result<Option<Vec<Event>>> {
        self.store.events(&EventQuery { key: key.clone(), select, now_micros: self.now_micros }).await
    }

    /// The one event `select` picks: `Ok(None)` for no session, `Ok(Some(None))` for none.
    async fn event(&self, key: &SessionKey, select: EventSelect) -> Result<Option<Option<Event>>> {
        Ok(self.events(key, select).await?.map(|mut found| found.pop()))
    }

    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        match self.history {
            Some(history) => history.snapshot(key, at_or_before_micros).await,
            None => Ok(None),
        }
    }

    /// The session without events, `None` if it does not exist.
    async fn session(&self, key: &SessionKey) -> Result<Option<Session>> {
        let read = SessionRead::decoded(EventWindow::NONE, self.now_micros);
        Ok(self.store.get(key, &read).await?.map(|loaded| loaded.session))
    }

    /// The history state at `target`, and the position it is at; `None` if the session does
    /// not exist.
    async fn fold(&self, key: &SessionKey, target: &Target) -> Result<Option<HistorySnapshot>> {
        let mut bound = target.snapshot_bound();
        let start = loop {
            match self.snapshot(key, bound).await? {
                // Only events sharing one time (written by another program) can put a snapshot
                // past the target at its time: look before it.
                Some(snapshot) if !target.admits(&snapshot.at) => {
                    bound = snapshot.at.timestamp_micros.saturating_sub(1);
                }
                found => break found,
            }
        };
        if start.is_none()
            && let Some(boundary) = self.retained_from(key).await?
        {
            return Err(behind_window(key, &boundary));
        }
        let HistorySnapshot { mut at, mut state } =
            start.unwrap_or(HistorySnapshot { at: EventCursor::CREATION, state: Map::new() });
        // Snapshots are at most SNAPSHOT_EVERY events apart once a replay kept them: read that
        // many first, and whole pages only when replaying further (a first question).
        let mut after = (at != EventCursor::CREATION).then(|| at.clone());
        let mut limit = SNAPSHOT_EVERY;
        let (mut replayed, mut keep) = (0usize, Vec::new());
        'pages: loop {
            let select = EventSelect::Page { after: after.clone(), since_micros: None, limit };
            let Some(page) = self.events(key, select).await? else { return Ok(None) };
            let full = page.len() == limit;
            for event in &page {
                let position = EventCursor::of(event);
                if !target.admits(&position) {
                    break 'pages;
                }
                history::apply(&mut state, event);
                at = position;
                replayed += 1;
                if replayed % SNAPSHOT_EVERY == 0 {
                    keep.push(HistorySnapshot { at: at.clone(), state: state.clone() });
                }
            }
            if !full {
                break;
            }
            after = Some(at.clone());
            limit = PAGE;
        }
        if let Some(history) = self.history.filter(|_| !keep.is_empty())
            && let Err(e) = history.put_snapshots(key, &keep).await
        {
            // A read does not fail because it could not save work for the next one.
            tracing::warn!(error = %e, session = key.session_id(), "keeping history snapshots failed");
        }
        Ok(Some(HistorySnapshot { at, state }))
    }

    /// The snapshot a retention policy left as the oldest point of the session's history (see
    /// [`HistoryStore::drop_events_before`]), if events were dropped.
    async fn retained_from(&self, key: &SessionKey) -> Result<Option<HistorySnapshot>> {
        if self.history.is_none() {
            return Ok(None);
        }
        let bound = match self.event(key, EventSelect::first(1)).await?.flatten() {
            Some(event) => EventCursor::of(&event).timestamp_micros.saturating_sub(1),
            None => i64::MAX,
        };
        let found = self.snapshot(key, bound).await?;
        Ok(found.filter(|s| s.at.event_id.is_empty() && s.at != EventCursor::CREATION))
    }

    /// The unknown-event error, saying so when the event may have been dropped by retention.
    async fn missing_event(&self, key: &SessionKey, event_id: &str) -> Result<Error> {
        Ok(match self.retained_from(key).await? {
            Some(boundary) => Error::invalid(
                "event_id",
                format!(
                    "session {} has no event {event_id:?} in its retained history (events before {} were dropped \
                     by its app's retention policy)",
                    key.session_id(),
                    micros_to_secs(boundary.at.timestamp_micros.saturating_add(1))
                ),
            ),
            None => Error::invalid("event_id", format!("session {} has no event {event_id:?}", key.session_id())),
        })
    }

    /// The event `event_id` (`Ok(None)`: no session), or the unknown-event error.
    async fn known_event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        match self.event(key, EventSelect::Id(event_id.to_owned())).await? {
            None => Ok(None),
            Some(Some(event)) => Ok(Some(event)),
            Some(None) => Err(self.missing_event(key, event_id).await?),
        }
    }

    /// The history state just before `cut_micros` (after every event older than it), for
    /// [`HistoryStore::drop_events_before`]; `None` if the session does not exist.
    pub(crate) async fn state_before(&self, key: &SessionKey, cut_micros: i64) -> Result<Option<HistorySnapshot>> {
        let at = cut_micros.saturating_sub(1);
        let folded = self.fold(key, &Target::Time(at)).await?;
        Ok(folded.map(|f| HistorySnapshot {
            at: EventCursor { timestamp_micros: at, event_id: String::new() },
            state: f.state,
        }))
    }

    /// See [`SessionService::state_at`](crate::SessionService::state_at).
    pub async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>> {
        let (target, created) = match at {
            HistoryAt::AfterEvent(id) | HistoryAt::BeforeEvent(id) => {
                let Some(event) = self.known_event(key, id).await? else { return Ok(None) };
                let position = EventCursor::of(&event);
                let target = match at {
                    HistoryAt::AfterEvent(_) => Target::Upto(position),
                    _ => Target::Before(position),
                };
                (target, None)
            }
            HistoryAt::Creation | HistoryAt::Time(_) => {
                let Some(session) = self.session(key).await? else { return Ok(None) };
                let target = match at {
                    HistoryAt::Time(secs) => Target::Time(time_after_creation(key, &session, *secs)?),
                    _ => Target::Time(i64::MIN),
                };
                (target, Some(session.create_time()))
            }
        };
        let Some(folded) = self.fold(key, &target).await? else { return Ok(None) };
        let creation = folded.at == EventCursor::CREATION;
        let timestamp = match (creation, created) {
            (false, _) => micros_to_secs(folded.at.timestamp_micros),
            (true, Some(created)) => created,
            // Before the first event: the session's creation time, read only now that it is needed.
            (true, None) => self.session(key).await?.map_or(0.0, |s| s.create_time()),
        };
        Ok(Some(StateAt { event_id: (!creation).then(|| folded.at.event_id.clone()), timestamp, state: folded.state }))
    }

    /// See [`SessionService::event_diff`](crate::SessionService::event_diff).
    pub async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        let Some(event) = self.known_event(key, event_id).await? else { return Ok(None) };
        let Some(before) = self.fold(key, &Target::Before(EventCursor::of(&event))).await? else { return Ok(None) };
        Ok(Some(EventDiff {
            event_id: event.id.clone(),
            timestamp: event.timestamp,
            invocation_id: event.invocation_id.clone(),
            author: event.author.clone(),
            changes: history::diff(&before.state, &event),
        }))
    }

    /// See [`SessionService::fork_session`](crate::SessionService::fork_session).
    pub async fn fork(&self, request: &ForkSession) -> Result<Session> {
        let source_key = &request.source;
        let missing = || Error::NotFound { session_id: source_key.session_id().to_owned() };
        let source = self.session(source_key).await?.ok_or_else(missing)?;
        let end = EventCursor::of(&self.known_event(source_key, &request.at_event_id).await?.ok_or_else(missing)?);
        let at_end = self.fold(source_key, &Target::Upto(end.clone())).await?.ok_or_else(missing)?;
        let creation =
            self.snapshot(source_key, i64::MIN).await?.filter(|s| s.at == EventCursor::CREATION).map(|s| s.state);
        let id =
            request.session_id.clone().filter(|id| !id.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let key = SessionKey::new(source_key.app_name(), source_key.user_id(), id)?;
        // The fork starts where its source started, so its events keep their times; only its own
        // keys are set (app: and user: state is shared, as always).
        let new = NewSession {
            key: key.clone(),
            state: ScopedState { session: history::session_keys(&at_end.state), ..ScopedState::default() },
            create_time_micros: source.create_time_micros(),
            attributes: SessionAttributes::default(),
            history_start: creation,
        };
        let boundary = self.retained_from(source_key).await?;
        let marker = self.store.create(new).await?.last_update_micros();
        let copy = EventCopy { from: source_key.clone(), to: key.clone(), upto: end, to_marker: marker };
        match self.history {
            Some(history) => {
                if let Some(boundary) = &boundary {
                    // The source's history starts at a retention boundary: so does the fork's.
                    history.put_snapshots(&key, std::slice::from_ref(boundary)).await?;
                }
                if let Some(last) = history.copy_events(&copy).await? {
                    let kept = HistorySnapshot { at: last, state: at_end.state };
                    if let Err(e) = history.put_snapshots(&key, &[kept]).await {
                        tracing::warn!(error = %e, session = key.session_id(), "keeping the fork's history snapshot failed");
                    }
                }
            }
            None => {
                copy_events(self.store, &copy).await?;
            }
        }
        self.session(&key).await?.ok_or_else(|| Error::NotFound { session_id: key.session_id().to_owned() })
    }
}

/// `secs` in epoch microseconds, refused when it is before the session was created.
fn time_after_creation(key: &SessionKey, session: &Session, secs: f64) -> Result<i64> {
    let micros = secs_to_micros(secs)
        .ok_or_else(|| Error::invalid("at", format!("{secs} is not a valid epoch time in seconds")))?;
    if micros < session.create_time_micros() {
        return Err(Error::invalid(
            "at",
            format!("{secs} is before session {} was created ({})", key.session_id(), session.create_time()),
        ));
    }
    Ok(micros)
}

fn behind_window(key: &SessionKey, boundary: &HistorySnapshot) -> Error {
    Error::invalid(
        "at",
        format!(
            "session {}'s history before {} was dropped by its app's retention policy; the oldest state kept is \
             the one just before that time",
            key.session_id(),
            micros_to_secs(boundary.at.timestamp_micros.saturating_add(1))
        ),
    )
}

/// [`HistoryStore::copy_events`] with one commit per event, through the core alone: for stores
/// without history, and for the cases a store's own copy cannot take. Expiry is not judged (the
/// service checked the source before the fork began).
pub async fn copy_events(store: &dyn SessionStore, copy: &EventCopy) -> Result<Option<EventCursor>> {
    let EventCopy { from, to, upto, to_marker } = copy;
    let missing = || Error::NotFound { session_id: from.session_id().to_owned() };
    let mut marker = *to_marker;
    let mut last = None;
    let mut after = None;
    'pages: loop {
        let query = EventQuery {
            key: from.clone(),
            select: EventSelect::Page { after: after.clone(), since_micros: None, limit: PAGE },
            now_micros: i64::MIN,
        };
        let page = store.events(&query).await?.ok_or_else(missing)?;
        let full = page.len() == PAGE;
        for event in page {
            let position = EventCursor::of(&event);
            if position > *upto {
                break 'pages;
            }
            after = Some(position.clone());
            // History only: no delta is applied again.
            let event_id = event.id.clone();
            let commit = EventCommit::history_only(to.clone(), marker, event);
            marker = commit.timestamp_micros;
            store.commit(commit).await?;
            last = Some(EventCursor { timestamp_micros: marker, event_id });
        }
        if !full {
            break;
        }
    }
    Ok(last)
}
