//! Sessions read to be written out, not changed: their events as the store keeps them, so an
//! answer of many events is written from the stored text instead of decoded and encoded again
//! (see [`write_stored_event`](crate::wire::write_stored_event)). "Stored" means this
//! throughout: as the store keeps it, not decoded (nor, for the state, decrypted).

use crate::compaction::EventView;
use crate::event::Event;
use crate::session::Session;
use crate::time::Timestamp;

/// An event as a store keeps it: the JSON text of the reference's `event_data` (snake_case) and
/// its row's own columns.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The row's event id; it wins over one in the text.
    pub id: String,
    /// The row's invocation id; it wins over one in the text.
    pub invocation_id: String,
    /// The row's time, epoch microseconds: the event's when the text has no `timestamp`.
    pub timestamp_micros: i64,
    /// The JSON text; `None` for a row without one.
    pub data: Option<String>,
}

impl StoredEvent {
    /// The event's time: its text's (to the nanosecond), else its row's.
    pub fn time(&self) -> Timestamp {
        let own = self.data.as_deref().and_then(|text| Event::from_stored_json(text).ok());
        match own {
            Some((event, true)) => event.time(),
            _ => Timestamp::from_micros(self.timestamp_micros),
        }
    }
}

/// Events written as the API shows them: each event's JSON object, oldest first, separated by
/// commas (an array's contents, without its brackets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrittenEvents {
    /// The JSON text.
    pub json: Vec<u8>,
    /// How many events it holds.
    pub count: usize,
}

/// What a session read returns: the handle, and its events as stored text when they were asked
/// for in that form ([`EventForm::Stored`](super::EventForm::Stored)) and the store keeps them
/// so, or already written ([`EventForm::Written`](super::EventForm::Written)); the handle then
/// holds none of them.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The session; with its events when neither `stored_events` nor `written_events` is set.
    pub session: Session,
    /// The events as stored, oldest first, if they came in that form.
    pub stored_events: Option<Vec<StoredEvent>>,
    /// The events written as the API shows them, if they came in that form.
    pub written_events: Option<WrittenEvents>,
    /// Which events these are: every event of the read's window ([`EventView::Whole`]), or the
    /// compacted view the read asked for, answered by the store.
    pub view: EventView,
}

impl LoadedSession {
    /// A session with its events decoded.
    pub fn decoded(session: Session) -> Self {
        Self { session, stored_events: None, written_events: None, view: EventView::Whole }
    }

    /// A session with its events as stored.
    pub fn stored(session: Session, events: Vec<StoredEvent>) -> Self {
        Self { session, stored_events: Some(events), written_events: None, view: EventView::Whole }
    }

    /// A session with its events written as the API shows them.
    pub fn written(session: Session, events: WrittenEvents) -> Self {
        Self { session, stored_events: None, written_events: Some(events), view: EventView::Whole }
    }

    /// How many events it carries, in any form.
    pub fn event_count(&self) -> usize {
        match (&self.stored_events, &self.written_events) {
            (Some(stored), _) => stored.len(),
            (None, Some(written)) => written.count,
            (None, None) => self.session.events().len(),
        }
    }
}
