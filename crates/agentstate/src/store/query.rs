//! What the core store operations read: a session in a window and a form, a page of sessions,
//! events by query. Every read carries the time expiry is judged at (`now_micros`): a session
//! whose expire time is at or before it is missing to every read and write, in the statement
//! that reads it.
//!
//! The helpers (`slice`, `pick`, `admits`) answer a query over events or sessions held in
//! memory: the in-memory store uses them, and so can a simple store of one's own.

use std::borrow::Borrow;

use crate::compaction::EventView;
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::Session;

use super::filter::{ListOrder, SessionFilter, TimeRange};

/// Which events a session read returns, oldest first: those at or after `since_micros`, of
/// those the `recent` newest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventWindow {
    /// At most this many of the newest events; `None` for no limit.
    pub recent: Option<usize>,
    /// Only events with a timestamp at or after this (epoch microseconds).
    pub since_micros: Option<i64>,
}

impl EventWindow {
    /// No events: the session's state and marker alone.
    pub const NONE: EventWindow = EventWindow { recent: Some(0), since_micros: None };
    /// Every event.
    pub const ALL: EventWindow = EventWindow { recent: None, since_micros: None };

    /// The part of `events` (in storage order) this window keeps.
    pub fn slice<'e, E: Borrow<Event>>(&self, events: &'e [E]) -> &'e [E] {
        &events[self.first_kept(events, |e| micros(e.borrow()))..]
    }

    /// Where the part this window keeps of `items` (in storage order, each stored at the
    /// microsecond `micros` gives) starts.
    pub fn first_kept<T>(&self, items: &[T], micros: impl Fn(&T) -> i64) -> usize {
        let by_time = self.since_micros.map_or(0, |since| items.partition_point(|item| micros(item) < since));
        let by_count = self.recent.map_or(0, |n| items.len().saturating_sub(n));
        by_time.max(by_count)
    }
}

/// How a session read hands over its events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventForm {
    /// As [`Event`]s in the session handle.
    #[default]
    Decoded,
    /// As the store keeps them ([`StoredEvent`](super::StoredEvent)s), when it keeps JSON text:
    /// for writing them out undecoded. A store that keeps no text answers decoded events.
    Stored,
    /// Written as the API shows them ([`WrittenEvents`](super::WrittenEvents)), from their
    /// stored text as each row is read, when the store keeps text and can; else as for
    /// [`Stored`](Self::Stored). Asked for only for a read whose events need nothing done after
    /// the store's answer: the whole view, no bound finer than a microsecond.
    Written,
}

/// A session read: which events, in which form, and the time expiry is judged at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRead {
    /// The events.
    pub window: EventWindow,
    /// Their form.
    pub form: EventForm,
    /// The session is missing if it expired at or before this (epoch microseconds).
    pub now_micros: i64,
    /// The events asked for: with [`EventView::Compacted`] (and `window` [`EventWindow::ALL`]),
    /// a store that keeps each event's [`Facts`](crate::compaction::Facts) may answer only the
    /// compacted view, reading only those events, and say so in
    /// [`LoadedSession::view`](super::LoadedSession::view); any store may answer every event.
    pub view: EventView,
}

impl SessionRead {
    /// Decoded events in `window`, at `now_micros`.
    pub fn decoded(window: EventWindow, now_micros: i64) -> Self {
        Self { window, form: EventForm::Decoded, now_micros, view: EventView::Whole }
    }

    /// The overlap of the compacted view this read asks for, when it asks for one of every
    /// event: what a store that answers views answers itself.
    pub fn compacted(&self) -> Option<usize> {
        match self.view {
            EventView::Compacted { overlap } if self.window == EventWindow::ALL => Some(overlap),
            _ => None,
        }
    }
}

/// Where a page of sessions starts: strictly after this position in the order (the order's
/// time, user id, session id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListCursor {
    /// The previous page's last session's time in the list's order ([`ListOrder`]): its last
    /// update or its creation, epoch microseconds.
    pub at_micros: i64,
    /// Its user id.
    pub user_id: String,
    /// Its session id.
    pub session_id: String,
}

impl ListCursor {
    /// The position of `session` in a list in `order`.
    pub fn of(session: &Session, order: ListOrder) -> Self {
        Self {
            at_micros: order.micros_of(session),
            user_id: session.user_id().to_owned(),
            session_id: session.id().to_owned(),
        }
    }
}

/// A page of sessions, in the order (the order's time, user id, session id), or in its reverse
/// when `descending`, of those the filter admits (see [`SessionFilter`] for what a store must
/// apply of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The app.
    pub app_name: String,
    /// One user, or every user of the app.
    pub user_id: Option<String>,
    /// Start strictly after this position, in the order asked (so strictly before it, in
    /// ascending terms, when `descending`).
    pub after: Option<ListCursor>,
    /// The time sessions are ordered by.
    pub order: ListOrder,
    /// Newest first.
    pub descending: bool,
    /// Which sessions are admitted, beyond the app and the user.
    pub filter: SessionFilter,
    /// At most this many sessions; `None` for all.
    pub limit: Option<usize>,
    /// Sessions expired at or before this (epoch microseconds) are left out.
    pub now_micros: i64,
}

impl ListQuery {
    /// Whether a session of `user_id` at this position (its time in the order), expiring at
    /// `expire_micros`, belongs in the page (the app, the limit and the filter aside).
    pub fn admits(&self, at_micros: i64, user_id: &str, session_id: &str, expire_micros: Option<i64>) -> bool {
        self.user_id.as_deref().is_none_or(|u| u == user_id)
            && crate::session::live_at(expire_micros, self.now_micros)
            && self.after.as_ref().is_none_or(|c| {
                let order = (at_micros, user_id, session_id).cmp(&(c.at_micros, &c.user_id, &c.session_id));
                order == if self.descending { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }
            })
    }

    /// The same query from the start (no cursor), every session: what [`SessionStore::count_sessions`]
    /// counts.
    ///
    /// [`SessionStore::count_sessions`]: super::SessionStore::count_sessions
    pub fn whole(&self) -> Self {
        Self { after: None, limit: None, ..self.clone() }
    }

    /// Every session of `app_name` (and `user_id`) live at `now_micros`, oldest update first.
    pub fn all(app_name: impl Into<String>, user_id: Option<String>, now_micros: i64) -> Self {
        Self {
            app_name: app_name.into(),
            user_id,
            after: None,
            order: ListOrder::UpdateTime,
            descending: false,
            filter: SessionFilter::default(),
            limit: None,
            now_micros,
        }
    }

    /// The range of the order's time the filter allows: what a store reading an index in that
    /// order may start and stop at.
    pub fn order_range(&self) -> TimeRange {
        self.filter.range_of(self.order)
    }

    /// The sessions of `sessions` this query admits, sorted in its order and cut to its limit:
    /// for a store that reads candidates in any order.
    pub fn arrange(&self, mut sessions: Vec<Session>) -> Vec<Session> {
        sessions.retain(|s| {
            self.admits(self.order.micros_of(s), s.user_id(), s.id(), s.attributes().expire_time_micros)
                && self.filter.admits(s)
        });
        sessions.sort_by(|a, b| {
            (self.order.micros_of(a), a.user_id(), a.id()).cmp(&(self.order.micros_of(b), b.user_id(), b.id()))
        });
        if self.descending {
            sessions.reverse();
        }
        sessions.truncate(self.limit.unwrap_or(usize::MAX));
        sessions
    }
}

/// A position in a session's history, in storage order (timestamp, then id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventCursor {
    /// The event's timestamp, epoch microseconds.
    pub timestamp_micros: i64,
    /// Its id.
    pub event_id: String,
}

impl EventCursor {
    /// The position of a session's creation, before every event.
    pub const CREATION: EventCursor = EventCursor { timestamp_micros: i64::MIN, event_id: String::new() };

    /// The position of `event`.
    pub fn of(event: &Event) -> Self {
        Self { timestamp_micros: micros(event), event_id: event.id.clone() }
    }
}

/// Which events of a session [`SessionStore::events`](super::SessionStore::events) returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSelect {
    /// A page in storage order: strictly after `after` (from the oldest if `None`), at or
    /// after `since_micros`, at most `limit`.
    Page {
        /// Start strictly after this position.
        after: Option<EventCursor>,
        /// Only events with a timestamp at or after this (epoch microseconds).
        since_micros: Option<i64>,
        /// At most this many events.
        limit: usize,
    },
    /// A page backwards: the newest `limit` events strictly before `before` (the newest of all
    /// if `None`) and at or after `since_micros`, answered oldest first like every selection.
    Latest {
        /// End strictly before this position.
        before: Option<EventCursor>,
        /// Only events with a timestamp at or after this (epoch microseconds).
        since_micros: Option<i64>,
        /// At most this many events.
        limit: usize,
    },
    /// The event with this id (none or one).
    Id(String),
    /// The oldest event of this invocation (none or one).
    FirstOfInvocation(String),
}

impl EventSelect {
    /// The first `limit` events.
    pub fn first(limit: usize) -> Self {
        Self::Page { after: None, since_micros: None, limit }
    }

    /// What this selects from `events` (in storage order).
    pub fn pick<E: Borrow<Event> + Clone>(&self, events: &[E]) -> Vec<E> {
        match self {
            Self::Page { after, since_micros, limit } => {
                let after = after.as_ref().map_or(0, |c| {
                    events.partition_point(|e| {
                        let e = e.borrow();
                        (micros(e), e.id.as_str()) <= (c.timestamp_micros, c.event_id.as_str())
                    })
                });
                let since = since_micros.map_or(0, |s| events.partition_point(|e| micros(e.borrow()) < s));
                events.iter().skip(after.max(since)).take(*limit).cloned().collect()
            }
            Self::Latest { before, since_micros, limit } => {
                let end = before.as_ref().map_or(events.len(), |c| {
                    events.partition_point(|e| {
                        let e = e.borrow();
                        (micros(e), e.id.as_str()) < (c.timestamp_micros, c.event_id.as_str())
                    })
                });
                let since = since_micros.map_or(0, |s| events.partition_point(|e| micros(e.borrow()) < s));
                let start = since.max(end.saturating_sub(*limit));
                events.get(start..end).unwrap_or_default().to_vec()
            }
            Self::Id(id) => events.iter().filter(|e| Borrow::<Event>::borrow(*e).id == *id).take(1).cloned().collect(),
            Self::FirstOfInvocation(invocation) => events
                .iter()
                .filter(|e| Borrow::<Event>::borrow(*e).invocation_id == *invocation)
                .take(1)
                .cloned()
                .collect(),
        }
    }
}

/// Events of one session: which, and the time expiry is judged at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventQuery {
    /// The session.
    pub key: SessionKey,
    /// Which events.
    pub select: EventSelect,
    /// The session is missing if it expired at or before this (epoch microseconds).
    pub now_micros: i64,
}

/// The microsecond an event is stored in.
fn micros(event: &Event) -> i64 {
    event.time().micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Vec<Event> {
        (1..=5)
            .map(|i| {
                let mut e = Event::new(if i % 2 == 0 { "even" } else { "odd" });
                e.id = format!("e{i}");
                e.timestamp = f64::from(i);
                e
            })
            .collect()
    }

    fn ids(events: &[Event]) -> Vec<&str> {
        events.iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn windows_and_selections_pick_what_they_say() {
        let all = events();
        let window = EventWindow { recent: Some(3), since_micros: Some(4_000_000) };
        assert_eq!(ids(window.slice(&all)), ["e4", "e5"]);
        assert_eq!(ids(EventWindow::NONE.slice(&all)), Vec::<&str>::new());
        let after = EventCursor { timestamp_micros: 2_000_000, event_id: "e2".into() };
        let page = EventSelect::Page { after: Some(after), since_micros: None, limit: 2 };
        assert_eq!(ids(&page.pick(&all)), ["e3", "e4"]);
        assert_eq!(ids(&EventSelect::Id("e4".into()).pick(&all)), ["e4"]);
        let latest =
            |before: Option<EventCursor>, since_micros, limit| EventSelect::Latest { before, since_micros, limit };
        assert_eq!(ids(&latest(None, None, 2).pick(&all)), ["e4", "e5"]);
        let before_e4 = Some(EventCursor::of(&all[3]));
        assert_eq!(ids(&latest(before_e4.clone(), None, 2).pick(&all)), ["e2", "e3"]);
        assert_eq!(ids(&latest(before_e4, Some(micros(&all[2])), 9).pick(&all)), ["e3"]);
        assert!(latest(Some(EventCursor::of(&all[0])), None, 3).pick(&all).is_empty());
        assert_eq!(ids(&EventSelect::FirstOfInvocation("even".into()).pick(&all)), ["e2"]);
    }

    #[test]
    fn list_queries_admit_by_user_position_and_expiry() {
        let query = ListQuery {
            app_name: "app".into(),
            user_id: Some("u".into()),
            after: Some(ListCursor { at_micros: 10, user_id: "u".into(), session_id: "b".into() }),
            order: ListOrder::UpdateTime,
            descending: false,
            filter: SessionFilter::default(),
            limit: None,
            now_micros: 100,
        };
        assert!(query.admits(10, "u", "c", None));
        assert!(!query.admits(10, "u", "b", None), "the cursor itself");
        assert!(!query.admits(11, "v", "a", None), "another user");
        assert!(!query.admits(11, "u", "a", Some(100)), "expired at now");
        assert!(query.admits(11, "u", "a", Some(101)));
        let back = ListQuery { descending: true, ..query };
        assert!(back.admits(10, "u", "a", None) && back.admits(9, "u", "z", None), "before the cursor");
        assert!(
            !back.admits(10, "u", "b", None) && !back.admits(10, "u", "c", None) && !back.admits(11, "u", "a", None)
        );
    }
}
