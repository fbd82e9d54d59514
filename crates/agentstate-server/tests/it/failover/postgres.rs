//! PostgreSQL: a primary and a synchronous standby (`pg_basebackup`), agentstate on the libpq-style
//! URL naming both. A first round turns the primary read-only (a switchover: the host stays up and
//! must be left); three more kill the primary with `kill -9`. Each checks that writes are refused
//! with 503 and `/readyz` fails while no host accepts writes, promotes the standby (as an operator
//! or Patroni would), and has the server carry on there by itself; the killed machine comes back as
//! the new primary's standby. Four rounds, so the servers trade places twice.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Load, NoAnswer, Scratch, lost, spare_port, state_through};
use crate::binary::{Running, http, serve};
use crate::outage::{pg, wait_for};

/// One PostgreSQL server: its data directory and port.
struct Node {
    data: PathBuf,
    port: u16,
}

impl Node {
    fn log(&self) -> PathBuf {
        self.data.with_extension("log")
    }

    fn start(&self, dir: &Path) {
        let options = format!("-p {} -c listen_addresses=127.0.0.1 -k {}", self.port, dir.display());
        let out = pg(
            dir,
            "pg_ctl",
            &["-D", self.data.to_str().unwrap(), "-o", &options, "-l", self.log().to_str().unwrap(), "-w", "start"],
        );
        if !out.status.success() {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n");
            panic!("pg_ctl start: {}\nits log ends:\n{tail}", String::from_utf8_lossy(&out.stderr));
        }
    }

    /// `kill -9` of the postmaster; its backends notice and exit.
    fn kill(&self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        assert!(std::process::Command::new("kill").args(["-9", &pid]).status().unwrap().success());
        let port = self.port;
        wait_for("the killed primary's port to close", Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        });
        // And the process reaped: a new postmaster on this port refuses to start while the old
        // one's PID lives, and an unreaped (zombie) one does.
        wait_for("the killed primary to be reaped", Duration::from_secs(10), || {
            !Path::new("/proc").join(&pid).exists()
        });
    }

    /// Turns this node (a killed one) into a standby of `primary`, from a fresh base backup (a
    /// fast checkpoint: the new primary holds its commits until a standby is there).
    fn follow(&self, dir: &Path, primary: &Node) {
        let _ = std::fs::remove_dir_all(&self.data);
        let port = primary.port.to_string();
        let out = pg(
            dir,
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                self.data.to_str().unwrap(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        assert!(out.status.success(), "pg_basebackup: {}", String::from_utf8_lossy(&out.stderr));
        self.start(dir);
    }

    /// Turns a running primary read-only (new and open sessions alike), as a demotion does.
    fn read_only(&self, dir: &Path) {
        let port = self.port.to_string();
        for statement in ["ALTER SYSTEM SET default_transaction_read_only = on", "SELECT pg_reload_conf()"] {
            let out = pg(dir, "psql", &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-c", statement]);
            assert!(out.status.success(), "{statement}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }

    fn promote(&self, dir: &Path) {
        let out = pg(dir, "pg_ctl", &["-D", self.data.to_str().unwrap(), "-w", "promote"]);
        assert!(out.status.success(), "pg_ctl promote: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn stop(&self, dir: &Path) {
        let _ = pg(dir, "pg_ctl", &["-D", self.data.to_str().unwrap(), "-m", "immediate", "stop"]);
    }
}

#[test]
fn postgres_primary_demoted_then_killed_three_times_the_standby_takes_over_and_nothing_acknowledged_is_lost() {
    let scratch = Scratch::new("pg-failover");
    let dir = &scratch.0;
    if crate::outage::is_root() {
        assert!(std::process::Command::new("chown").args(["-R", "postgres"]).arg(dir).status().unwrap().success());
    }
    let nodes = [Node { data: dir.join("a"), port: spare_port() }, Node { data: dir.join("b"), port: spare_port() }];
    let init =
        pg(dir, "initdb", &["-D", nodes[0].data.to_str().unwrap(), "-A", "trust", "-U", "postgres", "--no-sync"]);
    assert!(init.status.success(), "initdb: {}", String::from_utf8_lossy(&init.stderr));
    // Commits wait for the standby: what the primary acknowledged, the standby has.
    let conf = "synchronous_standby_names = '*'\nsynchronous_commit = on\nwal_keep_size = '64MB'\n";
    let path = nodes[0].data.join("postgresql.conf");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(conf);
    std::fs::write(&path, text).unwrap();
    nodes[0].start(dir);
    nodes[1].follow(dir, &nodes[0]);
    let _stopped = Stopper(dir.clone(), nodes.iter().map(|n| n.data.clone()).collect());

    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write&acquire_timeout_ms=2000",
        nodes[0].port, nodes[1].port
    );
    // The suite in a database of its own, apart from the drill's.
    let created = pg(
        dir,
        "psql",
        &["-h", "127.0.0.1", "-p", &nodes[0].port.to_string(), "-U", "postgres", "-c", "CREATE DATABASE suite"],
    );
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    super::conformance("PostgreSQL host list", &url.replace("/postgres?", "/suite?"));
    let (child, addr) = serve(&url);
    let _server = Running(child);
    assert_eq!(http(&addr, "POST", "/apps/pgfail/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
    let load = Load::start(std::slice::from_ref(&addr), "pgfail", NoAnswer::Refused);
    let mut switches = Vec::new();
    // Round 0 is a switchover (the primary turns read-only but stays up, as a demoted primary
    // does); rounds 1 to 3 kill the primary with `kill -9`.
    for round in 0..4 {
        load.wait_for_more(50, Duration::from_secs(30));
        let (primary, standby) = (&nodes[round % 2], &nodes[(round + 1) % 2]);
        if round == 0 {
            primary.read_only(dir);
        } else {
            primary.kill();
        }
        // No host accepts writes: refused quickly, and the server says it is not ready.
        let started = Instant::now();
        let (status, body) = http(&addr, "PATCH", "/apps/pgfail/users/u/sessions/s", r#"{"stateDelta": {"k": 1}}"#);
        assert_eq!(status, 503, "round {round}: {body}");
        assert!(started.elapsed() < Duration::from_secs(8), "answered in {:?}", started.elapsed());
        wait_for("the server to say it is not ready", Duration::from_secs(8), || {
            http(&addr, "GET", "/readyz", "").0 == 503
        });
        if round == 0 {
            primary.stop(dir);
        }
        let promoted = Instant::now();
        standby.promote(dir);
        // The new primary waits for a standby before it acknowledges: bring one back at once.
        primary.follow(dir, standby);
        wait_for("writes on the new primary", Duration::from_secs(30), || {
            http(&addr, "PATCH", "/apps/pgfail/users/u/sessions/s", r#"{"stateDelta": {"k": 2}}"#).0 == 200
        });
        switches.push(promoted.elapsed());
        assert_eq!(http(&addr, "GET", "/readyz", "").0, 200);
    }
    load.wait_for_more(50, Duration::from_secs(30));
    let report = load.finish(Duration::from_secs(11));
    let state = state_through(&addr, "pgfail");
    let lost = lost(&report.acked, &state);
    eprintln!(
        "PostgreSQL failover: 4 rounds (a switchover, 3 kills), {} writes acknowledged, {} lost, {} refused, slowest request {:?}, \
         promote to writes accepted {switches:?}",
        report.acked.len(),
        lost.len(),
        report.refused.len(),
        report.slowest
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

/// Stops every node (immediate) when the test ends, however it ends.
struct Stopper(PathBuf, Vec<PathBuf>);

impl Drop for Stopper {
    fn drop(&mut self) {
        for data in &self.1 {
            Node { data: data.clone(), port: 0 }.stop(&self.0);
        }
    }
}
