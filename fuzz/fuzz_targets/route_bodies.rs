//! Every route that takes a body, from the OpenAPI route table, fed arbitrary bytes as its JSON
//! body on an in-memory server: no answer is a server error (5xx), and no request panics.
#![no_main]

use std::sync::OnceLock;

use agentstate::{CreateSession, SessionService};
use agentstate_server::{AppState, OPERATIONS, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

struct Harness {
    runtime: tokio::runtime::Runtime,
    router: Router,
    /// Each route with a body: its method and its path with the parameters filled in.
    routes: Vec<(Method, String)>,
}

fn fill(path: &str, method: &str) -> String {
    let mut out = String::new();
    for part in path.split('/').skip(1) {
        let value = match part {
            "{app_name}" => "a",
            "{user_id}" => "u",
            "{session_id}" => "s0",
            // The managed service appends with POST …/sessions/{id}:appendEvent.
            "{session}" if method == "post" => "s0:appendEvent",
            "{session}" => "s0",
            "{engine}" => "1",
            "{version}" => "v1beta1",
            p if p.starts_with('{') => "x",
            p => p,
        };
        out.push('/');
        out.push_str(value);
    }
    out
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let service = SessionService::in_memory();
        runtime.block_on(async {
            service.create_session(CreateSession::new("a", "u").id("s0")).await.expect("the session");
        });
        let router = app(AppState::new(service));
        let routes = OPERATIONS
            .iter()
            .filter(|op| matches!(op.method, "post" | "patch" | "put"))
            .map(|op| (op.method.to_uppercase().parse().expect("a method"), fill(op.path, op.method)))
            .collect();
        Harness { runtime, router, routes }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((choice, body)) = data.split_first() else { return };
    let harness = harness();
    let (method, path) = &harness.routes[usize::from(*choice) % harness.routes.len()];
    let request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(
            "content-type",
            if path.starts_with("/ui/") { "application/x-www-form-urlencoded" } else { "application/json" },
        )
        .body(Body::from(body.to_vec()))
        .expect("a request");
    let response = harness.runtime.block_on(harness.router.clone().oneshot(request)).expect("infallible");
    assert!(
        !response.status().is_server_error(),
        "{method} {path} answered {} to {:?}",
        response.status(),
        String::from_utf8_lossy(body)
    );
});
