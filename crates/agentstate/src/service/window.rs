//! Event windows to the nanosecond. Storage selects events by the microsecond they are stored
//! at, the one nearest their time; a bound finer than that is met by dropping what storage
//! selects at the bound's own microsecond but falls outside it. A session has at most one event
//! per microsecond, so that is at most one event at each end.

use crate::compaction::{self, Facts};
use crate::event::Event;
use crate::store::{EventWindow, LoadedSession};
use crate::time::Timestamp;

/// `loaded` (every event) narrowed to the compacted view with this `overlap`, then to `window`
/// (of the view's events: the newest `recent`, those at or after `since_micros`).
pub(super) fn compacted(mut loaded: LoadedSession, overlap: usize, window: EventWindow) -> LoadedSession {
    match &mut loaded.stored_events {
        Some(stored) => {
            let facts: Vec<Facts> = stored.iter().map(Facts::of_stored).collect();
            let kept = compaction::view(&facts, overlap);
            let from = window.first_kept(&kept, |&i| stored[i].timestamp_micros);
            crate::session::keep_positions(stored, &kept[from..]);
        }
        None => {
            let events = loaded.session.events();
            let facts: Vec<Facts> = events.iter().map(Facts::of).collect();
            let kept = compaction::view(&facts, overlap);
            let from = window.first_kept(&kept, |&i| events[i].time().micros());
            loaded.session.keep_events(&kept[from..]);
        }
    }
    loaded
}

/// `loaded` (a view's events) narrowed to `window`.
pub(super) fn narrowed(mut loaded: LoadedSession, window: EventWindow) -> LoadedSession {
    match &mut loaded.stored_events {
        Some(stored) => {
            let from = window.first_kept(stored, |e| e.timestamp_micros);
            stored.drain(..from);
        }
        None => {
            let events = loaded.session.events();
            let from = window.first_kept(events.shared(), |e| e.time().micros());
            let kept: Vec<usize> = (from..events.len()).collect();
            loaded.session.keep_events(&kept);
        }
    }
    loaded
}

/// `since` when it is finer than storage selects by (not a whole microsecond): what
/// [`since`] has left to do after the store's answer.
pub(super) fn finer_than_storage(since: Option<Timestamp>) -> Option<Timestamp> {
    since.filter(|t| !t.is_whole_micros())
}

/// `loaded` without an event before `since` (its first, if any).
pub(super) fn since(mut loaded: LoadedSession, since: Option<Timestamp>) -> LoadedSession {
    let Some(since) = finer_than_storage(since) else { return loaded };
    match &mut loaded.stored_events {
        Some(stored) => {
            if stored.first().is_some_and(|e| e.time() < since) {
                stored.remove(0);
            }
        }
        None => {
            if loaded.session.events().first().is_some_and(|e| e.time() < since) {
                loaded.session.drop_first_event();
            }
        }
    }
    loaded
}

/// `events` (oldest first) without the first if it is before `since`.
pub(super) fn drop_before(events: &mut Vec<Event>, since: Option<Timestamp>) {
    if let Some(since) = since
        && events.first().is_some_and(|e| e.time() < since)
    {
        events.remove(0);
    }
}

/// `events` (oldest first) without the last if it is after `until`.
pub(super) fn drop_after(events: &mut Vec<Event>, until: Option<Timestamp>) {
    if let Some(until) = until
        && events.last().is_some_and(|e| e.time() > until)
    {
        events.pop();
    }
}
