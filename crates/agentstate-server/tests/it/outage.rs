//! The database goes away under load: a PostgreSQL cluster of the test's own (`initdb` and
//! `pg_ctl` on a spare loopback port, the shared server untouched) is stopped, fast and then
//! immediate, and a MariaDB server of its own (`mariadbd` on a spare port and data directory) is
//! stopped with TERM and then KILL, while `agentstate serve` takes concurrent PATCHes. During the outage the server
//! answers 503 with a clear `detail` and `/readyz` fails, no request hangs past its timeout,
//! afterwards it recovers by itself, and every PATCH answered 200 is in the database. Then
//! `kill -9` of the server in the middle of a burst, on PostgreSQL and on MariaDB: nothing
//! acknowledged is lost. gRPC calls during an outage answer `UNAVAILABLE`, and succeed after.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentstate::{GetSessionConfig, SessionKey, SessionService};
use agentstate_sql::SqlStore;

use crate::binary::{Running, http, serve};
use crate::load::{Load, NoAnswer, Report};

/// The PostgreSQL programs of this machine (Debian keeps them out of PATH).
pub(crate) fn pg_bin(name: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.filter_map(Result::ok).map(|d| d.path().join("bin").join(name)).filter(|p| p.exists()).collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().unwrap_or_else(|| PathBuf::from(name))
}

pub(crate) fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// Runs a PostgreSQL program, as the `postgres` user when we are root (PostgreSQL refuses root).
pub(crate) fn pg(dir: &Path, program: &str, args: &[&str]) -> std::process::Output {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(pg_bin(program));
        c
    } else {
        Command::new(pg_bin(program))
    };
    command.args(args).current_dir(dir).output().unwrap()
}

/// A PostgreSQL cluster of the test's own; stopped (immediate) and removed when dropped.
struct OwnPostgres {
    dir: PathBuf,
    port: u16,
}

impl OwnPostgres {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // Under /tmp when root: the `postgres` user must be able to reach it (a TMPDIR under a
        // private home would not be).
        let base = if is_root() { PathBuf::from("/tmp") } else { std::env::temp_dir() };
        let dir = base.join(format!("agentstate-pg-{port}-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            assert!(Command::new("chown").args(["-R", "postgres"]).arg(&dir).status().unwrap().success());
        }
        let data = dir.join("data");
        let init = pg(&dir, "initdb", &["-D", data.to_str().unwrap(), "-A", "trust", "-U", "postgres", "--no-sync"]);
        assert!(init.status.success(), "initdb: {}", String::from_utf8_lossy(&init.stderr));
        let own = Self { dir, port };
        own.pg_ctl_start();
        own
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres?acquire_timeout_ms=2000", self.port)
    }

    fn pg_ctl_start(&self) {
        let data = self.dir.join("data");
        let options = format!("-p {} -c listen_addresses=127.0.0.1 -k {}", self.port, self.dir.display());
        let log = self.dir.join("log");
        let out = pg(
            &self.dir,
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"],
        );
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn stop(&self, mode: &str) {
        let data = self.dir.join("data");
        let out = pg(&self.dir, "pg_ctl", &["-D", data.to_str().unwrap(), "-m", mode, "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = pg(&self.dir, "pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One request; `None` when no complete answer came (the server died).
pub(crate) fn try_http(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default()))
}

pub(crate) fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn assert_all_there(url: &str, app: &str, acked: &[String]) {
    let svc = SessionService::new(SqlStore::connect(url).await.unwrap());
    let session =
        svc.get_session(&SessionKey::new(app, "u", "s").unwrap(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    let lost: Vec<_> = acked.iter().filter(|k| session.state().get(k).is_none()).collect();
    assert!(lost.is_empty(), "{} of {} acknowledged writes lost: {lost:?}", lost.len(), acked.len());
}

/// A database server a test can take down and bring back.
trait Outage {
    fn url(&self) -> String;
    /// Takes it down the way `how` names (a `pg_ctl` mode, a signal).
    fn go_down(&mut self, how: &str);
    fn come_back(&mut self);
}

impl Outage for OwnPostgres {
    fn url(&self) -> String {
        OwnPostgres::url(self)
    }
    fn go_down(&mut self, mode: &str) {
        self.stop(mode);
    }
    fn come_back(&mut self) {
        self.pg_ctl_start();
    }
}

/// `agentstate serve` on `own` under four PATCHing writers while the database goes down twice,
/// once each way in `hows`: every outage answers 503 quickly with a `detail` and fails `/readyz`,
/// the server recovers by itself, nothing hangs and every acknowledged write is there.
fn survives_two_outages(own: &mut impl Outage, hows: [&str; 2]) {
    let (child, addr) = serve(&own.url());
    let _server = Running(child);
    assert_eq!(http(&addr, "POST", "/apps/outage/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
    let load = Load::start(std::slice::from_ref(&addr), "outage", NoAnswer::NotAcknowledged);
    for how in hows {
        load.wait_for_more(50, Duration::from_secs(20));
        own.go_down(how);
        std::thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        let (status, body) = http(&addr, "PATCH", "/apps/outage/users/u/sessions/s", r#"{"stateDelta": {"k": 1}}"#);
        assert_eq!(status, 503, "{how}: {body}");
        assert!(body.contains("detail"), "{how}: {body}");
        assert!(started.elapsed() < Duration::from_secs(8), "{how}: answered in {:?}", started.elapsed());
        assert_eq!(http(&addr, "GET", "/readyz", "").0, 503, "{how}: readiness fails during the outage");
        #[cfg(feature = "grpc")]
        assert_eq!(grpc_get(&addr), tonic::Code::Unavailable, "{how}: gRPC answers UNAVAILABLE");
        own.come_back();
        wait_for("recovery", Duration::from_secs(30), || http(&addr, "GET", "/readyz", "").0 == 200);
        #[cfg(feature = "grpc")]
        assert_eq!(grpc_get(&addr), tonic::Code::Ok, "{how}: gRPC recovers too");
    }
    load.wait_for_more(50, Duration::from_secs(20));
    let Report { acked, refused, .. } = load.finish(Duration::from_secs(8));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(assert_all_there(&own.url(), "outage", &acked));
    eprintln!("{} writes acknowledged, {} refused during two outages, none lost", acked.len(), refused.len());
}

/// The session `s` of app `outage` read over gRPC (the engine is the app): the status code,
/// within the time a request may take.
#[cfg(feature = "grpc")]
fn grpc_get(addr: &str) -> tonic::Code {
    use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let started = Instant::now();
    let code = runtime.block_on(async {
        let channel =
            tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
        let mut client = api::session_service_client::SessionServiceClient::new(channel);
        let request = api::GetSessionRequest { name: "reasoningEngines/outage/sessions/s".into() };
        client.get_session(request).await.map_or_else(|status| status.code(), |_| tonic::Code::Ok)
    });
    assert!(started.elapsed() < Duration::from_secs(8), "a gRPC call hung for {:?}", started.elapsed());
    code
}

#[test]
fn postgres_going_down_answers_503_and_the_server_recovers_by_itself() {
    survives_two_outages(&mut OwnPostgres::start(), ["fast", "immediate"]);
}

/// A MariaDB server of the test's own (`mariadbd` on a spare port and data directory); killed
/// and removed when dropped.
struct OwnMariadb {
    dir: PathBuf,
    port: u16,
    child: Option<std::process::Child>,
}

impl OwnMariadb {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("agentstate-mariadb-{port}-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("data");
        let user = if is_root() { "root" } else { "" };
        let mut install = Command::new("mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal");
        if !user.is_empty() {
            install.arg(format!("--user={user}"));
        }
        let out = install.output().expect("mariadb-install-db is installed (Debian's mariadb-server)");
        assert!(out.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&out.stderr));
        let mut own = Self { dir, port, child: None };
        own.run();
        own
    }

    fn run(&mut self) {
        let data = self.dir.join("data");
        let mut command = Command::new("mariadbd");
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", self.dir.join("sock").display()))
            .arg(format!("--pid-file={}", self.dir.join("pid").display()))
            .arg("--skip-name-resolve")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if is_root() {
            command.arg("--user=root");
        }
        self.child = Some(command.spawn().unwrap());
        let port = self.port;
        wait_for("mariadbd", Duration::from_secs(30), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    }

    fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/outage?acquire_timeout_ms=2000", self.port)
    }

    /// Stops it: `TERM` (a clean shutdown) or `KILL`.
    fn stop(&mut self, signal: &str) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnMariadb {
    fn drop(&mut self) {
        self.stop("KILL");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Outage for OwnMariadb {
    fn url(&self) -> String {
        OwnMariadb::url(self)
    }
    fn go_down(&mut self, signal: &str) {
        self.stop(signal);
    }
    fn come_back(&mut self) {
        self.run();
    }
}

#[test]
fn mariadb_going_down_answers_503_and_the_server_recovers_by_itself() {
    let mut own = OwnMariadb::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use sqlx::Connection;
        let admin = format!("mysql://root@127.0.0.1:{}/mysql", own.port);
        let mut conn = sqlx::MySqlConnection::connect(&admin).await.unwrap();
        sqlx::raw_sql("CREATE DATABASE outage").execute(&mut conn).await.unwrap();
    });
    survives_two_outages(&mut own, ["TERM", "KILL"]);
}

#[test]
fn kill_9_of_the_server_loses_no_acknowledged_write_on_postgres_and_mariadb() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let urls = runtime.block_on(async {
        [
            agentstate_conformance::databases::fresh_postgres().await,
            agentstate_conformance::databases::fresh_mysql().await,
        ]
    });
    for url in urls {
        let (child, addr) = serve(&url);
        let mut server = Running(child);
        assert_eq!(http(&addr, "POST", "/apps/killed/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
        let load = Load::start(std::slice::from_ref(&addr), "killed", NoAnswer::NotAcknowledged);
        load.wait_for_more(100, Duration::from_secs(20));
        server.0.kill().unwrap(); // SIGKILL
        let _ = server.0.wait();
        // Requests in flight at the kill get no answer: not acknowledged.
        let acked = load.stop().acked;
        runtime.block_on(assert_all_there(&url, "killed", &acked));
    }
}

/// The database stalls rather than goes away: another client holds the sessions table locked, so
/// every statement on it waits. With `--store-timeout-secs 1` a PATCH and a GET are answered 503
/// (retryable) after about a second instead of waiting for the lock, and
/// once it is released the same PATCH succeeds and is there.
#[test]
fn a_store_call_a_held_lock_stalls_is_answered_503_after_the_store_timeout() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let url = runtime.block_on(agentstate_conformance::databases::fresh_postgres());
    let (child, addr) =
        crate::binary::serve_with(&["--db", &url, "--addr", "127.0.0.1:0", "--store-timeout-secs", "1"]);
    let _server = Running(child);
    let session = "/apps/stall/users/u/sessions/s";
    assert_eq!(http(&addr, "POST", "/apps/stall/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);

    let mut holder = runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::raw_sql("BEGIN; LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE").execute(&mut conn).await.unwrap();
        conn
    });
    for (method, body) in [("PATCH", r#"{"stateDelta": {"k": 1}}"#), ("GET", "")] {
        let started = Instant::now();
        let (status, answer) = http(&addr, method, session, body);
        let took = started.elapsed();
        assert_eq!(status, 503, "{method}: {answer}");
        assert!(answer.contains("unavailable; retry later"), "{method}: {answer}");
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(8), "{method} took {took:?}");
    }
    runtime.block_on(sqlx::raw_sql("ROLLBACK").execute(&mut holder)).unwrap();

    assert_eq!(http(&addr, "PATCH", session, r#"{"stateDelta": {"k": 2}}"#).0, 200);
    let (status, body) = http(&addr, "GET", session, "");
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["state"]["k"], 2, "{body}");
}
