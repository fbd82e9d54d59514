//! Prometheus metrics, in the text exposition format: requests and their latency by method,
//! route template and status; appended events; stale-handle conflicts; expired sessions swept.
//!
//! A small registry of its own rather than a global recorder: it lives in the router's state, so
//! every router (and every test) counts on its own.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// Upper bounds of the latency histogram buckets, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

#[derive(Debug, Default, Clone)]
struct Histogram {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.count += 1;
        self.sum += seconds;
        for (bound, bucket) in BUCKETS.iter().zip(self.buckets.iter_mut()) {
            if seconds <= *bound {
                *bucket += 1;
            }
        }
    }

    /// The histogram's lines: `name_bucket`, `name_sum` and `name_count` under `labels`.
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        for (bound, n) in BUCKETS.iter().zip(self.buckets) {
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// The server's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), Histogram>>,
    grpc: Mutex<BTreeMap<(String, String), Histogram>>,
    appends: AtomicU64,
    conflicts: AtomicU64,
    expired: AtomicU64,
    dropped: AtomicU64,
}

impl Metrics {
    /// Counts events appended.
    pub fn appended(&self, n: u64) {
        self.appends.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts expired sessions the sweep removed.
    pub fn expired(&self, n: u64) {
        self.expired.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts events a retention policy dropped.
    pub fn dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a stale-handle conflict met while appending.
    pub fn conflict(&self) {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
    }

    fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        requests.entry((method.to_owned(), route.to_owned(), status)).or_default().observe(seconds);
    }

    #[cfg(feature = "grpc")]
    /// Counts a gRPC call of `method` (`GetSession`, …) that ended with `code` (`Ok`, `NotFound`, …).
    pub(crate) fn observe_grpc(&self, method: &str, code: &str, seconds: f64) {
        let mut calls = self.grpc.lock().unwrap_or_else(PoisonError::into_inner);
        calls.entry((method.to_owned(), code.to_owned())).or_default().observe(seconds);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut out = String::new();
        out.push_str("# HELP agentstate_http_requests_total HTTP requests by method, route and status.\n");
        out.push_str("# TYPE agentstate_http_requests_total counter\n");
        for ((method, route, status), h) in &requests {
            let _ = writeln!(
                out,
                "agentstate_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP agentstate_http_request_duration_seconds Request latency by method, route and status.\n");
        out.push_str("# TYPE agentstate_http_request_duration_seconds histogram\n");
        for ((method, route, status), h) in &requests {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            h.render(&mut out, "agentstate_http_request_duration_seconds", &labels);
        }
        let calls = self.grpc.lock().unwrap_or_else(PoisonError::into_inner).clone();
        out.push_str("# HELP agentstate_grpc_requests_total gRPC calls by method and status code.\n");
        out.push_str("# TYPE agentstate_grpc_requests_total counter\n");
        for ((method, code), h) in &calls {
            let _ = writeln!(out, "agentstate_grpc_requests_total{{method=\"{method}\",code=\"{code}\"}} {}", h.count);
        }
        out.push_str("# HELP agentstate_grpc_request_duration_seconds gRPC call latency by method and status code.\n");
        out.push_str("# TYPE agentstate_grpc_request_duration_seconds histogram\n");
        for ((method, code), h) in &calls {
            h.render(
                &mut out,
                "agentstate_grpc_request_duration_seconds",
                &format!("method=\"{method}\",code=\"{code}\""),
            );
        }
        out.push_str(
            "# HELP agentstate_appends_total Events appended to sessions.\n# TYPE agentstate_appends_total counter\n",
        );
        let _ = writeln!(out, "agentstate_appends_total {}", self.appends.load(Ordering::Relaxed));
        out.push_str(
            "# HELP agentstate_conflicts_total Stale-handle conflicts met while appending (PATCH retries them).\n",
        );
        out.push_str("# TYPE agentstate_conflicts_total counter\n");
        let _ = writeln!(out, "agentstate_conflicts_total {}", self.conflicts.load(Ordering::Relaxed));
        out.push_str("# HELP agentstate_sessions_expired_total Expired sessions the sweep removed.\n");
        out.push_str("# TYPE agentstate_sessions_expired_total counter\n");
        let _ = writeln!(out, "agentstate_sessions_expired_total {}", self.expired.load(Ordering::Relaxed));
        out.push_str("# HELP agentstate_events_dropped_total Events dropped by retention policies.\n");
        out.push_str("# TYPE agentstate_events_dropped_total counter\n");
        let _ = writeln!(out, "agentstate_events_dropped_total {}", self.dropped.load(Ordering::Relaxed));
        out
    }
}

/// Middleware: times every request and counts it under its route template (never the raw path,
/// which would make a series per session).
pub(crate) async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().to_string();
    let route =
        request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    // The request span is made before routing; the route is known here.
    crate::telemetry::record_route(&method, &route);
    let response = next.run(request).await;
    metrics.observe(&method, &route, response.status().as_u16(), start.elapsed().as_secs_f64());
    response
}
