//! `agentstate` as a child process on a real socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_agentstate");

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join("agentstate-tests").join(uuid_like());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn uuid_like() -> String {
    agentstate::Event::new_id()
}

/// A child process killed when dropped, so a failing test leaves no server behind.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `agentstate serve` on a free port; returns the child and its address.
pub(crate) fn serve(db: &str) -> (Child, String) {
    serve_with(&["--db", db, "--addr", "127.0.0.1:0"])
}

/// Starts `agentstate serve` with these options; returns the child and its address.
/// `serve` on an in-memory SQLite database and a free port, with `options` (words split at
/// spaces).
fn serve_in_memory(options: &str) -> (Child, String) {
    let mut all = vec!["--db", "sqlite::memory:", "--addr", "127.0.0.1:0"];
    all.extend(options.split(' '));
    serve_with(&all)
}

pub(crate) fn serve_with(options: &[&str]) -> (Child, String) {
    serve_with_env(options, &[])
}

/// [`serve_with`], with these environment variables too.
pub(crate) fn serve_with_env(options: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(options)
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .env_remove("AGENTSTATE_DB")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr on a thread (and keep draining it, so the child never blocks on a full pipe);
    // give up after 30 s instead of hanging the test run.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let addr = loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("agentstate did not report its address in 30 s");
        if let Some(rest) = line.split("addr=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    (child, addr)
}

pub(crate) fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Serves `db`, writes, kills the server (no clean shutdown), serves `db` again and reads it all
/// back; then deletes the session (the Redis test shares its server).
fn keeps_data_across_restarts(db: &str) {
    let (mut child, addr) = serve(db);
    let (status, body) =
        http(&addr, "POST", "/apps/a/users/u/sessions", r#"{"sessionId": "s", "state": {"user:n": 1}}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(http(&addr, "PATCH", "/apps/a/users/u/sessions/s", r#"{"stateDelta": {"k": 2}}"#).0, 200);
    assert_eq!(http(&addr, "GET", "/readyz", "").0, 200);
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, addr) = serve(db);
    let (status, body) = http(&addr, "GET", "/apps/a/users/u/sessions/s", "");
    assert_eq!(status, 200);
    let session: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(session["state"], serde_json::json!({"k": 2, "user:n": 1}));
    assert_eq!(http(&addr, "DELETE", "/apps/a/users/u/sessions/s", "").0, 200);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn serves_sqlite_and_keeps_data_across_restarts() {
    keeps_data_across_restarts(&format!("sqlite://{}/server.db", scratch().display()));
}

#[test]
fn sigterm_stops_it_cleanly() {
    let (mut child, addr) = serve("sqlite::memory:");
    assert_eq!(http(&addr, "GET", "/healthz", "").0, 200);
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

#[test]
fn refuses_a_public_address_without_tokens() {
    let out = Command::new(BIN).args(["serve", "--db", "sqlite::memory:", "--addr", "0.0.0.0:0"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--insecure-allow-remote"), "{stderr}");
}

#[test]
fn failed_authentication_is_logged_without_the_token() {
    let log = scratch().join("auth.log");
    let tokens = r#"{"tokens": [{"token": "the-real-token-0123456789", "apps": "*"}]}"#;
    let child = Command::new(BIN)
        .args(["serve", "--db", "sqlite::memory:", "--addr", "127.0.0.1:0", "--tokens", tokens])
        .env("RUST_LOG", "info")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let addr = (0..300)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            let text = std::fs::read_to_string(&log).unwrap();
            text.split("addr=").nth(1).and_then(|rest| rest.split_whitespace().next()).map(str::to_owned)
        })
        .expect("the server reports its address");
    let guessed = "guessed-secret-9876543210";
    let mut stream = TcpStream::connect(&addr).unwrap();
    let request = format!(
        "GET /apps/a/users/u/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {guessed}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let logged = (0..50)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::read_to_string(&log).unwrap()
        })
        .find(|text| text.contains("authentication failed"))
        .expect("the refusal is logged");
    assert!(logged.contains("unknown token"), "{logged}");
    assert!(!logged.contains(guessed) && !logged.contains("the-real-token"), "{logged}");
}

#[test]
fn migrate_reports_the_schema_version() {
    let db = format!("sqlite://{}/m.db", scratch().display());
    let out = Command::new(BIN).args(["migrate", "--db", &db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("schema version 1 (created"), "{stdout}");
    let again = Command::new(BIN).args(["migrate", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("schema version 1 (found"));
}

#[test]
fn database_passwords_never_show() {
    let url = "postgres://agentstate:hunter2-secret@127.0.0.1:9/nowhere?acquire_timeout_ms=300";
    let out = Command::new(BIN).args(["migrate", "--db", url]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("postgres://agentstate:***@127.0.0.1:9/nowhere"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    let help = Command::new(BIN).args(["serve", "--help"]).env("AGENTSTATE_DB", url).output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("hunter2"));
}

#[test]
fn a_config_file_sets_options_the_command_line_leaves_alone() {
    let dir = scratch();
    let config = dir.join("agentstate.toml");
    let db = format!("sqlite://{}/configured.db", dir.display());
    std::fs::write(&config, format!("db = \"{db}\"\naddr = \"127.0.0.1:0\"\nmax_key_chars = 4\n")).unwrap();
    let (child, addr) = serve_with(&["--config", config.to_str().unwrap()]);
    let _running = Running(child);
    assert_eq!(http(&addr, "POST", "/apps/a/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
    let (status, body) = http(&addr, "PATCH", "/apps/a/users/u/sessions/s", r#"{"stateDelta": {"toolong": 1}}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("--max-key-chars"), "{body}");
    assert!(dir.join("configured.db").exists(), "the configured database is used");

    std::fs::write(&config, "dbb = \"typo\"\n").unwrap();
    let out = Command::new(BIN).args(["serve", "--config", config.to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a valid agentstate config"), "{stderr}");
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    let (mut child, addr) = serve("sqlite::memory:");
    let body = r#"{"sessionId": "in-flight", "state": {"k": 1}}"#;
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "POST /apps/a/users/u/sessions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    let (first, rest) = body.split_at(10);
    stream.write_all(first.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    // The request started before the signal: the server must finish it before exiting.
    stream.write_all(rest.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"in-flight\""), "{response}");
    assert!(child.wait().unwrap().success());
}

#[test]
fn serves_redis_and_keeps_data_across_restarts() {
    keeps_data_across_restarts(&format!("redis://127.0.0.1:6379/0?prefix=agentstate-test-{}:", uuid_like()));
}

#[test]
fn redis_passwords_never_show() {
    let url = "redis://:hunter2-secret@127.0.0.1:9/0?connect_timeout_ms=300";
    let out = Command::new(BIN).args(["sessions", "list", "--db", url, "a"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("redis://:***@127.0.0.1:9/0"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn sessions_list_orders_pages_and_counts_and_state_prints() {
    let db = format!("sqlite://{}/list.db", scratch().display());
    let (mut child, addr) = serve(&db);
    for (i, (user, id)) in [("u", "first"), ("v", "second"), ("u", "third")].into_iter().enumerate() {
        let body =
            format!(r#"{{"sessionId": "{id}", "state": {{"user:seen": true, "app:theme": "dark", "stage": {i}}}}}"#);
        assert_eq!(http(&addr, "POST", &format!("/apps/app/users/{user}/sessions"), &body).0, 200);
    }
    // Labels and a display name, through the managed-service surface.
    let body = r#"{"userId": "u", "displayName": "Trip", "labels": {"team": "red"}}"#;
    let made = http(&addr, "POST", "/v1/reasoningEngines/app/sessions?sessionId=labelled", body);
    assert_eq!(made.0, 200, "{}", made.1);
    // The oldest becomes the newest by update, not by creation.
    let event = r#"{"event": {"author": "user", "invocationId": "i", "timestamp": 4102444800.0}}"#;
    assert_eq!(http(&addr, "POST", "/apps/app/users/u/sessions/first/events", event).0, 200);
    child.kill().unwrap();
    child.wait().unwrap();
    let list = |extra: &[&str]| {
        let out = Command::new(BIN).args(["sessions", "list", "--db", &db, "app"]).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| line.split('\t').take(2).collect::<Vec<_>>().join("/"))
            .collect();
        ids
    };
    assert_eq!(list(&[]), ["v/second", "u/third", "u/labelled", "u/first"]);
    assert_eq!(list(&["--order", "desc"]), ["u/first", "u/labelled", "u/third", "v/second"]);
    assert_eq!(list(&["--by", "create"]), ["u/first", "v/second", "u/third", "u/labelled"]);
    assert_eq!(list(&["--by", "create", "--order", "desc", "--offset", "1", "--limit", "1"]), ["u/third"]);
    assert_eq!(list(&["--user", "u", "--order", "desc", "--by", "create"]), ["u/labelled", "u/third", "u/first"]);
    assert_eq!(list(&["--count"]), ["4"]);
    assert_eq!(list(&["--count", "--user", "v"]), ["1"]);
    assert_eq!(list(&["--label", "team=red"]), ["u/labelled"]);
    assert_eq!(list(&["--display-name", "Trip", "--label", "team=blue"]), Vec::<String>::new());
    assert_eq!(list(&["--state", "stage=1"]), ["v/second"]);
    assert_eq!(list(&["--filter", r#"user_id="u" AND update_time>="2100-01-01T00:00:00Z""#]), ["u/first"]);
    assert_eq!(list(&["--filter", r#"create_time<"2000-01-01T00:00:00Z""#, "--count"]), ["0"]);
    let refused = Command::new(BIN)
        .args(["sessions", "list", "--db", &db, "app", "--filter", r#"labels.team="red" OR x"#])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("OR is not supported") && said.contains("character 19"), "{said}");
    let nested =
        Command::new(BIN).args(["sessions", "list", "--db", &db, "app", "--state", "tags=[1]"]).output().unwrap();
    assert!(!nested.status.success());
    assert!(String::from_utf8_lossy(&nested.stderr).contains("scalar"), "{}", String::from_utf8_lossy(&nested.stderr));
    let state = |extra: &[&str]| {
        let out = Command::new(BIN).args(["state", "--db", &db, "app"]).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(state(&["--user", "u"]), serde_json::json!({"seen": true}));
    assert_eq!(state(&[]), serde_json::json!({"theme": "dark"}));
    assert_eq!(state(&["--user", "nobody"]), serde_json::json!({}));
    let written = state(&["--user", "u", "--set", "visits=3", "--set", "plan=pro", "--delete", "seen"]);
    assert_eq!(written, serde_json::json!({"visits": 3, "plan": "pro"}), "written, then printed");
    assert_eq!(
        state(&["--set", "motd={\"text\": \"hi\"}"]),
        serde_json::json!({"theme": "dark", "motd": {"text": "hi"}})
    );
    let bad = Command::new(BIN).args(["state", "--db", &db, "app", "--set", "user:x=1"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("scope prefix"), "{}", String::from_utf8_lossy(&bad.stderr));
    let bad = Command::new(BIN).args(["sessions", "list", "--db", &db, "app", "--order", "sideways"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("asc"), "names the choices");
}

#[test]
fn erase_user_counts_first_and_erases_with_yes() {
    let db = format!("sqlite://{}/erase.db", scratch().display());
    let (mut child, addr) = serve(&db);
    for id in ["a", "b"] {
        let body = format!(r#"{{"sessionId": "{id}", "state": {{"user:email": "x@y"}}}}"#);
        assert_eq!(http(&addr, "POST", "/apps/app/users/gone/sessions", &body).0, 200);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let run = |yes: bool| {
        let mut command = Command::new(BIN);
        command.args(["erase-user", "--db", &db, "app", "gone"]);
        if yes {
            command.arg("--yes");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dry = run(false);
    assert!(
        dry.contains("would erase 2 sessions, 0 events, 1 user: keys, 0 memories and 0 artifact versions"),
        "{dry}"
    );
    let done = run(true);
    assert!(done.contains("erased 2 sessions, 0 events, 1 user: keys, 0 memories and 0 artifact versions"), "{done}");
    assert!(run(false).contains("would erase 0 sessions"), "nothing left");
}

#[test]
fn encrypted_databases_need_their_keys() {
    let dir = scratch();
    let db = format!("sqlite://{}/enc.db", dir.display());
    let key = |id: &str| {
        let out = Command::new(BIN).args(["encryption-key", "--id", id]).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let (k1, wrong) = (key("k1"), key("k1"));
    assert_ne!(k1, wrong, "every key is new");
    let keys_file = dir.join("keys");
    std::fs::write(&keys_file, format!("# rotated 2026-11\n{k1}\n")).unwrap();
    let keys_path = keys_file.to_str().unwrap();
    let (mut child, addr) = serve_with(&["--db", &db, "--addr", "127.0.0.1:0", "--encryption-keys-file", keys_path]);
    let body = r#"{"sessionId": "s", "state": {"card": "4111-SECRET-1111", "user:n": 1}}"#;
    assert_eq!(http(&addr, "POST", "/apps/a/users/u/sessions", body).0, 200);
    let (status, read) = http(&addr, "GET", "/apps/a/users/u/sessions/s", "");
    assert_eq!(status, 200);
    assert!(read.contains("4111-SECRET-1111"), "{read}");
    child.kill().unwrap();
    child.wait().unwrap();
    let file = std::fs::read(dir.join("enc.db")).unwrap();
    let wal = std::fs::read(dir.join("enc.db-wal")).unwrap_or_default();
    for bytes in [&file, &wal] {
        assert!(!bytes.windows(16).any(|w| w == b"4111-SECRET-1111"), "the value is not stored in plaintext");
    }

    // Without keys, or with the wrong one: refused at start, saying why, never showing a key.
    let refused = |extra: &[&str], env: Option<&str>| {
        let mut command = Command::new(BIN);
        command.args(["sessions", "list", "--db", &db, "a"]).args(extra).env_remove("AGENTSTATE_ENCRYPTION_KEYS");
        if let Some(keys) = env {
            command.env("AGENTSTATE_ENCRYPTION_KEYS", keys);
        }
        let out = command.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let without = refused(&[], None);
    assert!(without.contains("this database is encrypted"), "{without}");
    let with_wrong = refused(&[], Some(&wrong));
    assert!(with_wrong.contains("is not the key this database was encrypted with"), "{with_wrong}");
    assert!(!with_wrong.contains(wrong.split(':').nth(1).unwrap()), "{with_wrong}");
    // With its key (from the environment this time), the session reads back.
    assert!(listed_with(&db, &k1).contains("4111-SECRET-1111"));

    // Rotation: a new key first, the old one kept; rekey; then the new key alone reads it all.
    let k2 = key("k2");
    std::fs::write(&keys_file, format!("{k2}\n{k1}\n")).unwrap();
    let out = Command::new(BIN).args(["rekey", "--db", &db, "--encryption-keys-file", keys_path]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 sessions of 1 apps") && stdout.contains("re-encrypted"), "{stdout}");
    assert!(listed_with(&db, &k2).contains("4111-SECRET-1111"));
    let without = Command::new(BIN).args(["rekey", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&without.stderr).contains("this database is encrypted"));
}

/// `agentstate sessions list` of app `a` in `db`, with the encryption keys `keys` in the
/// environment: what it printed.
fn listed_with(db: &str, keys: &str) -> String {
    let out = Command::new(BIN)
        .args(["sessions", "list", "--db", db, "a"])
        .env("AGENTSTATE_ENCRYPTION_KEYS", keys)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sessions_in_use_live_on_with_refresh_on_append() {
    let db = format!("sqlite://{}/refresh.db", scratch().display());
    let options = ["--db", &db, "--addr", "127.0.0.1:0", "--session-ttl", "1", "--refresh-ttl-on-append"];
    let (mut child, addr) = serve_with(&options);
    assert_eq!(http(&addr, "POST", "/apps/a/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
    for k in 0..4 {
        std::thread::sleep(Duration::from_millis(400));
        let body = format!(r#"{{"stateDelta": {{"k": {k}}}}}"#);
        assert_eq!(http(&addr, "PATCH", "/apps/a/users/u/sessions/s", &body).0, 200, "append {k}");
    }
    // 1.6 s after creation (its TTL is 1 s), alive: it was used; unused, it expires.
    assert_eq!(http(&addr, "GET", "/apps/a/users/u/sessions/s", "").0, 200);
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(http(&addr, "GET", "/apps/a/users/u/sessions/s", "").0, 404);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Reads until the peer closes (or `limit` passes); what arrived.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    match stream.read_to_end(&mut got) {
        Ok(_) => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(_) => None, // still open at the limit
    }
}

#[test]
fn slow_clients_are_cut_off_and_never_hold_up_others() {
    let (child, addr) = serve_in_memory("--header-read-timeout-secs 1 --body-read-timeout-secs 1");
    let _server = Running(child);
    // 200 connections trickling their headers, never finishing them, and 20 that send nothing.
    let mut slow: Vec<TcpStream> = (0..220)
        .map(|i| {
            let mut s = TcpStream::connect(&addr).unwrap();
            if i < 200 {
                s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").unwrap();
            }
            s
        })
        .collect();
    // Others are served meanwhile.
    for _ in 0..20 {
        assert_eq!(http(&addr, "GET", "/healthz", "").0, 200);
    }
    assert_eq!(http(&addr, "POST", "/apps/a/users/u/sessions", "{}").0, 200);
    // The slow ones are closed once their headers are overdue.
    for s in &mut slow {
        assert!(read_until_closed(s, Duration::from_secs(10)).is_some(), "a slow connection was never closed");
    }
    // A body that stops coming: 408.
    let mut body = TcpStream::connect(&addr).unwrap();
    body.write_all(b"POST /apps/a/users/u/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"state\"")
        .unwrap();
    let answer = read_until_closed(&mut body, Duration::from_secs(10)).expect("the server answers an overdue body");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn a_connection_limit_makes_others_wait_not_fail() {
    let (child, addr) = serve_in_memory("--header-read-timeout-secs 1 --max-connections 4");
    let _server = Running(child);
    let _slow: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    // Every slot is held; the next request waits in the backlog until the slow ones are cut off.
    assert_eq!(http(&addr, "GET", "/healthz", "").0, 200);
}
