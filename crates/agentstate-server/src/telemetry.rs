//! The request span every HTTP request and gRPC call runs in (made before routing; the REST
//! route's template is recorded once routed, by the metrics layer that reads it), named and attributed by
//! OpenTelemetry's semantic conventions (`http.request.method`, `http.route` — the route
//! template, never a path's names —, `http.response.status_code`; `rpc.system`, `rpc.service`,
//! `rpc.method` for gRPC), and the child of the caller's span when the request carries a W3C
//! `traceparent` (the binary installs the propagator and the exporter when the `OTEL_*` variables
//! ask for them; without them the span is a log context alone).

use axum::http::{HeaderMap, Request, Response};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt as _;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The request's headers (gRPC metadata included), read by the propagator.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}

/// The span of one request: `METHOD /route/{template}` (or `package.Service/Method` for gRPC).
pub(crate) fn request_span<B>(request: &Request<B>) -> Span {
    let id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
    let method = request.method().as_str();
    let span = tracing::info_span!(
        "request",
        otel.name = Empty,
        otel.kind = "server",
        http.request.method = method,
        http.route = Empty,
        http.response.status_code = Empty,
        rpc.system = Empty,
        rpc.service = Empty,
        rpc.method = Empty,
        url.path = %request.uri().path(),
        request_id = %id,
    );
    let grpc = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    let path = request.uri().path();
    match (grpc, path.trim_start_matches('/').split_once('/')) {
        // A gRPC method's path names the method, nothing of the caller's.
        (true, Some((service, rpc))) => {
            span.record("otel.name", format!("{service}/{rpc}"));
            span.record("rpc.system", "grpc");
            span.record("rpc.service", service);
            span.record("rpc.method", rpc);
            span.record("http.route", path);
        }
        // A REST route is known once routed ([`record_route`]); until then, the method alone.
        _ => {
            span.record("otel.name", method);
        }
    }
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(request.headers())));
    // Without an OpenTelemetry layer there is nothing to attach to; not an error.
    let _ = span.set_parent(parent);
    span
}

/// Names the current request span by its route template, once routing found it.
pub(crate) fn record_route(method: &str, route: &str) {
    let span = Span::current();
    let name = format!("{method} {route}");
    // The OpenTelemetry span has started by now, so its name is set through it (a recorded
    // `otel.name` names only spans not yet started).
    span.context().span().update_name(name.clone());
    span.record("otel.name", name);
    span.record("http.route", route);
}

/// Records the answer's status on the request span.
pub(crate) fn record_status<B>(response: &Response<B>, latency: std::time::Duration, span: &Span) {
    span.record("http.response.status_code", i64::from(response.status().as_u16()));
    tracing::debug!(status = response.status().as_u16(), latency_ms = latency.as_millis(), "answered");
}
