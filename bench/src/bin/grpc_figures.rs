//! The Agent Engine Sessions API over gRPC next to the same calls over REST and in process: an
//! append, a session without its events (the smallest answer: mostly each surface's own cost per
//! call), and the newest 20 events of a session of 1,000, against one server on one store.
//!
//! `cargo run --release -p agentstate-bench --bin grpc_figures [-- --db sqlite|memory --runs N
//! --only router,grpc-router,rest,grpc]`
//! serves the API (REST and gRPC on one loopback port, as `agentstate serve` does) over a fresh
//! store, then times `--runs` calls of each kind on each surface, the surfaces taking turns in
//! rounds of 50 so that none gets a warmer cache; it prints medians and p99s, with each surface's
//! median as a ratio to the in-process call, and the REST handler and the gRPC method called
//! through the router without a socket (what the connection itself costs is the difference; a
//! page is skimmed for its count of events, not parsed into values or decoded, so these time the
//! server's side). One client at a time: these are
//! latencies, not throughput. `--only` times the in-process baseline and the surfaces named: to
//! profile one.

use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, ListEvents, SessionKey, SessionService};
use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
use agentstate_server::{AppState, Connections, app, serve};
use api::session_service_client::SessionServiceClient;
use clap::Parser;
use serde_json::json;
use tonic::transport::Channel;

#[derive(Parser)]
struct Args {
    /// The store: `sqlite` (a file in a temporary directory) or `memory`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Calls timed per kind and surface.
    #[arg(long, default_value_t = 1000)]
    runs: usize,
    /// Only these surfaces besides the in-process baseline (`router`, `grpc-router`, `rest`, `grpc`; all when
    /// none is named): to profile one of them.
    #[arg(long, value_delimiter = ',')]
    only: Vec<Surface>,
}

const ENGINE: &str = "7001";
const USER: &str = "u";
const ROUND: usize = 50;

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Surface {
    #[value(skip)]
    InProcess,
    /// The REST handler called through the router, without a socket: where the time goes.
    Router,
    /// The gRPC method called through the router, without a socket: the server's side of a
    /// call, next to the REST handler's.
    GrpcRouter,
    Rest,
    Grpc,
}

const SURFACES: [Surface; 5] = [Surface::InProcess, Surface::Router, Surface::GrpcRouter, Surface::Rest, Surface::Grpc];

struct Clients {
    service: SessionService,
    router: axum::Router,
    http: reqwest::Client,
    base: String,
    grpc: SessionServiceClient<Channel>,
}

fn name(session: &str) -> String {
    format!("reasoningEngines/{ENGINE}/sessions/{session}")
}

fn event_json(n: usize) -> serde_json::Value {
    json!({
        "author": "user",
        "invocationId": format!("i{n}"),
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "content": {"role": "user", "parts": [{"text": format!("message {n}")}]},
        "actions": {"stateDelta": {"turn": n, "user:last": n}},
    })
}

fn event_message(n: usize) -> api::SessionEvent {
    let now = chrono::Utc::now();
    api::SessionEvent {
        author: "user".into(),
        invocation_id: format!("i{n}"),
        timestamp: Some(pbjson_types::Timestamp {
            seconds: now.timestamp(),
            nanos: i32::try_from(now.timestamp_subsec_nanos()).unwrap_or(0),
        }),
        content: Some(api::Content {
            role: "user".into(),
            parts: vec![api::Part { data: Some(api::part::Data::Text(format!("message {n}"))), ..Default::default() }],
        }),
        actions: Some(api::EventActions {
            state_delta: Some(pbjson_types::Struct {
                fields: [
                    ("turn".to_owned(), pbjson_types::Value::from(n as f64)),
                    ("user:last".to_owned(), pbjson_types::Value::from(n as f64)),
                ]
                .into(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

impl Clients {
    /// A request through the router, no socket: its status and answer.
    async fn route(
        &self,
        method: &str,
        uri: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(axum::http::StatusCode, axum::body::Bytes)> {
        use tower::ServiceExt;
        let body = body.map_or_else(axum::body::Body::empty, |b| axum::body::Body::from(b.to_string()));
        let request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(body)?;
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        Ok((status, axum::body::to_bytes(response.into_body(), usize::MAX).await?))
    }

    /// A gRPC call of `method` through the router, no socket: the request framed as on the wire
    /// (a 5-byte prefix, the message), the answer's message unframed, as bytes.
    async fn route_grpc(&self, method: &str, message: &impl prost::Message) -> anyhow::Result<axum::body::Bytes> {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let mut frame = vec![0];
        frame.extend(u32::try_from(message.encoded_len())?.to_be_bytes());
        message.encode(&mut frame)?;
        let request = axum::http::Request::builder()
            .method("POST")
            .uri(format!("/google.cloud.aiplatform.v1beta1.SessionService/{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(axum::body::Body::from(frame))?;
        let answer = self.router.clone().oneshot(request).await?.into_body().collect().await?;
        let status = answer.trailers().and_then(|t| t.get("grpc-status")).cloned();
        anyhow::ensure!(status.as_ref().is_some_and(|s| s == "0"), "{method}: grpc-status {status:?}");
        let mut bytes = answer.to_bytes();
        anyhow::ensure!(bytes.len() >= 5, "{method}: no message in the answer");
        Ok(bytes.split_off(5))
    }

    async fn append(&mut self, surface: Surface, session: &str, n: usize) -> anyhow::Result<()> {
        match surface {
            Surface::InProcess => {
                let key = SessionKey::new(ENGINE, USER, session)?;
                let event =
                    Event::new(Event::new_id()).author("user").delta("turn", json!(n)).delta("user:last", json!(n));
                self.service.append_now(&key, event).await?;
            }
            Surface::Router => {
                let uri = format!("/v1beta1/{}:appendEvent", name(session));
                let (status, _) = self.route("POST", &uri, Some(event_json(n))).await?;
                anyhow::ensure!(status.is_success(), "append: {status}");
            }
            Surface::GrpcRouter => {
                let request = api::AppendEventRequest { name: name(session), event: Some(event_message(n)) };
                self.route_grpc("AppendEvent", &request).await?;
            }
            Surface::Rest => {
                let url = format!("{}/v1beta1/{}:appendEvent", self.base, name(session));
                let response = self.http.post(url).json(&event_json(n)).send().await?;
                anyhow::ensure!(response.status().is_success(), "append: {}", response.status());
            }
            Surface::Grpc => {
                let request = api::AppendEventRequest { name: name(session), event: Some(event_message(n)) };
                self.grpc.append_event(request).await?;
            }
        }
        Ok(())
    }

    /// A session without its events: the call whose answer is smallest, so what is left of its
    /// time on each surface is mostly that surface's own cost per call.
    async fn get(&mut self, surface: Surface, session: &str) -> anyhow::Result<String> {
        Ok(match surface {
            Surface::InProcess => {
                let key = SessionKey::new(ENGINE, USER, session)?;
                let found = self.service.get_session(&key, GetSessionConfig::recent(0)).await?;
                found.map(|s| s.user_id().to_owned()).unwrap_or_default()
            }
            Surface::Router => {
                let (_, body) = self.route("GET", &format!("/v1beta1/{}", name(session)), None).await?;
                user_of(&body)?
            }
            Surface::GrpcRouter => {
                let request = api::GetSessionRequest { name: name(session) };
                <api::Session as prost::Message>::decode(self.route_grpc("GetSession", &request).await?)?.user_id
            }
            Surface::Rest => {
                let body =
                    self.http.get(format!("{}/v1beta1/{}", self.base, name(session))).send().await?.bytes().await?;
                user_of(&body)?
            }
            Surface::Grpc => {
                let request = api::GetSessionRequest { name: name(session) };
                self.grpc.get_session(request).await?.into_inner().user_id
            }
        })
    }

    async fn newest_20(&mut self, surface: Surface, session: &str) -> anyhow::Result<usize> {
        Ok(match surface {
            Surface::InProcess => {
                let key = SessionKey::new(ENGINE, USER, session)?;
                let request = ListEvents { page_size: 20, newest_first: true, ..ListEvents::default() };
                self.service.list_events(&key, request).await?.map_or(0, |page| page.events.len())
            }
            Surface::Router => {
                let uri = format!("/v1beta1/{}/events?pageSize=20&orderBy=timestamp%20desc", name(session));
                let (_, page) = self.route("GET", &uri, None).await?;
                // Skimmed, not parsed into values: this surface times the server's side.
                #[derive(serde::Deserialize)]
                struct Page {
                    #[serde(rename = "sessionEvents")]
                    events: Vec<serde::de::IgnoredAny>,
                }
                serde_json::from_slice::<Page>(&page)?.events.len()
            }
            Surface::GrpcRouter => {
                // Skimmed for its events, not decoded: this surface times the server's side.
                let page = self.route_grpc("ListEvents", &list_events_request(session)).await?;
                count_field(&page, 1)?
            }
            Surface::Rest => {
                let url =
                    format!("{}/v1beta1/{}/events?pageSize=20&orderBy=timestamp%20desc", self.base, name(session));
                let page: serde_json::Value = self.http.get(url).send().await?.json().await?;
                page["sessionEvents"].as_array().map_or(0, Vec::len)
            }
            Surface::Grpc => {
                self.grpc.list_events(list_events_request(session)).await?.into_inner().session_events.len()
            }
        })
    }
}

/// The newest 20 events of `session`.
fn list_events_request(session: &str) -> api::ListEventsRequest {
    api::ListEventsRequest {
        parent: name(session),
        page_size: 20,
        order_by: "timestamp desc".into(),
        ..Default::default()
    }
}

/// How many times field `field` is in `message`, its other fields skipped.
fn count_field(mut message: &[u8], field: u32) -> anyhow::Result<usize> {
    use prost::encoding::{DecodeContext, decode_key, skip_field};
    let mut count = 0;
    while !message.is_empty() {
        let (tag, wire_type) = decode_key(&mut message)?;
        count += usize::from(tag == field);
        skip_field(wire_type, tag, &mut message, DecodeContext::default())?;
    }
    Ok(count)
}

/// The `userId` of a session resource.
fn user_of(body: &[u8]) -> anyhow::Result<String> {
    #[derive(serde::Deserialize)]
    struct Resource {
        #[serde(rename = "userId")]
        user_id: String,
    }
    Ok(serde_json::from_slice::<Resource>(body)?.user_id)
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("agentstate-grpc-figures-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let service = match args.db.as_str() {
        "memory" => SessionService::in_memory(),
        "sqlite" => {
            let url = format!("sqlite://{}/figures.db", dir.display());
            SessionService::new(agentstate_sql::SqlStore::connect(&url).await?)
        }
        other => anyhow::bail!("--db takes sqlite or memory, not {other:?}"),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = app(AppState::new(service.clone()));
    tokio::spawn(serve(listener, server.clone(), Connections::default(), std::future::pending()));
    let channel = Channel::from_shared(format!("http://{address}"))?.connect().await?;
    let mut clients = Clients {
        service: service.clone(),
        router: server,
        http: reqwest::Client::new(),
        base: format!("http://{address}"),
        grpc: SessionServiceClient::new(channel),
    };

    // A session per surface to append to, and one of 1,000 events to read.
    for surface in SURFACES {
        service.create_session(CreateSession::new(ENGINE, USER).id(format!("append-{surface:?}"))).await?;
    }
    service.create_session(CreateSession::new(ENGINE, USER).id("long")).await?;
    eprintln!("filling a session with 1,000 events…");
    for n in 0..1000 {
        clients.append(Surface::InProcess, "long", n).await?;
    }

    let mut appends: Vec<Vec<Duration>> = vec![Vec::new(); SURFACES.len()];
    let mut gets: Vec<Vec<Duration>> = vec![Vec::new(); SURFACES.len()];
    let mut reads: Vec<Vec<Duration>> = vec![Vec::new(); SURFACES.len()];
    let mut done = 0;
    while done < args.runs {
        let round = ROUND.min(args.runs - done);
        for (i, surface) in SURFACES.into_iter().enumerate() {
            if !(surface == Surface::InProcess || args.only.is_empty() || args.only.contains(&surface)) {
                continue;
            }
            let session = format!("append-{surface:?}");
            for n in 0..round {
                let start = Instant::now();
                clients.append(surface, &session, done + n).await?;
                appends[i].push(start.elapsed());
            }
            for _ in 0..round {
                let start = Instant::now();
                let user = clients.get(surface, &session).await?;
                gets[i].push(start.elapsed());
                anyhow::ensure!(user == USER, "{surface:?} read the session of {user:?}, not {USER:?}");
            }
            for _ in 0..round {
                let start = Instant::now();
                let read = clients.newest_20(surface, "long").await?;
                reads[i].push(start.elapsed());
                anyhow::ensure!(read == 20, "{surface:?} read {read} events, not 20");
            }
        }
        done += round;
        eprintln!("{done}/{} calls of each kind on each surface", args.runs);
    }

    println!("store: {}, {} calls of each kind per surface, one client, loopback", args.db, args.runs);
    println!(
        "| call | in process | REST handler, no socket | gRPC method, no socket | REST (HTTP/1.1, JSON) | gRPC (HTTP/2, protobuf) |"
    );
    println!("|---|---|---|---|---|---|");
    let calls =
        [("append an event", appends), ("get a session, no events", gets), ("newest 20 of 1,000 events", reads)];
    for (what, samples) in calls {
        let medians: Vec<Option<(Duration, Duration)>> =
            samples.into_iter().map(|s| (!s.is_empty()).then(|| stats(s))).collect();
        let floor = medians[0].map_or(1.0, |(p50, _)| p50.as_secs_f64());
        let cells: Vec<String> = medians
            .iter()
            .map(|m| {
                m.map_or("—".into(), |(p50, p99)| {
                    format!("{} (p99 {}) ×{:.1}", us(p50), us(p99), p50.as_secs_f64() / floor)
                })
            })
            .collect();
        println!("| {what} | {} |", cells.join(" | "));
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
