//! The soak run: mixed load against `agentstate serve` on every backend for a given time, with the
//! server's resident memory, open file descriptors, database connections and latency percentiles
//! sampled as it goes. It passes when no request fails and memory and descriptors (those of the
//! database aside, whose pool is bounded) stay flat after the warm-up.
//!
//! ```sh
//! cargo build --release -p agentstate-server
//! cargo run --release -p agentstate-bench --bin soak -- --duration 30m
//! ```
//!
//! Each backend gets its own server process on a spare loopback port and a throwaway database (a
//! SQLite file in a temporary directory, a new PostgreSQL and MariaDB database, a Redis key
//! prefix), removed at the end. The load, per worker (one user each): create, PATCH `stateDelta`
//! (a session key and a `user:` key), GET, list, `/run` of an agent on a scripted model (a local
//! OpenAI-compatible endpoint this program serves), and delete of its oldest session, so the data
//! stays bounded and a flat memory line means no leak.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agentstate_bench::databases::{Backend, Database, open_files};
use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Mixed load against `agentstate serve` on each backend; flat memory and no errors, or a failure.
#[derive(Parser, Debug)]
struct Args {
    /// How long to run: `90s`, `30m`, `2h` (or plain seconds).
    #[arg(long, default_value = "30m", value_parser = duration)]
    duration: Duration,
    /// Sample every this long (default: a minute, or a tenth of the duration if shorter).
    #[arg(long, value_parser = duration)]
    sample_every: Option<Duration>,
    /// Ignore memory growth before this much of the run has passed (default: a third of it, at most 5 minutes).
    #[arg(long, value_parser = duration)]
    warmup: Option<Duration>,
    /// Backends: sqlite, postgres, mysql, redis (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres,mysql,redis")]
    backends: Vec<Backend>,
    /// Concurrent clients per backend.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// The `agentstate` binary (default: target/release/agentstate, else target/debug/agentstate).
    #[arg(long)]
    server: Option<PathBuf>,
    /// Also write the samples and verdicts here, as JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.find(|c: char| !c.is_ascii_digit()).map_or((text, ""), |i| text.split_at(i));
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is not a duration like 90s, 30m or 2h"))?;
    let seconds = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{text:?}: the unit must be s, m or h")),
    };
    if seconds == 0 {
        return Err("the duration must be positive".into());
    }
    Ok(Duration::from_secs(seconds))
}

fn resident_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS line")?;
    Ok(line.split_whitespace().nth(1).context("no VmRSS figure")?.parse()?)
}

/// The operations of the mix.
const OPS: [&str; 6] = ["create", "patch", "get", "list", "run", "delete"];

/// What the workers measured since the last sample.
#[derive(Default)]
struct Tally {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    errors: Vec<String>,
}

/// One sample of one backend's server.
#[derive(Debug, serde::Serialize)]
struct Sample {
    seconds: u64,
    rss_kib: u64,
    fds: usize,
    db_connections: Option<u64>,
    requests: usize,
    errors: usize,
    /// Per operation: [p50, p99, max] in microseconds.
    latency_us: BTreeMap<&'static str, [u64; 3]>,
}

fn percentile(sorted: &[Duration], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_micros() as u64
}

/// A server process that is killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_server(binary: &Path, db: &str, agent: &str, log: &Path) -> anyhow::Result<Server> {
    let mut child = Command::new(binary)
        .args(["serve", "--db", db, "--addr", "127.0.0.1:0", "--agent", agent])
        .env("RUST_LOG", "info")
        .env_remove("AGENTSTATE_DB")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let stderr = tokio::process::ChildStderr::from_std(child.stderr.take().context("no stderr")?)?;
    let mut lines = BufReader::new(stderr).lines();
    let mut file = std::fs::File::create(log)?;
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            use std::io::Write;
            writeln!(file, "{line}")?;
            if let Some(rest) = line.split("addr=").nth(1) {
                return Ok::<_, anyhow::Error>(rest.split_whitespace().next().map(str::to_owned));
            }
        }
        Ok(None)
    })
    .await;
    let addr = match found {
        Ok(Ok(Some(addr))) => addr,
        _ => {
            let _ = child.kill();
            bail!("the server on {db} did not report its address; its log is {}", log.display());
        }
    };
    // Keep copying the log, so the server never blocks on a full pipe.
    tokio::spawn(async move {
        use std::io::Write;
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = writeln!(file, "{line}");
        }
    });
    Ok(Server { child, addr })
}

/// The scripted model: an OpenAI-compatible chat endpoint that always answers the same.
async fn start_model() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async {
            axum::Json(json!({
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Noted; carrying on."}}]
            }))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}/v1"))
}

/// One client: its own user, a handful of sessions at a time, the whole mix in turn.
async fn worker(client: reqwest::Client, base: String, user: String, until: Instant, tally: Arc<Mutex<Tally>>) {
    let app = "soak";
    let sessions_url = format!("{base}/apps/{app}/users/{user}/sessions");
    let mut sessions: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut turn: u64 = 0;
    while Instant::now() < until {
        turn += 1;
        let step = turn % 10;
        let (op, request) = match (step, sessions.back().cloned()) {
            (0, _) | (_, None) => ("create", client.post(&sessions_url).json(&json!({"state": {"turns": 0}}))),
            (1..=4, Some(id)) => (
                "patch",
                client.patch(format!("{sessions_url}/{id}")).json(&json!({"stateDelta": {
                    "turns": turn, "user:last_turn": turn, "note": format!("turn {turn} of {user}")
                }})),
            ),
            (5 | 6, Some(id)) => ("get", client.get(format!("{sessions_url}/{id}"))),
            (7, _) => ("list", client.get(&sessions_url)),
            (8, Some(id)) => (
                "run",
                client.post(format!("{base}/run")).json(&json!({
                    "appName": app, "userId": user, "sessionId": id,
                    "newMessage": {"role": "user", "parts": [{"text": format!("turn {turn}")}]}
                })),
            ),
            (_, Some(_)) if sessions.len() > 5 => {
                let Some(oldest) = sessions.pop_front() else { continue };
                ("delete", client.delete(format!("{sessions_url}/{oldest}")))
            }
            (_, Some(id)) => ("get", client.get(format!("{sessions_url}/{id}"))),
        };
        let start = Instant::now();
        let outcome = match request.send().await {
            Ok(response) => {
                let status = response.status();
                match response.bytes().await {
                    Ok(body) if status.is_success() => Ok(body),
                    Ok(body) => Err(format!("{op}: {status}: {}", String::from_utf8_lossy(&body))),
                    Err(e) => Err(format!("{op}: reading the answer: {e}")),
                }
            }
            Err(e) => Err(format!("{op}: {e}")),
        };
        let elapsed = start.elapsed();
        let mut tally = tally.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(body) => {
                tally.latencies.entry(op).or_default().push(elapsed);
                if op == "create" {
                    match serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["id"].as_str().map(str::to_owned))
                    {
                        Some(id) => sessions.push_back(id),
                        None => tally.errors.push("create: the answer has no id".into()),
                    }
                }
            }
            Err(e) => tally.errors.push(e),
        }
    }
}

/// Runs one backend for the whole duration; its samples.
async fn soak(backend: Backend, args: &Args, binary: &Path, model: &str, dir: &Path) -> anyhow::Result<Vec<Sample>> {
    let dir = dir.join(backend.name());
    std::fs::create_dir_all(&dir)?;
    let db = Database::create(backend, &dir).await?;
    let agent = dir.join("agent.yaml");
    std::fs::write(
        &agent,
        format!(
            "name: soak\nprovider: openai\nbase_url: {model}\nmodel: scripted\n\
             instruction: 'Turn {{turns?}} for a user last seen at turn {{user:last_turn?}}.'\noutput_key: last_answer\n"
        ),
    )?;
    let log = dir.join("server.log");
    let server = start_server(binary, &db.url, &format!("soak={}", agent.display()), &log).await?;
    let pid = server.child.id();
    let base = format!("http://{}", server.addr);
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
    let started = Instant::now();
    let until = started + args.duration;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let workers: Vec<_> = (0..args.workers)
        .map(|w| tokio::spawn(worker(client.clone(), base.clone(), format!("user{w}"), until, Arc::clone(&tally))))
        .collect();
    let every = sample_every(args);
    let mut samples = Vec::new();
    let mut errors_shown = 0;
    loop {
        let next = started + every * (samples.len() as u32 + 1);
        tokio::time::sleep_until(next.min(until).into()).await;
        let drained = std::mem::take(&mut *tally.lock().unwrap_or_else(PoisonError::into_inner));
        for e in drained.errors.iter().take(3usize.saturating_sub(errors_shown)) {
            eprintln!("[{}] error: {e}", backend.name());
            errors_shown += 1;
        }
        let requests = drained.latencies.values().map(Vec::len).sum();
        let latency_us = drained
            .latencies
            .into_iter()
            .map(|(op, mut all)| {
                all.sort_unstable();
                (op, [percentile(&all, 0.5), percentile(&all, 0.99), percentile(&all, 1.0)])
            })
            .collect::<BTreeMap<_, _>>();
        let sample = Sample {
            seconds: started.elapsed().as_secs(),
            rss_kib: resident_kib(pid)?,
            fds: open_files(pid)?.len(),
            db_connections: db.connections(pid).await.ok(),
            requests,
            errors: drained.errors.len(),
            latency_us,
        };
        println!("{}", line(backend, &sample));
        samples.push(sample);
        if Instant::now() >= until {
            break;
        }
    }
    for w in workers {
        w.await?;
    }
    drop(server);
    db.remove().await?;
    Ok(samples)
}

fn sample_every(args: &Args) -> Duration {
    args.sample_every.unwrap_or_else(|| Duration::from_secs(60).min(args.duration / 10).max(Duration::from_secs(1)))
}

fn warmup(args: &Args) -> Duration {
    args.warmup.unwrap_or_else(|| (args.duration / 3).min(Duration::from_secs(300)))
}

fn line(backend: Backend, s: &Sample) -> String {
    let mut out = format!(
        "[{:>8}] {:>5}s  {:>6} requests  rss {:>7.1} MiB  fds {:>4}  db conns {:>3}  errors {}",
        backend.name(),
        s.seconds,
        s.requests,
        s.rss_kib as f64 / 1024.0,
        s.fds,
        s.db_connections.map_or_else(|| "?".to_owned(), |n| n.to_string()),
        s.errors
    );
    for op in OPS {
        if let Some([p50, p99, _]) = s.latency_us.get(op) {
            let _ = write!(out, "  {op} {:.1}/{:.1} ms", *p50 as f64 / 1000.0, *p99 as f64 / 1000.0);
        }
    }
    out
}

/// Whether a backend's run passed, and why not.
fn verdict(samples: &[Sample], warmup: Duration) -> Result<String, String> {
    let errors: usize = samples.iter().map(|s| s.errors).sum();
    let after = samples.iter().position(|s| s.seconds >= warmup.as_secs()).unwrap_or(samples.len() - 1);
    let (base, last) = (&samples[after], &samples[samples.len() - 1]);
    // Flat: within 10 % (and 8 MiB of allocator slack) of the first sample after the warm-up.
    let rss_limit = base.rss_kib + base.rss_kib / 10 + 8 * 1024;
    // Descriptors other than the database's: a connection pool may still grow to its bound after
    // the warm-up, which is not a leak.
    let other = |s: &Sample| s.fds.saturating_sub(s.db_connections.map_or(0, |n| n as usize));
    let fds_limit = other(base) + 4;
    let growth = format!(
        "rss {:.1} → {:.1} MiB after the warm-up, fds {} → {}",
        base.rss_kib as f64 / 1024.0,
        last.rss_kib as f64 / 1024.0,
        base.fds,
        last.fds
    );
    let mut problems = Vec::new();
    if errors > 0 {
        problems.push(format!("{errors} requests failed"));
    }
    if last.rss_kib > rss_limit {
        problems.push(format!("memory grew past {:.1} MiB", rss_limit as f64 / 1024.0));
    }
    if other(last) > fds_limit {
        problems.push(format!("descriptors other than the database's grew past {fds_limit}"));
    }
    if problems.is_empty() { Ok(growth) } else { Err(format!("{}: {growth}", problems.join(", "))) }
}

fn find_server(given: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        return Ok(path.clone());
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join("agentstate"))
        .find(|p| p.exists())
        .context("no agentstate binary: run `cargo build --release -p agentstate-server` first, or pass --server")
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let binary = find_server(args.server.as_ref())?;
    let dir = std::env::temp_dir().join(format!("agentstate-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let model = start_model().await?;
    println!(
        "soak: {} on {} ({} workers each), sampled every {}s, warm-up {}s; server {}; logs in {}",
        humanize(args.duration),
        args.backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(", "),
        args.workers,
        sample_every(&args).as_secs(),
        warmup(&args).as_secs(),
        binary.display(),
        dir.display()
    );
    let runs =
        futures_util::future::join_all(args.backends.iter().map(|&b| soak(b, &args, &binary, &model, &dir))).await;
    let mut passed = true;
    let mut report = serde_json::Map::new();
    for (backend, run) in args.backends.iter().zip(runs) {
        let (ok, text, samples) = match run {
            Ok(samples) => match verdict(&samples, warmup(&args)) {
                Ok(text) => (true, text, samples),
                Err(text) => (false, text, samples),
            },
            Err(e) => (false, format!("{e:#}"), Vec::new()),
        };
        passed &= ok;
        println!("{:>8}: {} — {text}", backend.name(), if ok { "pass" } else { "FAIL" });
        report.insert(backend.name().into(), json!({"passed": ok, "verdict": text, "samples": samples}));
    }
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string_pretty(&Value::Object(report))?)?;
    }
    if passed {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
