//! `google.cloud.aiplatform.v1beta1.SessionService`: each method reads its request into the
//! REST surface's arguments, calls it, and answers its JSON as the reply message (`ListEvents`:
//! its events, and a session, built as those messages).

use std::future::Future;
use std::time::Instant;

use agentstate::{GetSessionConfig, Session};
use axum::http::HeaderMap;
use prost::Message;
use tonic::{Request, Response, Status};

use super::convert::{Name, admit, authenticate, from_json, to_json};
use super::messages;
use super::proto::google::cloud::aiplatform::v1beta1 as api;
use super::proto::google::longrunning::{Operation, operation};
use crate::auth::Permit;
use crate::routes::vertex::{Caller, Engine, Page};
use crate::state::AppState;

/// The `@type` of a packed session.
pub(super) const SESSION_TYPE: &str = "type.googleapis.com/google.cloud.aiplatform.v1beta1.Session";
/// The `@type` of a packed `google.protobuf.Empty`.
pub(super) const EMPTY_TYPE: &str = "type.googleapis.com/google.protobuf.Empty";

/// The service, over the server's state.
#[derive(Clone)]
pub(crate) struct Sessions {
    state: AppState,
}

impl Sessions {
    pub(crate) fn new(state: AppState) -> Self {
        Self { state }
    }

    /// `ListEvents`, its reply encoded from the events (see [`messages::events_reply`]).
    async fn list_events_encoded(
        &self,
        request: Request<api::ListEventsRequest>,
    ) -> Result<Response<messages::EventsReply>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "ListEvents", async {
            let (permit, engine, id) = self.session_of(&headers, &request.parent, "parent").await?;
            let mut page = page(request.page_size, request.page_token, request.filter, request.order_by);
            page.page_size.get_or_insert(DEFAULT_EVENT_PAGE);
            messages::page_reply(&self.caller(&engine, &permit, &headers).events(&id, page).await?)
        })
        .await
    }
}

/// `ListEvents` as the server serves it: the generated service's method but for its reply type,
/// the encoded bytes, which tonic sends without building and encoding the message.
#[derive(Clone)]
pub(super) struct ListEventsMethod(pub(super) std::sync::Arc<Sessions>);

/// The method's path.
pub(super) const LIST_EVENTS: &str = "/google.cloud.aiplatform.v1beta1.SessionService/ListEvents";

impl tonic::server::UnaryService<api::ListEventsRequest> for ListEventsMethod {
    type Response = messages::EventsReply;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response<Self::Response>, Status>> + Send>>;

    fn call(&mut self, request: Request<api::ListEventsRequest>) -> Self::Future {
        let sessions = std::sync::Arc::clone(&self.0);
        Box::pin(async move { sessions.list_events_encoded(request).await })
    }
}

/// Runs one call of `method`, counting it (by method and status code) in the server's metrics.
pub(super) async fn counted<T>(
    state: &AppState,
    method: &str,
    call: impl Future<Output = Result<T, Status>>,
) -> Result<Response<T>, Status> {
    let start = Instant::now();
    let result = call.await;
    let code = match &result {
        Ok(_) => tonic::Code::Ok,
        Err(status) => status.code(),
    };
    state.metrics().observe_grpc(method, &format!("{code:?}"), start.elapsed().as_secs_f64());
    result.map(Response::new)
}

/// A session as the API's message.
pub(super) fn session_message(engine: &Engine, session: &Session) -> Result<api::Session, Status> {
    messages::session(engine, session)
}

/// A done operation named `name` that answers `session`, packed.
pub(super) fn session_operation(name: String, session: &api::Session) -> Operation {
    let response = pbjson_types::Any { type_url: SESSION_TYPE.into(), value: session.encode_to_vec().into() };
    Operation { name, metadata: None, done: true, result: Some(operation::Result::Response(response)) }
}

/// A done operation named `name` that answers nothing (`google.protobuf.Empty`, packed).
pub(super) fn empty_operation(name: String) -> Operation {
    let response = pbjson_types::Any { type_url: EMPTY_TYPE.into(), value: Vec::new().into() };
    Operation { name, metadata: None, done: true, result: Some(operation::Result::Response(response)) }
}

/// Events a `ListEvents` call without a page size answers: Google's documented default. REST
/// answers the whole history then, for the REST clients that read one page (ADK for TypeScript's
/// and ADK for Java's); gRPC clients follow page tokens, and accept 4 MB a message by default
/// (gRPC-Go's limit), which a long history in one reply would pass.
const DEFAULT_EVENT_PAGE: i64 = 100;

fn page(page_size: i32, page_token: String, filter: String, order_by: String) -> Page {
    Page {
        filter: Some(filter).filter(|f| !f.trim().is_empty()),
        order_by: Some(order_by).filter(|o| !o.trim().is_empty()),
        page_size: Some(i64::from(page_size)).filter(|n| *n > 0),
        page_token: Some(page_token).filter(|t| !t.is_empty()),
    }
}

impl Sessions {
    fn caller<'a>(&'a self, engine: &'a Engine, permit: &'a Permit, headers: &'a HeaderMap) -> Caller<'a> {
        Caller { state: &self.state, engine, permit, headers }
    }

    /// The caller's permit and the engine `name` (the request's `field`) names, which the permit
    /// must cover. Authenticated first: without a token, a malformed name is still `UNAUTHENTICATED`.
    async fn engine_of(&self, headers: &HeaderMap, name: &str, field: &str) -> Result<(Permit, Engine), Status> {
        let permit = authenticate(&self.state, headers).await?;
        let engine = Name::engine(name, field)?;
        admit(&permit, &engine)?;
        Ok((permit, engine))
    }

    /// The caller's permit, and the engine and session id `name` names; as [`Self::engine_of`].
    async fn session_of(
        &self,
        headers: &HeaderMap,
        name: &str,
        field: &str,
    ) -> Result<(Permit, Engine, String), Status> {
        let permit = authenticate(&self.state, headers).await?;
        let (engine, id) = Name::session(name, field)?;
        admit(&permit, &engine)?;
        Ok((permit, engine, id))
    }

    /// A request's metadata (as headers) and message.
    fn open<T>(&self, request: Request<T>) -> (HeaderMap, T) {
        let headers = request.metadata().clone().into_headers();
        (headers, request.into_inner())
    }
}

#[tonic::async_trait]
impl api::session_service_server::SessionService for Sessions {
    async fn create_session(&self, request: Request<api::CreateSessionRequest>) -> Result<Response<Operation>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "CreateSession", async {
            let (permit, engine) = self.engine_of(&headers, &request.parent, "parent").await?;
            let body = to_json(&request.session.unwrap_or_default(), "session")?;
            let caller = self.caller(&engine, &permit, &headers);
            let session = caller.create(Some(request.session_id), body).await?;
            Ok(session_operation(engine.session_operation_name(session.id()), &session_message(&engine, &session)?))
        })
        .await
    }

    async fn get_session(&self, request: Request<api::GetSessionRequest>) -> Result<Response<api::Session>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "GetSession", async {
            let (permit, engine, id) = self.session_of(&headers, &request.name, "name").await?;
            let session = self.caller(&engine, &permit, &headers).get(&id, GetSessionConfig::recent(0)).await?;
            session_message(&engine, &session)
        })
        .await
    }

    async fn list_sessions(
        &self,
        request: Request<api::ListSessionsRequest>,
    ) -> Result<Response<api::ListSessionsResponse>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "ListSessions", async {
            let (permit, engine) = self.engine_of(&headers, &request.parent, "parent").await?;
            let page = page(request.page_size, request.page_token, request.filter, request.order_by);
            from_json(self.caller(&engine, &permit, &headers).list(page).await?)
        })
        .await
    }

    async fn update_session(
        &self,
        request: Request<api::UpdateSessionRequest>,
    ) -> Result<Response<api::Session>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "UpdateSession", async {
            let session = request.session.unwrap_or_default();
            let (permit, engine, id) = self.session_of(&headers, &session.name, "session.name").await?;
            let mask = request.update_mask.map(|m| m.paths.join(",")).filter(|m| !m.is_empty());
            let body = to_json(&session, "session")?;
            from_json(self.caller(&engine, &permit, &headers).patch(&id, body, mask.as_deref()).await?)
        })
        .await
    }

    async fn delete_session(&self, request: Request<api::DeleteSessionRequest>) -> Result<Response<Operation>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "DeleteSession", async {
            let (permit, engine, id) = self.session_of(&headers, &request.name, "name").await?;
            self.caller(&engine, &permit, &headers).delete(&id).await?;
            Ok(empty_operation(engine.empty_operation_name()))
        })
        .await
    }

    /// Served by [`ListEventsMethod`], which sends the reply's bytes as they were written; this
    /// is the same call read back into the message, for a caller of the trait itself.
    async fn list_events(
        &self,
        request: Request<api::ListEventsRequest>,
    ) -> Result<Response<api::ListEventsResponse>, Status> {
        let reply = self.list_events_encoded(request).await?;
        reply.get_ref().message().map(Response::new)
    }

    async fn append_event(
        &self,
        request: Request<api::AppendEventRequest>,
    ) -> Result<Response<api::AppendEventResponse>, Status> {
        let (headers, request) = self.open(request);
        counted(&self.state, "AppendEvent", async {
            let (permit, engine, id) = self.session_of(&headers, &request.name, "name").await?;
            let event = request.event.ok_or_else(|| Status::invalid_argument("event is required"))?;
            let body = to_json(&event, "event")?;
            self.caller(&engine, &permit, &headers).append(&id, body).await?;
            Ok(api::AppendEventResponse {})
        })
        .await
    }
}
