//! OpenTelemetry traces from the binary, received by an OTLP receiver the test starts: the
//! request span continues the caller's `traceparent` (REST and gRPC), carries the semantic
//! conventions' attributes, and the storage spans descend from it; without the variables nothing
//! is exported, a malformed `traceparent` starts a trace of its own, an unreachable collector
//! fails nothing, and a protocol the binary does not speak stops it at start. The Agent Engine
//! client crate (ADK-Rust's remote store) sends the current span's trace.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
use api::session_service_client::SessionServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::binary::{Running, serve_with_env};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// Spans received, and the service name they came with.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    services: Vec<String>,
}

impl Received {
    fn keep(&mut self, request: ExportTraceServiceRequest) {
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.as_ref()?.value.as_ref())
                .map(|v| match v {
                    Any::StringValue(s) => s.clone(),
                    other => format!("{other:?}"),
                });
            self.services.extend(service);
            self.spans.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
}

/// An OTLP/HTTP receiver on loopback: its endpoint and what it got.
async fn receiver() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let kept = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                kept.lock().unwrap().keep(ExportTraceServiceRequest::decode(body).unwrap());
                axum::http::StatusCode::OK
            }
        }),
    );
    (listen(app).await, received)
}

/// An OTLP/gRPC receiver (the collector's `TraceService`) on loopback.
struct GrpcReceiver(Arc<Mutex<Received>>);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().keep(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

async fn grpc_receiver() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let service = TraceServiceServer::new(GrpcReceiver(Arc::clone(&received)));
    (listen(tonic::service::Routes::new(service).into_axum_router()).await, received)
}

async fn listen(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    endpoint
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.as_ref()?.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    match attribute(span, key) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

/// Waits (up to 20 s) for a span named `name` in trace `trace`.
async fn span_named(received: &Mutex<Received>, trace: &str, name: &str) -> Span {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(span) =
            received.lock().unwrap().spans.iter().find(|s| hex(&s.trace_id) == trace && s.name == name).cloned()
        {
            return span;
        }
        if Instant::now() > deadline {
            let seen: Vec<_> =
                received.lock().unwrap().spans.iter().map(|s| (hex(&s.trace_id), s.name.clone())).collect();
            panic!("no span {name:?} in trace {trace} received; received {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates a session of `user` as a call in the caller's trace ([`TRACE`], parent [`PARENT`]).
async fn create_in_trace(http: &reqwest::Client, addr: &str, user: &str) -> u16 {
    let created = http
        .post(format!("http://{addr}/apps/travel/users/{user}/sessions"))
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    created.status().as_u16()
}

fn serve_traced(endpoint: &str) -> (Running, String) {
    serve_exporting(endpoint, "http/protobuf", &[])
}

/// The binary exporting to `endpoint` over `protocol`, with more options.
fn serve_exporting(endpoint: &str, protocol: &str, options: &[&str]) -> (Running, String) {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}/traced.db", dir.display());
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
        ("OTEL_SERVICE_NAME", "agentstate-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let (child, addr) = serve_with_env(&[&["--db", &db, "--addr", "127.0.0.1:0"], options].concat(), &env);
    (Running(child), addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_continues_the_callers_trace_with_its_attributes_and_storage_spans() {
    let (endpoint, received) = receiver().await;
    let (_server, addr) = serve_traced(&endpoint);
    let http = reqwest::Client::new();
    assert_eq!(create_in_trace(&http, &addr, "alice").await, 200);

    let request = span_named(&received, TRACE, "POST /apps/{app_name}/users/{user_id}/sessions").await;
    assert_eq!(hex(&request.parent_span_id), PARENT, "the caller's span is the parent");
    assert_eq!(text(&request, "http.request.method"), Some("POST"));
    assert_eq!(text(&request, "http.route"), Some("/apps/{app_name}/users/{user_id}/sessions"));
    assert_eq!(attribute(&request, "http.response.status_code"), Some(&Any::IntValue(200)));
    assert!(
        request.attributes.iter().all(|a| a.key == "url.path" || !format!("{:?}", a.value).contains("alice")),
        "a user's name outside url.path: {:?}",
        request.attributes
    );
    // The storage work descends from the request.
    let storage = span_named(&received, TRACE, "create_session").await;
    assert_eq!(storage.parent_span_id, request.span_id, "the storage span is the request's child");
    assert_eq!(text(&storage, "db.system.name"), Some("sqlite"));
    assert_eq!(text(&storage, "db.operation.name"), Some("create_session"));
    assert!(received.lock().unwrap().services.iter().all(|s| s == "agentstate-under-test"));

    // gRPC: the same, from the call's metadata.
    let grpc_trace = "0af7651916cd43dd8448eb211c80319c";
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut client = SessionServiceClient::new(channel);
    let mut call = tonic::Request::new(api::CreateSessionRequest {
        parent: "reasoningEngines/77".into(),
        session: Some(api::Session { user_id: "alice".into(), ..Default::default() }),
        session_id: String::new(),
    });
    call.metadata_mut().insert("traceparent", format!("00-{grpc_trace}-b7ad6b7169203331-01").parse().unwrap());
    client.create_session(call).await.unwrap();
    let rpc = span_named(&received, grpc_trace, "google.cloud.aiplatform.v1beta1.SessionService/CreateSession").await;
    assert_eq!(hex(&rpc.parent_span_id), "b7ad6b7169203331");
    assert_eq!(text(&rpc, "rpc.system"), Some("grpc"));
    assert_eq!(text(&rpc, "rpc.service"), Some("google.cloud.aiplatform.v1beta1.SessionService"));
    assert_eq!(text(&rpc, "rpc.method"), Some("CreateSession"));

    // A malformed traceparent starts a trace of the server's own.
    let before = received.lock().unwrap().spans.len();
    let answered = http
        .get(format!("http://{addr}/apps/travel/users/alice/sessions"))
        .header("traceparent", "00-not-a-trace-01")
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    let root = loop {
        let found = received.lock().unwrap().spans[before..]
            .iter()
            .find(|s| s.name == "GET /apps/{app_name}/users/{user_id}/sessions")
            .cloned();
        if let Some(span) = found {
            break span;
        }
        assert!(Instant::now() < deadline, "no span for the request with a malformed traceparent");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(root.parent_span_id.is_empty(), "a root span");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_fails_nothing() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    for protocol in ["http/protobuf", "grpc"] {
        let (_server, addr) = serve_exporting(&endpoint, protocol, &[]);
        let http = reqwest::Client::new();
        for i in 0..20 {
            assert_eq!(create_in_trace(&http, &addr, &format!("u{i}")).await, 200, "{protocol}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_over_grpc_carries_the_same_spans() {
    let (endpoint, received) = grpc_receiver().await;
    let (_server, addr) = serve_exporting(&endpoint, "grpc", &[]);
    assert_eq!(create_in_trace(&reqwest::Client::new(), &addr, "alice").await, 200);
    let request = span_named(&received, TRACE, "POST /apps/{app_name}/users/{user_id}/sessions").await;
    assert_eq!(hex(&request.parent_span_id), PARENT);
    let storage = span_named(&received, TRACE, "create_session").await;
    assert_eq!(storage.parent_span_id, request.span_id);
    assert!(received.lock().unwrap().services.iter().all(|s| s == "agentstate-under-test"));
}

#[test]
fn a_protocol_it_does_not_speak_stops_it_at_start() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentstate"))
        .args(["serve", "--db", "sqlite::memory:", "--addr", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\""), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_is_traced_by_the_genai_conventions() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    // The model calls a tool, then answers.
    let model = MockServer::start().await;
    let call = serde_json::json!({
        "model": "llama3.2-0901",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "load_memory", "arguments": "{\"query\": \"trips\"}"}}
        ]}}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 7}
    });
    let answer = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "None yet."}}],
        "usage": {"prompt_tokens": 52, "completion_tokens": 3}
    });
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(call))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&model)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&model)
        .await;
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("guide.yaml");
    let yaml = format!(
        "name: guide\nprovider: openai\nbase_url: {}/v1\nmodel: llama3.2\ntemperature: 0.25\n\
         instruction: Answer from memory.\ntools:\n  - name: load_memory\n",
        model.uri()
    );
    std::fs::write(&file, yaml).unwrap();

    let (endpoint, received) = receiver().await;
    let agent = format!("travel={}", file.display());
    let (_server, addr) = serve_exporting(&endpoint, "http/protobuf", &["--agent", &agent]);
    let http = reqwest::Client::new();
    let created = http.post(format!("http://{addr}/apps/travel/users/alice/sessions/s1")).json(&serde_json::json!({}));
    assert_eq!(created.send().await.unwrap().status(), 200);
    let run = http
        .post(format!("http://{addr}/run"))
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .json(&serde_json::json!({
            "appName": "travel", "userId": "alice", "sessionId": "s1",
            "newMessage": {"role": "user", "parts": [{"text": "What trips have I taken?"}]}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200, "{}", run.text().await.unwrap());

    let request = span_named(&received, TRACE, "POST /run").await;
    let agent = span_named(&received, TRACE, "invoke_agent guide").await;
    assert_eq!(agent.parent_span_id, request.span_id, "the agent runs in the request");
    assert_eq!(text(&agent, "gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(text(&agent, "gen_ai.agent.name"), Some("guide"));

    let chats: Vec<Span> = {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let chats: Vec<Span> =
                received.lock().unwrap().spans.iter().filter(|s| s.name == "chat llama3.2").cloned().collect();
            if chats.len() == 2 || Instant::now() > deadline {
                break chats;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_eq!(chats.len(), 2, "a span per model call");
    let first = chats.iter().find(|s| attribute(s, "gen_ai.usage.input_tokens") == Some(&Any::IntValue(31))).unwrap();
    assert_eq!(first.parent_span_id, agent.span_id);
    assert_eq!(first.kind, 3, "a client span");
    assert_eq!(text(first, "gen_ai.operation.name"), Some("chat"));
    assert_eq!(text(first, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(text(first, "gen_ai.request.model"), Some("llama3.2"));
    assert_eq!(text(first, "gen_ai.response.model"), Some("llama3.2-0901"));
    assert_eq!(attribute(first, "gen_ai.request.temperature"), Some(&Any::DoubleValue(0.25)));
    assert_eq!(attribute(first, "gen_ai.usage.output_tokens"), Some(&Any::IntValue(7)));

    let tool = span_named(&received, TRACE, "execute_tool load_memory").await;
    assert_eq!(tool.parent_span_id, agent.span_id);
    assert_eq!(text(&tool, "gen_ai.tool.name"), Some("load_memory"));
    assert_eq!(text(&tool, "gen_ai.tool.call.id"), Some("call_1"));
    // What the user said and the model answered stays out of the trace.
    for span in received.lock().unwrap().spans.iter().filter(|s| hex(&s.trace_id) == TRACE) {
        let attributes = format!("{:?}", span.attributes);
        assert!(!attributes.contains("trips") && !attributes.contains("None yet"), "{}: {attributes}", span.name);
    }
    // The user's message is stored by the run, the agent's events by the agent.
    let appends: Vec<Vec<u8>> = received
        .lock()
        .unwrap()
        .spans
        .iter()
        .filter(|s| hex(&s.trace_id) == TRACE && s.name == "append_event")
        .map(|s| s.parent_span_id.clone())
        .collect();
    assert!(appends.contains(&request.span_id), "the user's message under the request");
    assert!(appends.iter().filter(|p| **p == agent.span_id).count() >= 3, "call, answers and reply under the agent");
}

/// Forwards every request to `target`, keeping each one's `traceparent`; its base URL.
async fn recording(target: String) -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let forward = move |request: axum::extract::Request| {
        let (kept, target) = (Arc::clone(&kept), target.clone());
        async move {
            let header = request.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned);
            kept.lock().unwrap().push(header);
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut headers = parts.headers.clone();
            headers.remove("host");
            let url = format!("{target}{}", parts.uri.path_and_query().map_or("", |p| p.as_str()));
            let answer =
                reqwest::Client::new().request(parts.method, url).headers(headers).body(body).send().await.unwrap();
            (answer.status(), answer.bytes().await.unwrap())
        }
    };
    let app = axum::Router::new().fallback(forward);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test(flavor = "current_thread")]
async fn the_agent_engine_client_crate_sends_the_current_trace() {
    use agentstate::{CreateSession, SessionService};
    use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
    use tracing::Instrument as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let (proxy, seen) = recording(crate::vertex::serve(None)).await;
    let store = agentstate_vertex::Builder::default().endpoint(proxy).build().unwrap();
    let service = SessionService::new(store);
    // No propagator, no trace: no header.
    service.create_session(CreateSession::new("88", "u")).await.unwrap();
    let before = seen.lock().unwrap().len();
    assert!(before > 0 && seen.lock().unwrap().iter().all(Option::is_none));

    // An agent's span, as ADK-Rust's tracing makes one, with OpenTelemetry under it.
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("agent")));
    let _current = tracing::subscriber::set_default(subscriber);
    let turn = tracing::info_span!("agent turn");
    let trace = turn.context().span().span_context().trace_id().to_string();
    service.create_session(CreateSession::new("88", "u")).instrument(turn).await.unwrap();
    let sent = seen.lock().unwrap()[before..].to_vec();
    assert!(!sent.is_empty());
    for header in sent {
        let header = header.expect("a traceparent on every request of the traced call");
        assert!(header.starts_with(&format!("00-{trace}-")), "{header} is not of trace {trace}");
    }
}
