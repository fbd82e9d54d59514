//! The provided history operations of [`SessionStore`]: replay from the newest snapshot, keep
//! snapshots along the way, fork by copying history. Public for stores that override one of
//! these methods and fall back to the provided behaviour in some cases.

use std::sync::Arc;

use serde_json::Map;

use super::{
    EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, NewSession, ScopedKeys, ScopedState,
    SessionStore, micros_to_secs, secs_to_micros,
};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{self, EventDiff, ForkSession, HistoryAt, SNAPSHOT_EVERY, StateAt};
use crate::key::SessionKey;
use crate::session::Session;

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

/// The history state at `target`, and the position it is at; `None` if the session does not
/// exist.
async fn fold<S: SessionStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    target: &Target,
) -> Result<Option<HistorySnapshot>> {
    let mut bound = target.snapshot_bound();
    let start = loop {
        match store.history_snapshot(key, bound).await? {
            // Only events sharing one time (written by another program) can put a snapshot
            // past the target at its time: look before it.
            Some(snapshot) if !target.admits(&snapshot.at) => bound = snapshot.at.timestamp_micros.saturating_sub(1),
            found => break found,
        }
    };
    if start.is_none()
        && let Some(boundary) = retained_from(store, key).await?
    {
        return Err(behind_window(key, &boundary));
    }
    let HistorySnapshot { mut at, mut state } =
        start.unwrap_or(HistorySnapshot { at: EventCursor::CREATION, state: Map::new() });
    // Snapshots are at most SNAPSHOT_EVERY events apart once a replay kept them: read that many
    // first, and whole pages only when replaying further (a first question).
    let mut query = EventQuery {
        key: key.clone(),
        after: (at != EventCursor::CREATION).then(|| at.clone()),
        since_micros: None,
        limit: SNAPSHOT_EVERY,
    };
    let (mut replayed, mut keep) = (0usize, Vec::new());
    'pages: loop {
        let Some(page) = store.events(&query).await? else { return Ok(None) };
        let full = page.len() == query.limit;
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
        query.after = Some(at.clone());
        query.limit = PAGE;
    }
    if !keep.is_empty()
        && let Err(e) = store.put_history_snapshots(key, &keep).await
    {
        // A read does not fail because it could not save work for the next one.
        tracing::warn!(error = %e, session = key.session_id(), "keeping history snapshots failed");
    }
    Ok(Some(HistorySnapshot { at, state }))
}

fn unknown_event(key: &SessionKey, event_id: &str) -> Error {
    Error::invalid("event_id", format!("session {} has no event {event_id:?}", key.session_id()))
}

/// The snapshot a retention policy left as the oldest point of the session's history (see
/// [`SessionStore::drop_events_before`]), if events were dropped.
pub async fn retained_from<S: SessionStore + ?Sized>(store: &S, key: &SessionKey) -> Result<Option<HistorySnapshot>> {
    let first = EventQuery { key: key.clone(), after: None, since_micros: None, limit: 1 };
    let bound = match store.events(&first).await?.and_then(|page| page.into_iter().next()) {
        Some(event) => EventCursor::of(&event).timestamp_micros.saturating_sub(1),
        None => i64::MAX,
    };
    let found = store.history_snapshot(key, bound).await?;
    Ok(found.filter(|s| s.at.event_id.is_empty() && s.at != EventCursor::CREATION))
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

/// The unknown-event error, saying so when the event may have been dropped by retention.
async fn missing_event<S: SessionStore + ?Sized>(store: &S, key: &SessionKey, event_id: &str) -> Result<Error> {
    Ok(match retained_from(store, key).await? {
        Some(boundary) => Error::invalid(
            "event_id",
            format!(
                "session {} has no event {event_id:?} in its retained history (events before {} were dropped by \
                 its app's retention policy)",
                key.session_id(),
                micros_to_secs(boundary.at.timestamp_micros.saturating_add(1))
            ),
        ),
        None => unknown_event(key, event_id),
    })
}

/// The history state just before `cut_micros` (after every event older than it), for
/// [`SessionStore::drop_events_before`]; `None` if the session does not exist.
pub async fn state_before<S: SessionStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    cut_micros: i64,
) -> Result<Option<HistorySnapshot>> {
    let at = cut_micros.saturating_sub(1);
    let folded = fold(store, key, &Target::Time(at)).await?;
    Ok(folded
        .map(|f| HistorySnapshot { at: EventCursor { timestamp_micros: at, event_id: String::new() }, state: f.state }))
}

/// The session without events, `None` if it does not exist.
async fn session<S: SessionStore + ?Sized>(store: &S, key: &SessionKey) -> Result<Option<Session>> {
    store.get(key, EventWindow { recent: Some(0), after_micros: None }).await
}

/// The position of event `event_id`, or the unknown-event error.
async fn position<S: SessionStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    event_id: &str,
) -> Result<(EventCursor, Event)> {
    match store.event(key, event_id).await? {
        Some(event) => Ok((EventCursor::of(&event), event)),
        None => Err(missing_event(store, key, event_id).await?),
    }
}

/// The provided [`SessionStore::state_at`].
pub async fn state_at<S: SessionStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    at: &HistoryAt,
) -> Result<Option<StateAt>> {
    let (target, created) = match at {
        HistoryAt::AfterEvent(id) | HistoryAt::BeforeEvent(id) => {
            // The event's lookup answers for the session too: only a miss needs to ask which.
            let Some(event) = store.event(key, id).await? else {
                return match session(store, key).await? {
                    None => Ok(None),
                    Some(_) => Err(missing_event(store, key, id).await?),
                };
            };
            let position = EventCursor::of(&event);
            let target =
                if matches!(at, HistoryAt::AfterEvent(_)) { Target::Upto(position) } else { Target::Before(position) };
            (target, None)
        }
        HistoryAt::Creation | HistoryAt::Time(_) => {
            let Some(session) = session(store, key).await? else { return Ok(None) };
            let target = match at {
                HistoryAt::Time(secs) => {
                    let micros = secs_to_micros(*secs)
                        .ok_or_else(|| Error::invalid("at", format!("{secs} is not a valid epoch time in seconds")))?;
                    if micros < session.create_time_micros() {
                        return Err(Error::invalid(
                            "at",
                            format!(
                                "{secs} is before session {} was created ({})",
                                key.session_id(),
                                session.create_time()
                            ),
                        ));
                    }
                    Target::Time(micros)
                }
                _ => Target::Time(i64::MIN),
            };
            (target, Some(session.create_time()))
        }
    };
    let Some(folded) = fold(store, key, &target).await? else { return Ok(None) };
    let creation = folded.at == EventCursor::CREATION;
    let timestamp = match (creation, created) {
        (false, _) => micros_to_secs(folded.at.timestamp_micros),
        (true, Some(created)) => created,
        // Before the first event: the session's creation time, read only now that it is needed.
        (true, None) => session(store, key).await?.map_or(0.0, |s| s.create_time()),
    };
    Ok(Some(StateAt { event_id: (!creation).then(|| folded.at.event_id.clone()), timestamp, state: folded.state }))
}

/// The provided [`SessionStore::event_diff`].
pub async fn event_diff<S: SessionStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    event_id: &str,
) -> Result<Option<EventDiff>> {
    let Some(event) = store.event(key, event_id).await? else {
        return match session(store, key).await? {
            None => Ok(None),
            Some(_) => Err(missing_event(store, key, event_id).await?),
        };
    };
    let Some(before) = fold(store, key, &Target::Before(EventCursor::of(&event))).await? else { return Ok(None) };
    Ok(Some(EventDiff {
        event_id: event.id.clone(),
        timestamp: event.timestamp,
        invocation_id: event.invocation_id.clone(),
        author: event.author.clone(),
        changes: history::diff(&before.state, &event),
    }))
}

/// The provided [`SessionStore::copy_events`]: one commit per event.
pub async fn copy_events<S: SessionStore + ?Sized>(
    store: &S,
    from: &SessionKey,
    to: &SessionKey,
    upto: &EventCursor,
    to_marker: i64,
) -> Result<Option<EventCursor>> {
    let missing = || Error::NotFound { session_id: from.session_id().to_owned() };
    let mut marker = to_marker;
    let mut last = None;
    let mut query = EventQuery { key: from.clone(), after: None, since_micros: None, limit: PAGE };
    'pages: loop {
        let page = store.events(&query).await?.ok_or_else(missing)?;
        let full = page.len() == PAGE;
        for event in page {
            let position = EventCursor::of(&event);
            if position > *upto {
                break 'pages;
            }
            query.after = Some(position.clone());
            // History only: no delta is applied again.
            let timestamp_micros = position.timestamp_micros.max(marker.saturating_add(1));
            let event_id = event.id.clone();
            let commit = EventCommit {
                key: to.clone(),
                expected_last_update_micros: marker,
                event: Arc::new(Event { timestamp: micros_to_secs(timestamp_micros), ..event }),
                timestamp_micros,
                delta: ScopedState::default(),
                deleted: ScopedKeys::default(),
            };
            store.commit(commit).await?;
            marker = timestamp_micros;
            last = Some(EventCursor { timestamp_micros, event_id });
        }
        if !full {
            break;
        }
    }
    Ok(last)
}

/// The provided [`SessionStore::fork`].
pub async fn fork<S: SessionStore + ?Sized>(store: &S, request: &ForkSession) -> Result<Session> {
    let source_key = &request.source;
    let missing = || Error::NotFound { session_id: source_key.session_id().to_owned() };
    let source = session(store, source_key).await?.ok_or_else(missing)?;
    let (end, _) = position(store, source_key, &request.at_event_id).await?;
    let at_end = fold(store, source_key, &Target::Upto(end.clone())).await?.ok_or_else(missing)?;
    let creation =
        store.history_snapshot(source_key, i64::MIN).await?.filter(|s| s.at == EventCursor::CREATION).map(|s| s.state);
    let id = request.session_id.clone().filter(|id| !id.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let key = SessionKey::new(source_key.app_name(), source_key.user_id(), id)?;
    // The fork starts where its source started, so its events keep their times; only its own
    // keys are set (app: and user: state is shared, as always).
    let new = NewSession {
        key: key.clone(),
        state: ScopedState { session: history::session_keys(&at_end.state), ..ScopedState::default() },
        create_time_micros: source.create_time_micros(),
        attributes: crate::SessionAttributes::default(),
        history_start: creation,
    };
    let boundary = retained_from(store, source_key).await?;
    let marker = store.create(new).await?.last_update_micros();
    if let Some(boundary) = &boundary {
        // The source's history starts at a retention boundary: so does the fork's.
        store.put_history_snapshots(&key, std::slice::from_ref(boundary)).await?;
    }
    let last = store.copy_events(source_key, &key, &end, marker).await?;
    if let Some(last) = last
        && let Err(e) = store.put_history_snapshots(&key, &[HistorySnapshot { at: last, state: at_end.state }]).await
    {
        tracing::warn!(error = %e, session = key.session_id(), "keeping the fork's history snapshot failed");
    }
    session(store, &key).await?.ok_or_else(|| Error::NotFound { session_id: key.session_id().to_owned() })
}
