//! One request to the API: its URL, credentials, retries, and the Google error it may answer.

use std::time::Duration;

use agentstate::{BoxError, Value};
use reqwest::{Method, StatusCode, Url};

use crate::auth::Credentials;

/// Tries per request, the first included.
const ATTEMPTS: u32 = 4;

/// What a request may be retried after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Anything transient: repeating it changes nothing (reads, deletes, appends with an event
    /// id the server deduplicates).
    Idempotent,
    /// Only answers that say the request was not processed (429, 503, no connection).
    Unprocessed,
}

/// A request, relative to the configured parent (`projects/P/locations/L` or nothing).
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) path: Vec<String>,
    pub(crate) query: Vec<(&'static str, String)>,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Option<Value>,
    pub(crate) retry: Retry,
    /// The path is under the server's root, not under `v1beta1` and the parent: agentstate's
    /// own routes.
    pub(crate) from_root: bool,
}

impl Call {
    pub(crate) fn new(method: Method, path: Vec<String>, retry: Retry) -> Self {
        Self { method, path, query: Vec::new(), headers: Vec::new(), body: None, retry, from_root: false }
    }

    /// A call to one of agentstate's own routes (`/apps/…`), under the server's root.
    pub(crate) fn agentstate(method: Method, path: Vec<String>, retry: Retry) -> Self {
        Self { from_root: true, ..Self::new(method, path, retry) }
    }

    pub(crate) fn query(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.query.push((name, value.into()));
        self
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub(crate) fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

/// Why a request failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The service answered an error: its HTTP code, its canonical status (`NOT_FOUND`,
    /// `ABORTED`, …) and message.
    Api { code: StatusCode, status: String, message: String },
    /// No answer: the connection failed or timed out.
    Transport(reqwest::Error),
    /// The credentials could not be produced.
    Credentials(BoxError),
    /// An answer that is not JSON.
    Body(String),
}

impl Failure {
    /// Whether the service answered `code` with `status` (any status if empty).
    pub(crate) fn is(&self, code: StatusCode, status: &str) -> bool {
        matches!(self, Self::Api { code: c, status: s, .. } if *c == code && (status.is_empty() || s == status))
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Api { message, .. } | Self::Body(message) => message,
            Self::Transport(_) => "no answer",
            Self::Credentials(_) => "no credentials",
        }
    }
}

/// The HTTP side of the service: where requests go and with what credentials.
#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    /// `…/v1beta1`.
    base: Url,
    /// `projects/P/locations/L` as segments, or none.
    parent: Vec<String>,
    credentials: Credentials,
    extensions: bool,
}

impl Client {
    pub(crate) fn new(
        http: reqwest::Client,
        base: Url,
        parent: Vec<String>,
        credentials: Credentials,
        extensions: bool,
    ) -> Self {
        Self { http, base, parent, credentials, extensions }
    }

    /// Whether agentstate's extensions are on.
    pub(crate) fn extensions(&self) -> bool {
        self.extensions
    }

    /// The base URL with the parent.
    #[cfg(test)]
    pub(crate) fn describe(&self) -> String {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.extend(&self.parent);
        }
        url.to_string()
    }

    fn url(&self, path: &[String], query: &[(&'static str, String)], from_root: bool) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            if from_root {
                segments.pop();
            } else {
                segments.extend(&self.parent);
            }
            segments.extend(path);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// The path of a resource the service named (`projects/…/operations/…`), relative to the
    /// parent, or `None` if it names something elsewhere.
    pub(crate) fn relative(&self, name: &str) -> Option<Vec<String>> {
        let segments: Vec<String> = name.split('/').map(str::to_owned).collect();
        segments.strip_prefix(self.parent.as_slice()).map(<[String]>::to_vec)
    }

    /// Sends `call`, retrying what may be retried; the answer's JSON (`{}` for an empty body).
    pub(crate) async fn send(&self, call: &Call) -> Result<Value, Failure> {
        self.send_counted(call).await.0
    }

    /// [`send`](Self::send), with how many times the request went out.
    pub(crate) async fn send_counted(&self, call: &Call) -> (Result<Value, Failure>, u32) {
        let url = self.url(&call.path, &call.query, call.from_root);
        let mut attempt = 1;
        loop {
            let result = self.send_once(call, url.clone()).await;
            let retry = match &result {
                Ok(_) | Err(Failure::Credentials(_) | Failure::Body(_)) => false,
                Err(Failure::Transport(e)) => call.retry == Retry::Idempotent || e.is_connect(),
                Err(Failure::Api { code, .. }) => match *code {
                    StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => true,
                    StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => {
                        call.retry == Retry::Idempotent
                    }
                    _ => false,
                },
            };
            if !retry || attempt == ATTEMPTS {
                return (result, attempt);
            }
            let pause = backoff(attempt);
            tracing::debug!(method = %call.method, path = url.path(), attempt, ?pause, "retrying a request");
            tokio::time::sleep(pause).await;
            attempt += 1;
        }
    }

    async fn send_once(&self, call: &Call, url: Url) -> Result<Value, Failure> {
        let mut request = self.http.request(call.method.clone(), url);
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        for (name, value) in trace_context() {
            request = request.header(name, value);
        }
        if let Some(body) = &call.body {
            request = request.json(body);
        }
        let request = self.credentials.apply(request).await.map_err(Failure::Credentials)?;
        let response = request.send().await.map_err(Failure::Transport)?;
        let code = response.status();
        let bytes = response.bytes().await.map_err(Failure::Transport)?;
        if code.is_success() {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(Value::Object(agentstate::Map::new()));
            }
            return serde_json::from_slice(&bytes)
                .map_err(|e| Failure::Body(format!("the service answered {code} with a body that is not JSON: {e}")));
        }
        Err(api_error(code, &bytes))
    }
}

/// A Google error body (`{"error": {"code", "status", "message"}}`), agentstate's own routes'
/// (`{"detail": "…"}`), or what there is of it.
fn api_error(code: StatusCode, bytes: &[u8]) -> Failure {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str).map(str::to_owned);
    let detail = parsed.as_ref().and_then(|v| v.get("detail")).and_then(Value::as_str).map(str::to_owned);
    let message = field("message").or(detail).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(bytes);
        let text: String = text.chars().take(200).collect();
        if text.trim().is_empty() { code.to_string() } else { text }
    });
    Failure::Api { code, status: field("status").unwrap_or_default(), message }
}

/// 50 ms, 200 ms, 800 ms, … with up to 25% jitter, so clients retrying together spread out.
fn backoff(attempt: u32) -> Duration {
    let base = 50u64.saturating_mul(4u64.saturating_pow(attempt.saturating_sub(1))).min(2_000);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    Duration::from_millis(base + u64::from(nanos) % (base / 4 + 1))
}

/// The current span's trace as W3C `traceparent` (and `tracestate`) headers, when an OpenTelemetry
/// propagator is installed and the current `tracing` span belongs to a trace; none otherwise.
fn trace_context() -> Vec<(String, String)> {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    struct Headers(Vec<(String, String)>);
    impl opentelemetry::propagation::Injector for Headers {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_owned(), value));
        }
    }
    let context = tracing::Span::current().context();
    let mut headers = Headers(Vec::new());
    opentelemetry::global::get_text_map_propagator(|propagator| propagator.inject_context(&context, &mut headers));
    headers.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_errors_are_read_and_other_bodies_kept_short() {
        let body = br#"{"error": {"code": 409, "message": "modified", "status": "ABORTED"}}"#;
        let failure = api_error(StatusCode::CONFLICT, body);
        assert!(failure.is(StatusCode::CONFLICT, "ABORTED") && failure.is(StatusCode::CONFLICT, ""));
        assert_eq!(failure.message(), "modified");
        let failure = api_error(StatusCode::BAD_GATEWAY, "x".repeat(1000).as_bytes());
        assert_eq!(failure.message().len(), 200);
        assert_eq!(api_error(StatusCode::BAD_GATEWAY, b"").message(), "502 Bad Gateway");
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_millis(50) && backoff(1) < Duration::from_millis(70));
        assert!(backoff(3) >= Duration::from_millis(800));
        assert!(backoff(30) <= Duration::from_millis(2_501));
    }

    #[test]
    fn urls_encode_segments_and_names_resolve_under_the_parent() {
        let base = Url::parse("http://h/v1beta1").unwrap();
        let parent = vec!["projects".into(), "p".into(), "locations".into(), "l".into()];
        let client = Client::new(reqwest::Client::new(), base, parent, Credentials::None, false);
        let path = vec!["reasoningEngines".into(), "1".into(), "sessions".into(), "a b?c:appendEvent".into()];
        let url = client.url(&path, &[("filter", "user_id=\"u\"".into())], false);
        assert_eq!(
            url.as_str(),
            "http://h/v1beta1/projects/p/locations/l/reasoningEngines/1/sessions/a%20b%3Fc:appendEvent?filter=user_id%3D%22u%22"
        );
        let root = client.url(&["apps".into(), "1".into()], &[], true);
        assert_eq!(root.as_str(), "http://h/apps/1");
        let relative = client.relative("projects/p/locations/l/operations/9").unwrap();
        assert_eq!(relative, ["operations", "9"]);
        assert!(client.relative("projects/q/locations/l/operations/9").is_none());
    }
}
