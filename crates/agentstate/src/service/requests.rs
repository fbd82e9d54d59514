//! The arguments and answers of [`SessionService`](crate::SessionService)'s calls.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::compaction::EventView;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::session::{Session, SessionAttributes};
use crate::store::{EventWindow, ListOrder, SessionFilter, secs_to_micros};
use crate::time::Timestamp;

/// Arguments of [`SessionService::create_session`](crate::SessionService::create_session).
///
/// ```
/// use agentstate::CreateSession;
/// use serde_json::json;
/// let request = CreateSession::new("my_app", "alice")
///     .id("s1")
///     .state("app:theme", json!("dark"))
///     .state("context", json!("session1"));
/// assert_eq!(request.state.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreateSession {
    /// The app.
    pub app_name: String,
    /// The user.
    pub user_id: String,
    /// The id to use; `None` or empty → a generated UUIDv4.
    pub session_id: Option<String>,
    /// Initial state, keys with their scope prefix; `temp:` keys are dropped.
    pub state: Map<String, Value>,
    /// Display name, labels, expiry.
    pub attributes: SessionAttributes,
    /// Expires this long after creation, by the service's clock (instead of
    /// `attributes.expire_time_micros`; not both). Neither: the service's default for the app.
    pub ttl: Option<Duration>,
}

impl CreateSession {
    /// A request for a new session of `user_id` in `app_name`, with a generated id and no state.
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), user_id: user_id.into(), ..Self::default() }
    }

    /// Uses this session id.
    #[must_use]
    pub fn id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Adds one initial state key.
    #[must_use]
    pub fn state(mut self, key: impl Into<String>, value: Value) -> Self {
        self.state.insert(key.into(), value);
        self
    }

    /// Replaces the initial state.
    #[must_use]
    pub fn with_state(mut self, state: Map<String, Value>) -> Self {
        self.state = state;
        self
    }

    /// A name to show people.
    #[must_use]
    pub fn display_name(mut self, name: impl Into<String>) -> Self {
        self.attributes.display_name = Some(name.into());
        self
    }

    /// Adds a label.
    #[must_use]
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attributes.labels.insert(key.into(), value.into());
        self
    }

    /// Expires at `time` (epoch seconds).
    #[must_use]
    pub fn expire_time(mut self, time: f64) -> Self {
        self.attributes.expire_time_micros = secs_to_micros(time);
        self
    }

    /// Expires `ttl` after its creation.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Which events [`SessionService::get_session`](crate::SessionService::get_session) loads. The
/// default loads all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GetSessionConfig {
    /// `None`: all events; `Some(0)`: none; `Some(n)`: the `n` most recent.
    pub num_recent_events: Option<usize>,
    /// Only events whose time is at or after this (to the nanosecond).
    pub after_timestamp: Option<Timestamp>,
    /// Every event, or only those ADK reads of a compacted history (see
    /// [`compaction`](crate::compaction)); the two bounds above apply to what it answers.
    pub view: EventView,
}

impl GetSessionConfig {
    /// Loads only the `n` most recent events.
    pub fn recent(n: usize) -> Self {
        Self { num_recent_events: Some(n), ..Self::default() }
    }

    /// Loads the compacted view of an app compacting with this overlap.
    pub fn compacted(overlap: usize) -> Self {
        Self { view: EventView::Compacted { overlap }, ..Self::default() }
    }

    /// The events storage selects: by the microsecond nearest the bound (the service drops
    /// an event of that microsecond that is before it).
    pub(crate) fn window(self) -> EventWindow {
        EventWindow { recent: self.num_recent_events, since_micros: self.after_timestamp.map(Timestamp::micros) }
    }
}

/// An optional epoch-seconds argument in epoch microseconds.
pub(crate) fn timestamp_micros(field: &'static str, secs: Option<f64>) -> Result<Option<i64>> {
    secs.map(|t| {
        secs_to_micros(t).ok_or_else(|| Error::invalid(field, format!("{t} is not a valid epoch time in seconds")))
    })
    .transpose()
}

/// Arguments of [`SessionService::list_sessions`](crate::SessionService::list_sessions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListSessions {
    /// The app.
    pub app_name: String,
    /// One user, or `None` for every user of the app.
    pub user_id: Option<String>,
    /// At most this many sessions per page; `None` for all in one page.
    pub page_size: Option<usize>,
    /// `next_page_token` of the previous page.
    pub page_token: Option<String>,
    /// The time sessions are ordered by: last update (the default) or creation.
    pub order_by: ListOrder,
    /// Newest first instead of oldest first. A page token continues the order it was made in
    /// (and is refused with another).
    pub newest_first: bool,
    /// Which sessions to list, beyond the app and the user (display name, labels, time ranges,
    /// state values); [`filter::parse_session_filter`](crate::filter::parse_session_filter)
    /// reads one from Google's filter syntax.
    pub filter: SessionFilter,
    /// Skip this many sessions first (after the page token, if any): ADK for TypeScript's
    /// `offset`. They are read and dropped, so a large offset costs what it skips.
    pub offset: usize,
    /// Also count every session the list covers, all pages ([`SessionPage::total_size`]).
    pub count: bool,
}

impl ListSessions {
    /// Every session of `user_id` in `app_name`, in one page.
    pub fn user(app_name: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), user_id: Some(user_id.into()), ..Self::default() }
    }

    /// Every session of every user of `app_name`, in one page.
    pub fn app(app_name: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), ..Self::default() }
    }

    /// Pages of at most `page_size` sessions.
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Continues after the page that returned `token`.
    #[must_use]
    pub fn page_token(mut self, token: impl Into<String>) -> Self {
        self.page_token = Some(token.into());
        self
    }

    /// Newest first.
    #[must_use]
    pub fn newest_first(mut self) -> Self {
        self.newest_first = true;
        self
    }

    /// Ordered by `order` (last update or creation).
    #[must_use]
    pub fn order_by(mut self, order: ListOrder) -> Self {
        self.order_by = order;
        self
    }

    /// Only the sessions `filter` admits.
    #[must_use]
    pub fn filter(mut self, filter: SessionFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Skips the first `offset` sessions.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Counts every session the list covers, in [`SessionPage::total_size`].
    #[must_use]
    pub fn count(mut self) -> Self {
        self.count = true;
        self
    }
}

/// How much of a session's history to keep (see
/// [`SessionService::apply_retention`](crate::SessionService::apply_retention)): the newest
/// `keep_last` events and/or the events younger than `max_age`; both bounds apply together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep at most this many of the newest events (at least 1).
    pub keep_last: Option<usize>,
    /// Keep only events younger than this.
    pub max_age: Option<Duration>,
}

/// One page of sessions, oldest update first (or newest first, as asked). Sessions carry merged
/// state and no events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPage {
    /// The sessions of this page.
    pub sessions: Vec<Session>,
    /// Pass it as `page_token` for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
    /// How many sessions every page together holds, when the request asked to count.
    pub total_size: Option<usize>,
}

/// Arguments of [`SessionService::list_events`](crate::SessionService::list_events).
#[derive(Debug, Clone, PartialEq)]
pub struct ListEvents {
    /// At most this many events per page (1 to [`MAX_EVENT_PAGE`]).
    pub page_size: usize,
    /// `next_page_token` of the previous page; `None` for the first.
    pub page_token: Option<String>,
    /// Only events whose time is at or after this.
    pub after_timestamp: Option<Timestamp>,
    /// Only events whose time is at or before this.
    pub until_timestamp: Option<Timestamp>,
    /// Newest first (pages go back in time) instead of oldest first. A page token continues the
    /// order it was made in.
    pub newest_first: bool,
}

impl Default for ListEvents {
    fn default() -> Self {
        Self { page_size: 100, page_token: None, after_timestamp: None, until_timestamp: None, newest_first: false }
    }
}

/// The largest event page.
pub const MAX_EVENT_PAGE: usize = 1000;

/// How many lost races a blind append
/// ([`SessionService::append_now`](crate::SessionService::append_now)) takes before it gives up:
/// each lost race is another writer's append, so many writers at once all get through.
pub const BLIND_APPEND_ATTEMPTS: usize = 64;

/// One page of a session's history, in the order asked (oldest first by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventPage {
    /// The events of this page.
    pub events: Vec<Event>,
    /// Pass it as `page_token` for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
}
