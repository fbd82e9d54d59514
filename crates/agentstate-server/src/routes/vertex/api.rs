//! The Sessions API's calls, whichever surface asks: the REST routes (`super`) and gRPC
//! (`crate::grpc`) both read their request into these arguments and answer what these return,
//! so the two cannot disagree. Bodies and answers are the API's JSON (camelCase): gRPC's
//! messages are that JSON in their proto3 mapping.

use agentstate::filter::{parse_session_filter, parse_session_order};
use agentstate::store::AttributesUpdate;
use agentstate::{
    CreateSession, Error, GetSessionConfig, ListEvents, ListSessions, MAX_EVENT_PAGE, Session, SessionKey,
};
use agentstate::{Map, Value};
use axum::http::HeaderMap;
use serde_json::json;

use super::error::GoogleError;
use super::resource::{self, Engine};
use super::{LAST_UPDATE_HEADER, USER_HEADER, request};
use crate::auth::Permit;
use crate::limits::check_path_safe;
use crate::routes::append;
use crate::state::AppState;

/// The largest page of sessions or events, and the default.
const PAGE: usize = 100;

/// Who asks, about which engine: every call's first arguments.
pub(crate) struct Caller<'a> {
    pub(crate) state: &'a AppState,
    pub(crate) engine: &'a Engine,
    pub(crate) permit: &'a Permit,
    /// The request's headers (gRPC: its metadata), for agentstate's own two.
    pub(crate) headers: &'a HeaderMap,
}

/// A list call's paging and selection (the REST routes' query).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Page {
    pub(crate) filter: Option<String>,
    pub(crate) order_by: Option<String>,
    pub(crate) page_size: Option<i64>,
    pub(crate) page_token: Option<String>,
}

fn page_size(requested: Option<i64>) -> usize {
    requested.and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0).map_or(PAGE, |n| n.min(PAGE))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// 404 `NOT_FOUND` for session `id` of `engine`, in the managed service's words.
pub(crate) fn not_found(engine: &Engine, id: &str) -> GoogleError {
    GoogleError::not_found(format!("Session {} not found.", engine.session_name(id)))
}

impl Caller<'_> {
    /// The session `id` of the engine: the one of the user the client names, or the only one of
    /// the app with that id. The caller's token must cover its user.
    pub(crate) async fn resolve(&self, id: &str) -> Result<SessionKey, GoogleError> {
        let engine = self.engine;
        agentstate::validate_id("session_id", id)?;
        check_path_safe("session_id", id)?;
        let key = match header(self.headers, USER_HEADER) {
            Some(user) => SessionKey::new(&engine.app, user, id)?,
            None => {
                let mut found = self.state.service().find_sessions(&engine.app, id).await?;
                match found.len() {
                    0 => return Err(not_found(engine, id)),
                    1 => found.remove(0),
                    _ => {
                        return Err(GoogleError::invalid(format!(
                            "session id {id:?} is used by several users of app {:?}; address it through \
                             /apps/{{app}}/users/{{user}}/sessions/{{id}}",
                            engine.app
                        )));
                    }
                }
            }
        };
        self.permit.check(key.app_name(), key.user_id())?;
        Ok(key)
    }

    /// The session an operation under `…/sessions/{id}` concerns, while it exists and the caller
    /// may see it (an operation of any other is answered done with nothing).
    pub(crate) async fn operation_session(&self, id: &str) -> Result<Option<Session>, GoogleError> {
        let Ok(key) = self.resolve(id).await else { return Ok(None) };
        Ok(self.state.service().get_session(&key, GetSessionConfig::recent(0)).await?)
    }

    /// Creates a session from a `Session` body, with `requested_id` or a fresh one.
    pub(crate) async fn create(
        &self,
        requested_id: Option<String>,
        body: Map<String, Value>,
    ) -> Result<Session, GoogleError> {
        let (state, engine) = (self.state, self.engine);
        let new = request::new_session(body)?;
        self.permit.check(&engine.app, &new.user_id)?;
        state.limits().check_state("sessionState", &new.state)?;
        let id = match requested_id.filter(|id| !id.is_empty()) {
            Some(id) => {
                check_path_safe("session_id", &id)?;
                agentstate::validate_id("session_id", &id)?;
                if !state.service().find_sessions(&engine.app, &id).await?.is_empty() {
                    return Err(already_exists(engine, &id));
                }
                id
            }
            None => resource::new_session_id(),
        };
        let request =
            CreateSession { attributes: new.attributes, ttl: new.ttl, ..CreateSession::new(&engine.app, &new.user_id) }
                .id(&id)
                .with_state(new.state);
        match state.service().create_session(request).await {
            Ok(session) => Ok(session),
            Err(Error::AlreadyExists { .. }) => Err(already_exists(engine, &id)),
            Err(e) => Err(e.into()),
        }
    }

    /// `{"sessions": […], "nextPageToken"}`: sessions with their merged state, no events, oldest
    /// update first (or as `orderBy` says), of those the filter admits.
    pub(crate) async fn list(&self, page: Page) -> Result<Value, GoogleError> {
        let (engine, permit) = (self.engine, self.permit);
        let parsed = parse_session_filter(page.filter.as_deref().unwrap_or_default()).map_err(GoogleError::from)?;
        let (order_by, newest_first) =
            parse_session_order(page.order_by.as_deref().unwrap_or_default()).map_err(GoogleError::from)?;
        let user = parsed.user_id;
        match &user {
            Some(user) => permit.check(&engine.app, user)?,
            None if !permit.covers_every_user() => {
                return Err(GoogleError::denied("This token may list only its users' sessions: filter by user_id."));
            }
            None => {}
        }
        let request = ListSessions {
            app_name: engine.app.clone(),
            user_id: user,
            page_size: Some(page_size(page.page_size)),
            page_token: page.page_token.filter(|t| !t.is_empty()),
            order_by,
            newest_first,
            filter: parsed.filter,
            ..ListSessions::default()
        };
        let listed = self.state.service().list_sessions(request).await?;
        let sessions: Vec<Value> = listed.sessions.iter().map(|s| engine.session(s)).collect();
        let mut body = json!({ "sessions": sessions });
        if let Some(token) = listed.next_page_token {
            body["nextPageToken"] = json!(token);
        }
        Ok(body)
    }

    /// The session `id` as read with `config`.
    pub(crate) async fn get(&self, id: &str, config: GetSessionConfig) -> Result<Session, GoogleError> {
        let key = self.resolve(id).await?;
        self.state.service().get_session(&key, config).await?.ok_or_else(|| not_found(self.engine, id))
    }

    /// Deletes the session `id`.
    pub(crate) async fn delete(&self, id: &str) -> Result<(), GoogleError> {
        let key = self.resolve(id).await?;
        self.state.service().delete_session(&key).await?;
        Ok(())
    }

    /// Sets the session's display name, labels, expiry and state as `update_mask` says (see
    /// [`request::session_patch`]); answers the session. A new state travels on an event, as
    /// every state change does (it is in the history, and moves the update time); the
    /// attributes alone move neither.
    pub(crate) async fn patch(
        &self,
        id: &str,
        body: Map<String, Value>,
        update_mask: Option<&str>,
    ) -> Result<Value, GoogleError> {
        let engine = self.engine;
        let patch = request::session_patch(body, update_mask)?;
        let key = self.resolve(id).await?;
        let service = self.state.service();
        let missing = |e: Error| match e {
            Error::NotFound { .. } => not_found(engine, id),
            e => e.into(),
        };
        let mut attributes = patch.attributes;
        attributes.expire_time_micros = patch.expiry.map(|expiry| match expiry {
            request::Expiry::In(ttl) => Some(agentstate::clock::after(service.now_micros(), ttl)),
            request::Expiry::At(micros) => Some(micros),
            request::Expiry::Never => None,
        });
        // Display name, labels and expiry in one step.
        if attributes != AttributesUpdate::default() {
            service.set_attributes(&key, attributes).await.map_err(missing)?;
        }
        if let Some(wanted) = patch.state {
            self.state.limits().check_state("sessionState", &wanted)?;
            self.replace_state(&key, wanted).await.map_err(missing)?;
        }
        let session =
            service.get_session(&key, GetSessionConfig::recent(0)).await?.ok_or_else(|| not_found(engine, id))?;
        Ok(engine.session(&session))
    }

    /// Makes the session's state `wanted` by one event: the keys whose value differs are set, the
    /// session's own keys `wanted` lacks are deleted. Appended at the marker it was computed
    /// against, so a write that gets in between makes it compute again (never a lost write).
    async fn replace_state(&self, key: &SessionKey, wanted: Map<String, Value>) -> Result<(), Error> {
        let service = self.state.service();
        let mut lost = 0;
        loop {
            let now = service.get_session(key, GetSessionConfig::recent(0)).await?;
            let now = now.ok_or_else(|| Error::NotFound { session_id: key.session_id().to_owned() })?;
            let current = now.state().all();
            let mut event = agentstate::Event::new(format!("u-{}", uuid::Uuid::new_v4())).author("user");
            for (k, v) in &wanted {
                if current.get(k) != Some(v) {
                    event.actions.state_delta.insert(k.clone(), v.clone());
                }
            }
            let session_scoped = |k: &&String| agentstate::Scope::of(k).0 == agentstate::Scope::Session;
            for k in current.keys().filter(session_scoped).filter(|k| !wanted.contains_key(*k)) {
                event = event.delete(k.clone());
            }
            if event.actions.state_delta.is_empty() {
                return Ok(());
            }
            match append::append(self.state, key, event, Some(now.last_update_micros())).await {
                Err(e @ Error::Conflict { kind: agentstate::ConflictKind::StaleSession }) => {
                    lost += 1;
                    if !append::lost_race(self.state, lost).await {
                        return Err(e);
                    }
                }
                done => return done.map(drop),
            }
        }
    }

    /// Appends a `SessionEvent` body to the session `id` and applies its state delta. Answers
    /// `{}`, as the managed service does; agentstate's client (it names the user) learns of a
    /// retry of a stored event: the stored event, marked `agentstateDuplicate`.
    pub(crate) async fn append(&self, id: &str, body: Map<String, Value>) -> Result<Value, GoogleError> {
        let (state, engine) = (self.state, self.engine);
        let event = request::appended(body)?;
        state.limits().check_state("actions.stateDelta", &event.actions.state_delta)?;
        let expected = header(self.headers, LAST_UPDATE_HEADER)
            .map(|v| {
                v.parse::<i64>().map_err(|_| GoogleError::invalid(format!("{LAST_UPDATE_HEADER} must be an integer")))
            })
            .transpose()?;
        let key = self.resolve(id).await?;
        let appended = match append::append(state, &key, event, expected).await {
            Ok(appended) => appended,
            Err(Error::NotFound { .. }) => return Err(not_found(engine, id)),
            Err(e @ Error::Conflict { kind: agentstate::ConflictKind::StaleSession }) => {
                return Err(GoogleError::aborted(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        if appended.duplicate && header(self.headers, USER_HEADER).is_some() {
            let mut body = engine.event(id, &appended.event);
            body["agentstateDuplicate"] = json!(true);
            return Ok(body);
        }
        Ok(json!({}))
    }

    /// `{"sessionEvents": […], "nextPageToken"}`: the history of session `id`, oldest first (or
    /// newest first), within the filter's time range. Without a page size, the whole history in
    /// one page: ADK for TypeScript reads the first page only and never follows a token, so a
    /// default page would cut its sessions short.
    ///
    /// The range applies to the times events were appended with (`Event::given_time`), as
    /// the managed service keeps them. Storage orders events by the time it placed them at,
    /// never earlier than the given one, so the store is asked from the range's start and the
    /// rest is decided here (a page may then hold fewer events than its size, as AIP-158 allows).
    pub(crate) async fn events(&self, id: &str, page: Page) -> Result<resource::EventsPage, GoogleError> {
        let engine = self.engine;
        let range = page.filter.as_deref().map(request::event_filter).transpose()?.unwrap_or_default();
        let newest_first = request::event_order(page.order_by.as_deref())?;
        let key = self.resolve(id).await?;
        let whole = page.page_size.is_none_or(|n| n <= 0);
        let mut request = ListEvents {
            page_size: if whole { MAX_EVENT_PAGE } else { page_size(page.page_size) },
            page_token: page.page_token.filter(|t| !t.is_empty()),
            after_timestamp: range.since,
            until_timestamp: None,
            newest_first,
        };
        let mut events = Vec::new();
        let next_page_token = loop {
            let listed =
                self.state.service().list_events(&key, request.clone()).await?.ok_or_else(|| not_found(engine, id))?;
            events.extend(listed.events.into_iter().filter(|e| range.contains(e.given_time())));
            match listed.next_page_token {
                Some(token) if whole => request.page_token = Some(token),
                token => break token,
            }
        };
        Ok(engine.events_page(id, events, next_page_token))
    }
}

/// A create with an id the engine has: v1beta1 answers 400 `INVALID_ARGUMENT`, as the managed
/// service was seen to; v1 answers 409 `ALREADY_EXISTS`, the status ADK-Rust's v1 client handles.
fn already_exists(engine: &Engine, id: &str) -> GoogleError {
    let message = format!("Session with user-provided ID '{id}' already exists");
    if engine.version == "v1" { GoogleError::already_exists(message) } else { GoogleError::invalid(message) }
}
