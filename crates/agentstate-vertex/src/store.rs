//! [`SessionStore`] over the API: each store operation as the requests that do it.

use std::time::{Duration, Instant};

use agentstate::filter::session_filter_text;
use agentstate::history::{EventDiff, ForkSession, HistoryAt, KeyChange, StateAt};
use agentstate::store::replay::Replay;
use agentstate::store::{
    Capabilities, CommitOutcome, EventCommit, EventCursor, EventQuery, EventSelect, EventWindow, ListQuery,
    LoadedSession, NewSession, RemoteHistory, SessionRead, SessionStore, merge_scopes,
};
use agentstate::{ConflictKind, Error, Event, Result, Session, SessionKey, Value};
use async_trait::async_trait;
use reqwest::{Method, StatusCode};

use crate::VertexAiStore;
use crate::http::{Call, Failure, Retry};
use crate::resource::{self, rfc3339};

/// agentstate's extension: the session's user, so the server need not look it up (and refuses
/// a session of another user). The server's name for it is the same.
pub const USER_HEADER: &str = "x-agentstate-user-id";
/// agentstate's extension: the storage marker the handle was loaded at (epoch microseconds); an
/// append is refused with 409 `ABORTED` if the session changed since.
pub const LAST_UPDATE_HEADER: &str = "x-agentstate-last-update";
/// The largest page the API answers.
const PAGE: usize = 100;
/// How long a long-running operation may take before the call gives up on it.
const OPERATION_WAIT: Duration = Duration::from_secs(60);
/// How often a session just created is looked for before it is called missing (the managed
/// service may answer a create before the session is readable).
const CREATE_READS: u32 = 5;

/// A failure as agentstate's error, for an operation described by `doing`.
fn error(failure: Failure, doing: &str) -> Error {
    match failure {
        Failure::Transport(e) => Error::backend(format!("{doing}: no answer from the service"), true, e),
        Failure::Credentials(e) => Error::backend(format!("{doing}: the credentials could not be produced"), true, e),
        Failure::Body(message) => {
            Error::Backend { message: format!("{doing}: {message}"), retryable: false, source: None }
        }
        Failure::Api { code, status, message } => {
            let retryable = code == StatusCode::TOO_MANY_REQUESTS || code.is_server_error();
            let message = match code {
                StatusCode::BAD_REQUEST => return Error::invalid("request", format!("{doing}: {message}")),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    format!("{doing}: the service refused the credentials ({code} {status}): {message}")
                }
                _ => format!("{doing}: the service answered {code} {status}: {message}"),
            };
            Error::Backend { message, retryable, source: None }
        }
    }
}

/// A filter string literal: quoted, with `"` and `\` escaped.
fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

impl VertexAiStore {
    /// The engine that keeps `app`'s sessions.
    fn engine<'a>(&'a self, app: &'a str) -> &'a str {
        self.engine.as_deref().unwrap_or(app)
    }

    fn sessions_path(&self, app: &str) -> Vec<String> {
        vec!["reasoningEngines".into(), self.engine(app).into(), "sessions".into()]
    }

    /// A call on the session `key` (`suffix` appended to its id, e.g. `:appendEvent`; `child`
    /// a resource under it, e.g. `events`), naming its user when the extensions are on.
    fn session_call(&self, method: Method, key: &SessionKey, suffix: &str, child: Option<&str>, retry: Retry) -> Call {
        let mut path = self.sessions_path(key.app_name());
        path.push(format!("{}{suffix}", key.session_id()));
        path.extend(child.map(str::to_owned));
        let call = Call::new(method, path, retry);
        if self.client.extensions() { call.header(USER_HEADER, key.user_id()) } else { call }
    }

    /// The session resource of `key` without events; `None` when it is missing or another
    /// user's.
    async fn resource(&self, key: &SessionKey) -> Result<Option<Value>> {
        match self.client.send(&self.session_call(Method::GET, key, "", None, Retry::Idempotent)).await {
            Ok(body) if body.get("userId").and_then(Value::as_str) == Some(key.user_id()) => Ok(Some(body)),
            Ok(_) => Ok(None),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => Ok(None),
            Err(f) => Err(error(f, "reading a session")),
        }
    }

    /// Waits for a long-running operation to finish; the finished operation.
    async fn finished(&self, mut operation: Value, doing: &str) -> Result<Value> {
        let deadline = Instant::now() + OPERATION_WAIT;
        let mut pause = Duration::from_millis(100);
        while operation.get("done").and_then(Value::as_bool) != Some(true) {
            let name = operation.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let Some(path) = self.client.relative(&name) else {
                return Err(error(Failure::Body(format!("an operation without a usable name: {name:?}")), doing));
            };
            if Instant::now() > deadline {
                return Err(Error::Backend {
                    message: format!("{doing}: operation {name} not done after {} s", OPERATION_WAIT.as_secs()),
                    retryable: true,
                    source: None,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
            operation = self
                .client
                .send(&Call::new(Method::GET, path, Retry::Idempotent))
                .await
                .map_err(|f| error(f, doing))?;
        }
        if let Some(failed) = operation.get("error") {
            let message = failed.get("message").and_then(Value::as_str).unwrap_or("no message");
            return Err(Error::Backend {
                message: format!("{doing}: the operation failed: {message}"),
                retryable: false,
                source: None,
            });
        }
        Ok(operation)
    }

    /// Every event of `key` at or after `since`, oldest first, a page at a time; `None` when
    /// the session is missing.
    async fn event_pages(
        &self,
        key: &SessionKey,
        since: Option<i64>,
        after: Option<String>,
        limit: usize,
    ) -> Result<Option<Vec<Event>>> {
        let mut events = Vec::new();
        let mut token = after;
        while events.len() < limit {
            let mut call = self
                .session_call(Method::GET, key, "", Some("events"), Retry::Idempotent)
                .query("pageSize", (limit - events.len()).min(PAGE).to_string());
            if let Some(since) = since {
                call = call.query("filter", format!("timestamp>={}", quoted(&rfc3339(since))));
            }
            if let Some(token) = &token {
                call = call.query("pageToken", token.clone());
            }
            let page = match self.client.send(&call).await {
                Ok(page) => page,
                Err(f) if f.is(StatusCode::NOT_FOUND, "") => return Ok(None),
                Err(f) => return Err(error(f, "reading a session's events")),
            };
            let mut page = page;
            for item in resource::take_array(&mut page, "sessionEvents")? {
                events.push(resource::event(item)?);
            }
            token = page.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
        Ok(Some(events))
    }

    async fn session_pages(&self, query: &ListQuery, after: Option<String>, limit: usize) -> Result<Vec<Session>> {
        let mut sessions = Vec::new();
        let mut token = after;
        while sessions.len() < limit {
            let mut call = Call::new(Method::GET, self.sessions_path(&query.app_name), Retry::Idempotent)
                .query("pageSize", (limit - sessions.len()).min(PAGE).to_string());
            if self.client.extensions() {
                // agentstate's server reads the whole filter and both orders.
                let filter = session_filter_text(query.user_id.as_deref(), &query.filter);
                if !filter.is_empty() {
                    call = call.query("filter", filter);
                }
                let direction = if query.descending { "desc" } else { "asc" };
                call = call.query("orderBy", format!("{} {direction}", query.order.field()));
            } else if let Some(user) = &query.user_id {
                call = call.query("filter", format!("user_id={}", quoted(user)));
            }
            if let Some(token) = &token {
                call = call.query("pageToken", token.clone());
            }
            let page = self.client.send(&call).await.map_err(|f| error(f, "listing sessions"))?;
            let mut page = page;
            for item in resource::take_array(&mut page, "sessions")? {
                sessions.push(resource::session(&item, &query.app_name, Vec::<Event>::new())?);
            }
            token = page.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
        Ok(sessions)
    }
}

/// agentstate's history routes answer `{"detail": …}`; a 400 there is a bad argument.
fn history_error(failure: Failure, doing: &str, field: &'static str) -> Error {
    if failure.is(StatusCode::BAD_REQUEST, "") {
        return Error::invalid(field, failure.message());
    }
    error(failure, doing)
}

impl VertexAiStore {
    /// `apps/{engine}/users/{user}/sessions/{id}/{tail…}`: the session on agentstate's own
    /// routes, where its history is served.
    fn agentstate_path(&self, key: &SessionKey, tail: &[&str]) -> Vec<String> {
        let mut path: Vec<String> =
            ["apps", self.engine(key.app_name()), "users", key.user_id(), "sessions", key.session_id()]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
        path.extend(tail.iter().map(|s| (*s).to_owned()));
        path
    }
}

fn read_state_at(body: &Value) -> Result<StateAt> {
    let bad = |what: &str| Error::Backend {
        message: format!("reading a session's history: the server answered a state without {what}"),
        retryable: false,
        source: None,
    };
    Ok(StateAt {
        event_id: body.get("eventId").and_then(Value::as_str).map(str::to_owned),
        timestamp: body.get("timestamp").and_then(Value::as_f64).ok_or_else(|| bad("a timestamp"))?,
        state: body.get("state").and_then(Value::as_object).cloned().ok_or_else(|| bad("a state"))?,
    })
}

fn read_diff(body: &Value) -> Result<EventDiff> {
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
    let changes = body
        .get("changes")
        .and_then(Value::as_array)
        .map(|changes| {
            changes
                .iter()
                .map(|c| KeyChange {
                    key: text(c, "key"),
                    before: c.get("before").cloned(),
                    after: c.get("after").cloned(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(EventDiff {
        event_id: text(body, "eventId"),
        timestamp: body.get("timestamp").and_then(Value::as_f64).unwrap_or_default(),
        invocation_id: text(body, "invocationId"),
        author: text(body, "author"),
        changes,
    })
}

#[async_trait]
impl RemoteHistory for VertexAiStore {
    /// With the extensions, the server's history (its snapshots, the session's creation state);
    /// without, a replay of the events from an empty state (the managed service keeps no
    /// creation state). Expiry is the server's to judge.
    async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>> {
        if !self.client.extensions() {
            return Replay::new(self, i64::MIN).state_at(key, at).await;
        }
        let call = Call::agentstate(Method::GET, self.agentstate_path(key, &["state"]), Retry::Idempotent);
        let call = match at {
            HistoryAt::Creation => call.query("atCreation", "true"),
            HistoryAt::AfterEvent(id) => call.query("atEvent", id.clone()),
            HistoryAt::BeforeEvent(id) => call.query("beforeEvent", id.clone()),
            HistoryAt::Time(secs) => call.query("atTime", secs.to_string()),
        };
        match self.client.send(&call).await {
            Ok(body) => read_state_at(&body).map(Some),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => Ok(None),
            Err(f) => Err(history_error(f, "reading a session's history", "at")),
        }
    }

    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        if !self.client.extensions() {
            return Replay::new(self, i64::MIN).event_diff(key, event_id).await;
        }
        let path = self.agentstate_path(key, &["events", event_id, "diff"]);
        match self.client.send(&Call::agentstate(Method::GET, path, Retry::Idempotent)).await {
            Ok(body) => read_diff(&body).map(Some),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") && f.message().contains("Event not found") => {
                Err(Error::invalid("event_id", format!("session {} has no event {event_id:?}", key.session_id())))
            }
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => Ok(None),
            Err(f) => Err(history_error(f, "reading an event's diff", "event_id")),
        }
    }

    async fn fork(&self, request: &ForkSession) -> Result<Session> {
        if !self.client.extensions() {
            return Replay::new(self, i64::MIN).fork(request).await;
        }
        let source = &request.source;
        let mut body = serde_json::json!({ "atEventId": request.at_event_id });
        if let Some(id) = request.session_id.as_deref().filter(|id| !id.is_empty()) {
            body["sessionId"] = Value::String(id.to_owned());
        }
        let call =
            Call::agentstate(Method::POST, self.agentstate_path(source, &["fork"]), Retry::Unprocessed).body(body);
        let fork = match self.client.send(&call).await {
            Ok(fork) => fork,
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => {
                return Err(Error::NotFound { session_id: source.session_id().to_owned() });
            }
            Err(f) if f.is(StatusCode::CONFLICT, "") => {
                let id = request.session_id.clone().unwrap_or_default();
                return Err(Error::AlreadyExists { session_id: id });
            }
            Err(f) => return Err(history_error(f, "forking a session", "at_event_id")),
        };
        let id = fork.get("id").and_then(Value::as_str).unwrap_or_default();
        let key = SessionKey::from_storage(source.app_name(), source.user_id(), id);
        let read = SessionRead::decoded(EventWindow::NONE, i64::MIN);
        let forked = self.get(&key, &read).await?.ok_or_else(|| Error::NotFound { session_id: id.to_owned() })?;
        Ok(forked.session)
    }
}

#[async_trait]
impl SessionStore for VertexAiStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let key = &new.key;
        let state = merge_scopes(&new.state.session, &new.state.app, &new.state.user);
        let call = Call::new(Method::POST, self.sessions_path(key.app_name()), Retry::Unprocessed)
            .query("sessionId", key.session_id())
            .body(resource::create_body(key.user_id(), state, &new.attributes));
        let operation = match self.client.send(&call).await {
            Ok(operation) => operation,
            Err(f)
                if f.is(StatusCode::CONFLICT, "")
                    || (f.is(StatusCode::BAD_REQUEST, "") && f.message().contains("already exists")) =>
            {
                return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
            }
            Err(f) => return Err(error(f, "creating a session")),
        };
        let operation = self.finished(operation, "creating a session").await?;
        if let Some(created) = operation.get("response").filter(|r| r.get("userId").is_some()) {
            return resource::session(created, key.app_name(), Vec::<Event>::new());
        }
        // The operation did not carry the session: read it, as it may take a moment to show.
        for attempt in 1..=CREATE_READS {
            if let Some(body) = self.resource(key).await? {
                return resource::session(&body, key.app_name(), Vec::<Event>::new());
            }
            tokio::time::sleep(Duration::from_millis(100) * attempt).await;
        }
        Err(Error::Backend {
            message: format!("creating a session: session {} was created but cannot be read", key.session_id()),
            retryable: false,
            source: None,
        })
    }

    /// Events come decoded; expiry is judged by the service, at its own time.
    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        let window = read.window;
        if self.client.extensions() {
            // One request, one snapshot: the session and its events as they were together.
            let mut call =
                self.session_call(Method::GET, key, "", None, Retry::Idempotent).query("agentstateEvents", "true");
            if let Some(n) = window.recent {
                call = call.query("agentstateNumRecentEvents", n.to_string());
            }
            if let Some(since) = window.since_micros {
                call = call.query("agentstateAfter", rfc3339(since));
            }
            let mut body = match self.client.send(&call).await {
                Ok(body) => body,
                Err(f) if f.is(StatusCode::NOT_FOUND, "") => return Ok(None),
                Err(f) => return Err(error(f, "reading a session")),
            };
            let events = resource::take_array(&mut body, "agentstateEvents")?
                .into_iter()
                .map(resource::event)
                .collect::<Result<Vec<_>>>()?;
            return resource::session(&body, key.app_name(), events).map(|s| Some(LoadedSession::decoded(s)));
        }
        // The plain API, as ADK for Python's client reads it: the session and its event pages
        // at once (two reads, so not one snapshot), the window applied here.
        let (body, events) =
            tokio::join!(self.resource(key), self.event_pages(key, window.since_micros, None, usize::MAX));
        let (Some(body), Some(events)) = (body?, events?) else { return Ok(None) };
        let events = window.slice(&events).to_vec();
        resource::session(&body, key.app_name(), events).map(|s| Some(LoadedSession::decoded(s)))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let limit = query.limit.unwrap_or(usize::MAX);
        if self.client.extensions() {
            // The server pages in the store order (either way), from the same tokens.
            let token = query.after.as_ref().map(|cursor| cursor.to_page_token(query.order, query.descending));
            return self.session_pages(query, token, limit).await;
        }
        // The plain API pages in its own order: read all, and arrange them here.
        Ok(query.arrange(self.session_pages(query, None, usize::MAX).await?))
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        // Without the extensions the service does not know whose session it is: check first.
        if !self.client.extensions() && self.resource(key).await?.is_none() {
            return Ok(());
        }
        match self.client.send(&self.session_call(Method::DELETE, key, "", None, Retry::Idempotent)).await {
            Ok(operation) => self.finished(operation, "deleting a session").await.map(drop),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => Ok(()),
            Err(f) => Err(error(f, "deleting a session")),
        }
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let extensions = self.client.extensions();
        // With the extensions an append is idempotent (the server answers a stored event as a
        // duplicate), so a lost answer may be asked again.
        let retry = if extensions { Retry::Idempotent } else { Retry::Unprocessed };
        let delta = merge_scopes(&commit.delta.session, &commit.delta.app, &commit.delta.user);
        let mut call = self
            .session_call(Method::POST, &commit.key, ":appendEvent", None, retry)
            .body(resource::append_body(&commit.event, &delta));
        if extensions {
            call = call.header(LAST_UPDATE_HEADER, commit.expected_last_update_micros.to_string());
        }
        let (answer, attempts) = self.client.send_counted(&call).await;
        match answer {
            Ok(stored) if stored.get("agentstateDuplicate").and_then(Value::as_bool) == Some(true) => {
                let stored = resource::event(stored)?;
                if attempts > 1 && stored.same_as_retry(&commit.event) {
                    // Our own first attempt went through and its answer was lost.
                    return Ok(CommitOutcome::Committed);
                }
                Ok(CommitOutcome::Duplicate(Box::new(stored)))
            }
            Ok(_) => Ok(CommitOutcome::Committed),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => {
                Err(Error::NotFound { session_id: commit.key.session_id().to_owned() })
            }
            Err(f) if f.is(StatusCode::CONFLICT, "ABORTED") => Err(Error::stale()),
            Err(f) if f.is(StatusCode::CONFLICT, "ALREADY_EXISTS") => {
                Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: commit.event.id.clone() } })
            }
            Err(f) => Err(error(f, "appending an event")),
        }
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let EventQuery { key, select, .. } = query;
        match select {
            EventSelect::Page { after, since_micros, limit } if self.client.extensions() => {
                let token = after.as_ref().map(EventCursor::to_page_token);
                self.event_pages(key, *since_micros, token, *limit).await
            }
            // Without a lookup in the API: the session's events, the query applied here.
            select => {
                let Some(events) = self.event_pages(key, None, None, usize::MAX).await? else { return Ok(None) };
                Ok(Some(select.pick(&events)))
            }
        }
    }

    async fn count_events(&self, key: &SessionKey, _now_micros: i64) -> Result<Option<usize>> {
        Ok(self.event_pages(key, None, None, usize::MAX).await?.map(|events| events.len()))
    }

    async fn users_with_session(&self, app: &str, session_id: &str, _now_micros: i64) -> Result<Vec<String>> {
        let path = {
            let mut path = self.sessions_path(app);
            path.push(session_id.to_owned());
            path
        };
        match self.client.send(&Call::new(Method::GET, path, Retry::Idempotent)).await {
            Ok(body) => Ok(body.get("userId").and_then(Value::as_str).map(str::to_owned).into_iter().collect()),
            Err(f) if f.is(StatusCode::NOT_FOUND, "") => Ok(Vec::new()),
            // An agentstate server whose sessions of one id belong to several users (made
            // through its ADK routes) says so: find them in the list.
            Err(f) if f.is(StatusCode::BAD_REQUEST, "") && f.message().contains("several users") => {
                let query = ListQuery::all(app, None, i64::MIN);
                let sessions = self.list(&query).await?;
                Ok(sessions.iter().filter(|s| s.id() == session_id).map(|s| s.user_id().to_owned()).collect())
            }
            Err(f) => Err(error(f, "looking a session up")),
        }
    }

    /// History answered here: by the server (with agentstate's extensions), or replayed from
    /// the events (without).
    fn system(&self) -> &'static str {
        "vertex_ai"
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::none().with_remote_history(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_literals_are_escaped() {
        assert_eq!(quoted("a"), "\"a\"");
        assert_eq!(quoted(r#"x"y\z"#), r#""x\"y\\z""#);
    }

    #[test]
    fn errors_keep_their_kind_and_say_what_was_being_done() {
        let api =
            |code, status: &str, message: &str| Failure::Api { code, status: status.into(), message: message.into() };
        let e = error(api(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "bad"), "listing sessions");
        assert_eq!(e.kind(), agentstate::ErrorKind::InvalidArgument);
        let e = error(api(StatusCode::FORBIDDEN, "PERMISSION_DENIED", "no"), "reading a session");
        assert!(!e.is_retryable() && e.to_string().contains("refused the credentials"), "{e}");
        assert!(error(api(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "x"), "d").is_retryable());
        assert!(!error(api(StatusCode::NOT_IMPLEMENTED, "", "x"), "d").to_string().is_empty());
    }
}
