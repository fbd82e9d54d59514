//! What deploying alone costs a request: `agentstate serve` as it is by default, next to the same
//! binary exporting traces (every request sampled, and none), on TLS, and checking a static token
//! or an OpenID provider's JWT, measured in the same run.
//!
//! `cargo build --release -p agentstate-server && cargo run --release -p agentstate-bench --bin
//! deploy_figures [-- --seconds S --rounds N]` starts one server per setup (each on its own SQLite
//! file; the OTLP collector and the JWKS provider are this process's, on loopback), fills a session
//! of 100 events on each (and makes another to append to), then measures in rounds, the setups taking turns within a round so none
//! gets a warmer machine: a GET of the session on one kept-alive connection (p50), the same GET
//! from 32 connections at once (requests per second), an append on one connection (p50), and a GET
//! on a new connection each time (p50: the TCP and, on TLS, the handshake). It prints the medians of
//! the rounds and each as a ratio to the default setup's.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use clap::Parser;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};

#[derive(Parser)]
struct Args {
    /// The binary to measure.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/agentstate"))]
    bin: PathBuf,
    /// Seconds each measurement runs, per setup and round.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Rounds (medians are over them).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

const EVENTS: usize = 100;
const CONNECTIONS: usize = 32;
const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "agentstate-bench";
const STATIC: &str = "bench-static-token-0123456789";

/// One server under measurement.
struct Setup {
    name: &'static str,
    child: tokio::process::Child,
    base: String,
    /// Kept-alive connections.
    http: reqwest::Client,
    /// A new connection per request.
    fresh: reqwest::Client,
    token: Option<String>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A setup to start: its name, options, environment and bearer token.
type Plan<'a> = (&'static str, Vec<&'a str>, &'a [(&'a str, &'a str)], Option<String>);

/// Figures of one setup in one round.
#[derive(Default, Clone)]
struct Round {
    get_p50: Duration,
    get_rps: f64,
    append_p50: Duration,
    fresh_p50: Duration,
}

async fn start(
    bin: &PathBuf,
    name: &'static str,
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(tokio::process::Child, String)> {
    let db = format!("sqlite://{}/{}.db", dir.display(), uuid::Uuid::new_v4());
    let mut child = tokio::process::Command::new(bin)
        .args(["serve", "--db", &db, "--addr", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn,agentstate::cli::serve=info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("{} (build it: cargo build --release -p agentstate-server)", bin.display()))?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        let mut log = String::new();
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.split("addr=").nth(1) {
                return Ok(rest.split_whitespace().next().unwrap_or_default().to_owned());
            }
            log.push_str(&line);
            log.push('\n');
        }
        bail!("{name}: the server stopped before it listened:\n{log}")
    })
    .await
    .with_context(|| format!("{name}: no address in 30 s"))??;
    // Keep draining its log, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, addr))
}

/// An OTLP/HTTP collector that takes every batch and keeps nothing.
async fn collector() -> anyhow::Result<String> {
    let app = axum::Router::new().route("/v1/traces", axum::routing::post(|| async { axum::http::StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// An OpenID provider's key set on loopback, and a token it signed (RS256, as most providers).
async fn provider() -> anyhow::Result<(String, String)> {
    let pair = rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)?;
    let key = EncodingKey::from_rsa_pem(pair.serialize_pem().as_bytes())?;
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256)?;
    jwk.common.key_id = Some("bench".into());
    let set = JwkSet { keys: vec![jwk] };
    let app = axum::Router::new().route("/jwks", axum::routing::get(move || async move { axum::Json(set) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/jwks", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "u", "apps": "*", "iat": now, "exp": now + 86_400});
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("bench".into());
    Ok((url, jsonwebtoken::encode(&header, &claims, &key)?))
}

/// A CA and a leaf for 127.0.0.1 in `dir`: (certificate file, key file, the CA's PEM).
fn certificates(dir: &std::path::Path) -> anyhow::Result<(String, String, String)> {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "agentstate bench CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()])?;
    params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    let key = KeyPair::generate()?;
    let leaf = params.signed_by(&key, &ca)?;
    let (cert_file, key_file) = (dir.join("leaf.pem"), dir.join("leaf.key"));
    std::fs::write(&cert_file, leaf.pem())?;
    std::fs::write(&key_file, key.serialize_pem())?;
    Ok((cert_file.display().to_string(), key_file.display().to_string(), ca.pem()))
}

fn clients(ca: Option<&str>) -> anyhow::Result<(reqwest::Client, reqwest::Client)> {
    let build = |fresh: bool| -> anyhow::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder();
        if fresh {
            builder = builder.pool_max_idle_per_host(0);
        }
        if let Some(ca) = ca {
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes())?);
        }
        Ok(builder.build()?)
    };
    Ok((build(false)?, build(true)?))
}

impl Setup {
    fn request(&self, client: &reqwest::Client, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Session `s`, read, of [`EVENTS`] events; session `w`, appended to.
    async fn fill(&self) -> anyhow::Result<()> {
        for session in ["s", "w"] {
            let path = format!("/apps/bench/users/u/sessions/{session}");
            let status = self.request(&self.http, reqwest::Method::POST, &path).json(&json!({})).send().await?.status();
            anyhow::ensure!(status.is_success(), "{}: create answered {status}", self.name);
        }
        for n in 0..EVENTS {
            self.append("s", n).await?;
        }
        Ok(())
    }

    async fn append(&self, session: &str, n: usize) -> anyhow::Result<()> {
        let event = json!({
            "author": "user",
            "invocationId": format!("i{n}"),
            "timestamp": SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64(),
            "content": {"role": "user", "parts": [{"text": format!("message {n} of the conversation")}]},
            "actions": {"stateDelta": {"turn": n}},
        });
        let path = format!("/apps/bench/users/u/sessions/{session}/events");
        let body = json!({ "event": event });
        let status = self.request(&self.http, reqwest::Method::POST, &path).json(&body).send().await?.status();
        anyhow::ensure!(status.is_success(), "{}: append answered {status}", self.name);
        Ok(())
    }

    async fn get(&self, client: &reqwest::Client) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let answer = self.request(client, reqwest::Method::GET, "/apps/bench/users/u/sessions/s").send().await?;
        anyhow::ensure!(answer.status().is_success(), "{}: get answered {}", self.name, answer.status());
        answer.bytes().await?;
        Ok(started.elapsed())
    }

    async fn round(&self, seconds: Duration, next_event: &mut usize) -> anyhow::Result<Round> {
        let p50 = |mut samples: Vec<Duration>| {
            samples.sort();
            samples[samples.len() / 2]
        };
        let mut samples = Vec::new();
        let until = Instant::now() + seconds;
        while Instant::now() < until {
            samples.push(self.get(&self.http).await?);
        }
        let get_p50 = p50(samples);

        let until = Instant::now() + seconds;
        let started = Instant::now();
        let workers = (0..CONNECTIONS).map(|_| async {
            let mut done = 0_u64;
            while Instant::now() < until {
                self.get(&self.http).await?;
                done += 1;
            }
            anyhow::Ok(done)
        });
        let mut total = 0;
        for done in futures_util::future::join_all(workers).await {
            total += done?;
        }
        let get_rps = total as f64 / started.elapsed().as_secs_f64();

        let mut samples = Vec::new();
        let until = Instant::now() + seconds;
        while Instant::now() < until {
            let started = Instant::now();
            self.append("w", *next_event).await?;
            *next_event += 1;
            samples.push(started.elapsed());
        }
        let append_p50 = p50(samples);

        let mut samples = Vec::new();
        let until = Instant::now() + seconds;
        while Instant::now() < until {
            samples.push(self.get(&self.fresh).await?);
        }
        Ok(Round { get_p50, get_rps, append_p50, fresh_p50: p50(samples) })
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn us(seconds: f64) -> String {
    format!("{:.0} µs", seconds * 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("agentstate-deploy-figures-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let collector = collector().await?;
    let (jwks, jwt) = provider().await?;
    let (cert, key, ca) = certificates(&dir)?;
    let tokens_file = dir.join("tokens.json");
    std::fs::write(&tokens_file, json!({"tokens": [{"token": STATIC, "apps": "*", "admin": true}]}).to_string())?;
    let tokens_file = tokens_file.display().to_string();

    let traced = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str())];
    let unsampled = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()), ("OTEL_TRACES_SAMPLER", "always_off")];
    let plans: Vec<Plan> = vec![
        ("default (cleartext, no access control, no traces)", vec![], &[], None),
        ("traces exported, every request sampled", vec![], &traced, None),
        ("traces on, no request sampled", vec![], &unsampled, None),
        ("TLS (ECDSA P-256, HTTP/1.1)", vec!["--tls-cert", &cert, "--tls-key", &key], &[], None),
        ("static bearer token", vec!["--tokens-file", &tokens_file], &[], Some(STATIC.to_owned())),
        (
            "JWT bearer token (RS256, JWKS)",
            vec!["--jwt-jwks-url", &jwks, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE],
            &[],
            Some(jwt.clone()),
        ),
    ];
    let mut setups = Vec::new();
    for (name, options, env, token) in plans {
        let (child, addr) = start(&args.bin, name, &dir, &options, env).await?;
        let tls = options.contains(&"--tls-cert");
        let (http, fresh) = clients(tls.then_some(ca.as_str()))?;
        let base = format!("{}://{addr}", if tls { "https" } else { "http" });
        let setup = Setup { name, child, base, http, fresh, token };
        setup.fill().await?;
        eprintln!("started: {name} ({addr}), a session of {EVENTS} events");
        setups.push(setup);
    }

    let seconds = Duration::from_secs_f64(args.seconds);
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); setups.len()];
    let mut next_event = vec![EVENTS; setups.len()];
    for round in 1..=args.rounds {
        // Each round in another order, so no setup always follows the same one.
        let mut order: Vec<usize> = (0..setups.len()).collect();
        order.rotate_left(round % setups.len());
        for i in order {
            rounds[i].push(setups[i].round(seconds, &mut next_event[i]).await?);
        }
        eprintln!("round {round} of {} done", args.rounds);
    }

    let medians: Vec<[f64; 4]> = rounds
        .iter()
        .map(|r| {
            let of = |f: fn(&Round) -> f64| median(r.iter().map(f).collect());
            [
                of(|r| r.get_p50.as_secs_f64()),
                of(|r| r.get_rps),
                of(|r| r.append_p50.as_secs_f64()),
                of(|r| r.fresh_p50.as_secs_f64()),
            ]
        })
        .collect();
    let base = medians[0];
    println!(
        "\n{} rounds of {:.1} s per measurement; medians of the rounds, each / the default setup's.\n",
        args.rounds, args.seconds
    );
    println!(
        "| setup | GET (100 events), 1 connection, p50 | GET, {CONNECTIONS} connections, req/s | append, 1 connection, p50 | GET on a new connection each, p50 |"
    );
    println!("|---|---|---|---|---|");
    for (setup, m) in setups.iter().zip(&medians) {
        println!(
            "| {} | {} ({:.2}×) | {:.0} ({:.2}×) | {} ({:.2}×) | {} ({:.2}×) |",
            setup.name,
            us(m[0]),
            m[0] / base[0],
            m[1],
            m[1] / base[1],
            us(m[2]),
            m[2] / base[2],
            us(m[3]),
            m[3] / base[3],
        );
    }
    drop(setups);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
