//! The Agent Engine Sessions API over gRPC: `google.cloud.aiplatform.v1beta1.SessionService`,
//! its Memory Bank (`MemoryBankService`) and `google.longrunning.Operations`, on the address the REST API listens on (HTTP/2, told
//! apart by its `application/grpc` content type), as Google's endpoint serves both. A client
//! generated from Google's protos (ADK for Go's `SessionClient`, Python's
//! `aiplatform_v1beta1.SessionServiceClient`) needs only the address.
//!
//! Every call is the REST surface's: the request message
//! in its proto3 JSON form is the REST body, and the REST answer read back is the reply, so
//! the two surfaces keep the same sessions by the same rules, tokens and limits. `ListEvents`,
//! the call a long conversation makes most, writes its reply from the events instead, in wire
//! format (the message the REST answer reads back as, without its JSON and without building the
//! message: see `messages`), and a session's reply is built from the session.
//!
//! Who may call each method is in [`METHODS`] (and in `/openapi.json` under `x-grpc`).

mod convert;
mod memory_bank;
mod messages;
mod operations;
mod protowire;
mod sessions;
mod structs;

pub use messages::{EventsReply, events_reply};

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::Response;
use tower::ServiceExt;

use crate::state::AppState;

/// The messages and services, compiled from `proto/` at build time.
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod proto {
    /// `google.*`.
    pub mod google {
        /// `google.cloud.*`.
        pub mod cloud {
            /// `google.cloud.aiplatform.*`.
            pub mod aiplatform {
                /// `google.cloud.aiplatform.v1beta1`: the Sessions and Memory Bank APIs.
                pub mod v1beta1 {
                    include!(concat!(env!("OUT_DIR"), "/google.cloud.aiplatform.v1beta1.rs"));
                    include!(concat!(env!("OUT_DIR"), "/google.cloud.aiplatform.v1beta1.serde.rs"));
                }
            }
        }
        /// `google.longrunning`: operations.
        pub mod longrunning {
            include!(concat!(env!("OUT_DIR"), "/google.longrunning.rs"));
        }
        /// `google.rpc`: an operation's error.
        pub mod rpc {
            include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
        }
    }
}

/// Who may call a method, when access tokens are configured: a token for the engine (the app)
/// in the resource name, and the user of the session (or the one a create or a list names).
const ENGINE_USER: &str = "a token for the engine (app) in the resource name and the session's user";
/// Who may call a Memory Bank method on a scope: a token for the engine and the scope's
/// `user_id` (every user's, for a scope without one).
const SCOPE_USER: &str =
    "a token for the engine (app) in the resource name and the scope's user_id (every user, without one)";
/// Who may list an engine's memories: a token for the engine and every user.
const EVERY_USER: &str = "a token for the engine (app) in the resource name and every user";
/// Any valid token: agentstate keeps no operations to list, cancel or delete.
const ANY_TOKEN: &str = "any valid token";

/// Every gRPC method served, with who may call it: the gRPC rows of the route table.
pub const METHODS: &[(&str, &str)] = &[
    ("google.cloud.aiplatform.v1beta1.SessionService/CreateSession", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/GetSession", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/ListSessions", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/UpdateSession", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/DeleteSession", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/AppendEvent", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.SessionService/ListEvents", ENGINE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/CreateMemory", SCOPE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/GetMemory", SCOPE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/UpdateMemory", SCOPE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/ListMemories", EVERY_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/DeleteMemory", SCOPE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/GenerateMemories", SCOPE_USER),
    ("google.cloud.aiplatform.v1beta1.MemoryBankService/RetrieveMemories", SCOPE_USER),
    ("google.longrunning.Operations/GetOperation", ENGINE_USER),
    ("google.longrunning.Operations/WaitOperation", ENGINE_USER),
    ("google.longrunning.Operations/ListOperations", ANY_TOKEN),
    ("google.longrunning.Operations/DeleteOperation", ANY_TOKEN),
    ("google.longrunning.Operations/CancelOperation", ANY_TOKEN),
];

/// Whether a request is a gRPC call.
fn is_grpc(request: &Request) -> bool {
    request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"))
}

/// `rest` with the gRPC services beside it: gRPC calls go to the services, untouched by the REST
/// layers (body limit, route access checks, the fallback 404); every other request to `rest`.
pub(crate) fn beside(rest: Router, state: AppState) -> Router {
    let limit = state.limits().max_body_bytes;
    // One service for both: `ListEvents` is served beside the generated service (below).
    let service = std::sync::Arc::new(sessions::Sessions::new(state.clone()));
    let sessions = proto::google::cloud::aiplatform::v1beta1::session_service_server::SessionServiceServer::from_arc(
        std::sync::Arc::clone(&service),
    )
    .max_decoding_message_size(limit);
    let memory_bank =
        proto::google::cloud::aiplatform::v1beta1::memory_bank_service_server::MemoryBankServiceServer::new(
            memory_bank::MemoryBank::new(state.clone()),
        )
        .max_decoding_message_size(limit);
    let operations =
        proto::google::longrunning::operations_server::OperationsServer::new(operations::Operations::new(state))
            .max_decoding_message_size(limit);
    // `ListEvents` answers the bytes it wrote: served beside the generated service, as it is.
    let list_events = sessions::ListEventsMethod(service);
    let list_events = tower::service_fn(move |request: Request| {
        let method = list_events.clone();
        async move {
            let codec = tonic_prost::ProstCodec::<messages::EventsReply, _>::default();
            let mut grpc = tonic::server::Grpc::new(codec).apply_max_message_size_config(Some(limit), None);
            Ok::<_, std::convert::Infallible>(grpc.unary(method, request).await)
        }
    });
    let grpc = tonic::service::Routes::new(sessions)
        .add_service(memory_bank)
        .add_service(operations)
        .into_axum_router()
        .route_service(sessions::LIST_EVENTS, list_events)
        .layer(axum::middleware::map_response(oversized_is_resource_exhausted));
    let steer = tower::service_fn(move |request: Request| {
        let target = if is_grpc(&request) { grpc.clone() } else { rest.clone() };
        target.oneshot(request)
    });
    Router::new().fallback_service(steer)
}

/// tonic refuses a message over the limit with `OUT_OF_RANGE`; Google's servers (and gRPC's
/// own) answer `RESOURCE_EXHAUSTED`, the code the clients expect.
async fn oversized_is_resource_exhausted(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let oversized = headers.get("grpc-status").is_some_and(|s| s == "11")
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.replace("%20", " ").contains("decoded message length too large"));
    if oversized {
        headers.insert("grpc-status", HeaderValue::from_static("8"));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static("The request is larger than the server's body limit (--max-body-bytes)."),
        );
    }
    response
}
