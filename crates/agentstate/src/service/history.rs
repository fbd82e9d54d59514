//! History through the service: answered by the store when it has
//! [`RemoteHistory`](crate::store::RemoteHistory), else replayed from its events and snapshots
//! (with [`HistoryStore`](crate::store::HistoryStore)); a store with neither cannot answer
//! exactly (the creation state is in its snapshots), so it is [`Error::Unsupported`].

use tracing::Instrument;

use super::SessionService;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use crate::key::{SessionKey, validate_id};
use crate::session::Session;
use crate::store::replay::Replay;
use crate::store::{EventCursor, EventQuery, EventSelect};

impl SessionService {
    /// The history of the store's sessions: the store's own answers, or a replay of its events
    /// and snapshots; neither, [`Error::Unsupported`].
    fn replay(&self, operation: &'static str) -> Result<Replay<'_>> {
        match self.capabilities().history {
            Some(_) => Ok(Replay::new(self.store().as_ref(), self.now_micros())),
            None => Err(Error::Unsupported { operation, capability: "history" }),
        }
    }

    /// The session's history state at `at` (see [`crate::history`]); `Ok(None)` when the
    /// session does not exist. An event id the session does not have, or a time before its
    /// creation, is [`Error::InvalidArgument`].
    pub async fn state_at(&self, key: &SessionKey, at: HistoryAt) -> Result<Option<StateAt>> {
        let answer = async {
            match self.capabilities().remote_history {
                Some(remote) => remote.state_at(key, &at).await,
                None => self.replay("answer history questions")?.state_at(key, &at).await,
            }
        };
        answer.instrument(self.span("state_at", key)).await
    }

    /// What the event `event_id` changed: each key it set, changed (old and new value) or
    /// deleted; `Ok(None)` when the session does not exist. An unknown event id is
    /// [`Error::InvalidArgument`].
    pub async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        validate_id("event_id", event_id)?;
        let answer = async {
            match self.capabilities().remote_history {
                Some(remote) => remote.event_diff(key, event_id).await,
                None => self.replay("answer history questions")?.event_diff(key, event_id).await,
            }
        };
        answer.instrument(self.span("event_diff", key)).await
    }

    /// Rewinds `session` to before invocation `before_invocation_id`, as ADK for Python's
    /// `Runner.rewind_async` does: appends one event (author `user`, invocation `e-<uuid>`,
    /// `actions.rewind_before_invocation_id`) whose delta restores every session-scoped key to
    /// its value before that invocation's first event and deletes the keys that did not exist
    /// then. `app:`, `user:` and `temp:` keys are not rewound. The events from that first event
    /// on are no longer live ([`history::live_events`](crate::history::live_events)); they stay
    /// in the history.
    ///
    /// Unlike the reference, the state the session was created with counts as the state before
    /// its first event (the reference sets those keys to `null`), keys are deleted rather than
    /// set to `null`, and only the snapshot and events needed are read. An invocation the
    /// session does not have is [`Error::InvalidArgument`] (`Invocation ID not found: …`); a
    /// stale handle is a [`Error::Conflict`], as for any append.
    ///
    /// When the store keeps artifacts, the session's artifacts are restored as the reference
    /// restores them: each session-scoped artifact whose version (as the events' `artifact_delta`
    /// record it) differs from its version before the invocation gets a new version holding what
    /// it held then, or ADK's tombstone when it had none; the rewind event's `artifact_delta`
    /// names them. `user:` artifacts stay.
    pub async fn rewind(&self, session: &mut Session, before_invocation_id: &str) -> Result<Event> {
        let key = session.key().clone();
        let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
        let unknown = || {
            Error::invalid("rewind_before_invocation_id", format!("Invocation ID not found: {before_invocation_id}"))
        };
        if before_invocation_id.is_empty() {
            return Err(unknown());
        }
        // Refused before any read: the state before the invocation is a history question.
        if !self.capabilities().answers_history() {
            return Err(Error::Unsupported { operation: "rewind sessions", capability: "history" });
        }
        let select = EventSelect::FirstOfInvocation(before_invocation_id.to_owned());
        let query = EventQuery { key: key.clone(), select, now_micros: self.now_micros() };
        let first = self.store().events(&query).await?.ok_or_else(not_found)?;
        let first = first.into_iter().next().ok_or_else(unknown)?;
        let point = crate::artifact::rewind::Point::Before(EventCursor::of(&first));
        let mut event = self.restoring(session, HistoryAt::BeforeEvent(first.id)).await?;
        event.actions.artifact_delta = self.restore_artifacts(&key, &point).await?;
        event.actions.rewind_before_invocation_id = Some(before_invocation_id.to_owned());
        self.append_event(session, event).await
    }

    /// Rewinds `session` to just after its event `event_id`, as ADK-Rust's `rewind` means it:
    /// appends one event (author `user`, invocation `e-<uuid>`, `rewind_after_event_id`) whose
    /// delta restores every session-scoped key to its value after that event; the events after
    /// it are no longer live ([`history::live_events`](crate::history::live_events)) and stay in
    /// the history. When the event after the target opens an invocation, the rewind also says
    /// `actions.rewind_before_invocation_id`, so ADK for Python reads the same live events. An
    /// event the session does not have is [`Error::InvalidArgument`]. Artifacts are restored to
    /// after that event as [`rewind`](Self::rewind) restores them.
    pub async fn rewind_to_event(&self, session: &mut Session, event_id: &str) -> Result<Event> {
        validate_id("event_id", event_id)?;
        if !self.capabilities().answers_history() {
            return Err(Error::Unsupported { operation: "rewind sessions", capability: "history" });
        }
        let key = session.key().clone();
        let mut event = self.restoring(session, HistoryAt::AfterEvent(event_id.to_owned())).await?;
        event.rewind_after_event_id = Some(event_id.to_owned());
        // What ADK for Python understands: a rewind to before the next invocation, when the
        // target is the last event of its own.
        let target = self.store().events(&self.events_query(&key, EventSelect::Id(event_id.to_owned()))).await?;
        if let Some(target) = target.and_then(|found| found.into_iter().next()) {
            let point = crate::artifact::rewind::Point::After(EventCursor::of(&target));
            event.actions.artifact_delta = self.restore_artifacts(&key, &point).await?;
            let after = EventSelect::Page { after: Some(EventCursor::of(&target)), since_micros: None, limit: 1 };
            let next = self.store().events(&self.events_query(&key, after)).await?.and_then(|e| e.into_iter().next());
            if let Some(next) = next.filter(|n| !n.invocation_id.is_empty() && n.invocation_id != target.invocation_id)
            {
                let first = EventSelect::FirstOfInvocation(next.invocation_id.clone());
                let opens = self.store().events(&self.events_query(&key, first)).await?;
                if opens.and_then(|e| e.into_iter().next()).is_some_and(|first| first.id == next.id) {
                    event.actions.rewind_before_invocation_id = Some(next.invocation_id);
                }
            }
        }
        self.append_event(session, event).await
    }

    /// The session's artifacts brought back to `point` (when the store keeps artifacts), from the
    /// versions its events recorded: the rewind event's `artifact_delta`. Reads the history's
    /// events a page at a time.
    async fn restore_artifacts(
        &self,
        key: &SessionKey,
        point: &crate::artifact::rewind::Point,
    ) -> Result<crate::Map<String, crate::Value>> {
        let Some(store) = self.capabilities().artifacts else { return Ok(crate::Map::new()) };
        let recorded = self.recorded_artifacts(key, point).await?;
        crate::artifact::rewind::restore(store, key, recorded, self.now_micros()).await
    }

    /// The artifact versions the session's events record before `point` and now, read a page of
    /// events at a time.
    async fn recorded_artifacts(
        &self,
        key: &SessionKey,
        point: &crate::artifact::rewind::Point,
    ) -> Result<crate::artifact::rewind::Recorded> {
        let mut recorded = crate::artifact::rewind::Recorded::default();
        let mut page_token = None;
        loop {
            let request = crate::ListEvents { page_size: crate::MAX_EVENT_PAGE, page_token, ..Default::default() };
            let Some(page) = self.list_events(key, request).await? else { break };
            for event in &page.events {
                recorded.add(event, point);
            }
            match page.next_page_token {
                Some(token) => page_token = Some(token),
                None => break,
            }
        }
        Ok(recorded)
    }

    /// Copies into the new `fork` the source's artifacts as of the fork point
    /// ([`fork::carry`](crate::artifact::fork::carry)); when the store keeps none, nothing.
    async fn fork_artifacts(&self, request: &ForkSession, fork: &SessionKey) -> Result<()> {
        let Some(store) = self.capabilities().artifacts else { return Ok(()) };
        let query = self.events_query(&request.source, EventSelect::Id(request.at_event_id.clone()));
        let Some(at) = self.store().events(&query).await?.and_then(|found| found.into_iter().next()) else {
            return Ok(());
        };
        let point = crate::artifact::rewind::Point::After(EventCursor::of(&at));
        // The fork holds the source's events up to the fork point, the same ones: folding its
        // history reads those alone, not the source's later ones.
        let recorded = self.recorded_artifacts(fork, &point).await?;
        let copied = crate::artifact::fork::carry(store, &request.source, fork, &recorded, at.time().micros()).await?;
        tracing::debug!(copied, "copied the fork point's artifact versions");
        Ok(())
    }

    /// An event of author `user` (invocation `e-<uuid>`) whose delta brings the session-scoped
    /// keys of `session` back to their values at `at`: a rewind, without its marker.
    async fn restoring(&self, session: &Session, at: HistoryAt) -> Result<Event> {
        let key = session.key();
        let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
        let then = self.state_at(key, at).await?.ok_or_else(not_found)?;
        let then = crate::history::session_keys(&then.state);
        let now = crate::history::session_keys(session.state().all());
        let mut event = Event::new(format!("e-{}", uuid::Uuid::new_v4())).author("user");
        for (k, v) in &then {
            if now.get(k) != Some(v) {
                event.actions.state_delta.insert(k.clone(), v.clone());
            }
        }
        for k in now.keys().filter(|k| !then.contains_key(*k)) {
            event = event.delete(k.clone());
        }
        Ok(event)
    }

    fn events_query(&self, key: &SessionKey, select: EventSelect) -> EventQuery {
        EventQuery { key: key.clone(), select, now_micros: self.now_micros() }
    }

    /// A new session of the same user whose history is the source's up to and including
    /// `request.at_event_id` (the same events: ids, contents and times) and whose own state is
    /// the history state there; `app:`/`user:` state is shared as always, and the source is
    /// untouched. The fork keeps its source's creation time and creation state (so its history
    /// reads as the source's), and its last update is its last event's time until it is
    /// appended to. Returns it without events. A missing source is [`Error::NotFound`], an
    /// unknown event [`Error::InvalidArgument`], a taken id [`Error::AlreadyExists`].
    ///
    /// When the store keeps artifacts, the fork gets the source's session-scoped artifacts as
    /// they were at the event, numbered as in the source, so the copied events' `artifact_delta`
    /// names versions the fork holds: for each, the versions up to the one the events last
    /// record (or, for one no event records, those saved by the event's time).
    pub async fn fork_session(&self, request: ForkSession) -> Result<Session> {
        validate_id("at_event_id", &request.at_event_id)?;
        if let Some(id) = request.session_id.as_deref().filter(|id| !id.is_empty()) {
            validate_id("session_id", id)?;
        }
        let answer = async {
            let fork = match self.capabilities().remote_history {
                Some(remote) => remote.fork(&request).await?,
                None => self.replay("fork sessions")?.fork(&request).await?,
            };
            if let Err(failed) = self.fork_artifacts(&request, fork.key()).await {
                // A fork without the artifacts its events name is not the fork asked for.
                if let Err(undo) = self.delete_session(fork.key()).await {
                    tracing::warn!(error = %undo, "removing a fork whose artifacts were not copied failed");
                }
                return Err(failed);
            }
            Ok(fork)
        };
        answer.instrument(self.span("fork_session", &request.source)).await
    }
}
