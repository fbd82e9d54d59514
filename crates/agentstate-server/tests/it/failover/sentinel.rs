//! Redis Sentinel: a master, two replicas and three sentinels (`redis-server`, and `redis-server
//! --sentinel`), started by the test. `agentstate serve` on a `redis+sentinel://` URL; the master
//! is killed with `kill -9`, the sentinels promote a replica, and the server carries on there by
//! itself. With `wait_replicas=2` (every replica) nothing acknowledged may be lost; without it, what
//! was lost is counted and printed (Redis replicates asynchronously), not asserted. With fewer than
//! every replica a failover can lose acknowledged writes: the sentinels promote the replica whose
//! offset they last saw highest, which may be one that lacks them (seen: 37 of 324 lost with
//! `wait_replicas=1`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Load, NoAnswer, Scratch, lost, spare_port, state_through};
use crate::binary::{Running, http, serve};
use crate::outage::wait_for;

/// A `redis-server` of the test's own; killed when dropped.
struct Server {
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start(dir: &Path, port: u16, extra: &[String]) -> Self {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            // A replica that (re)joins is sent the data at once, not after the default 5 s wait.
            .args(["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"])
            .arg("--dir")
            .arg(dir)
            .args(["--dbfilename", &format!("dump-{port}.rdb")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        wait_for("redis-server", Duration::from_secs(10), || ping(port));
        Self { port, child: Some(child) }
    }

    fn replica_of(dir: &Path, port: u16, master: u16) -> Self {
        Self::start(dir, port, &["--replicaof".into(), "127.0.0.1".into(), master.to_string()])
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ping(port: u16) -> bool {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "ping"])
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"PONG"))
}

/// The port of the master the sentinel on `sentinel` names.
fn master_port(sentinel: u16) -> Option<u16> {
    let out = Command::new("redis-cli")
        .args(["-p", &sentinel.to_string(), "SENTINEL", "get-master-addr-by-name", "drill"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().nth(1)?.trim().parse().ok()
}

/// Whether the Redis on `port` has `count` replicas online.
fn has_replicas(port: u16, count: usize) -> bool {
    replication(port).lines().filter(|l| l.starts_with("slave") && l.contains("online")).count() >= count
}

/// `INFO replication` of the Redis on `port`, for a failure's message.
fn replication(port: u16) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "INFO", "replication"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// One failover under load through a server on `url`: what the writers saw, what was lost, how
/// long from the kill to the first write acknowledged by the new master.
fn one_failover(
    dir: &Path,
    servers: &mut [Server],
    url: &str,
    app: &str,
    sentinels: &[u16],
) -> (super::Report, usize, Duration) {
    let (child, addr) = serve(url);
    let _server = Running(child);
    assert_eq!(http(&addr, "POST", &format!("/apps/{app}/users/u/sessions"), r#"{"sessionId": "s"}"#).0, 200);
    let load = Load::start(std::slice::from_ref(&addr), app, NoAnswer::Refused);
    load.wait_for_more(200, Duration::from_secs(30));
    let old = master_port(sentinels[0]).unwrap();
    let index = servers.iter().position(|s| s.port == old).unwrap();
    servers[index].kill();
    let killed = Instant::now();
    wait_for("a new master", Duration::from_secs(30), || master_port(sentinels[0]).is_some_and(|p| p != old));
    let new = master_port(sentinels[0]).unwrap();
    // The killed machine comes back as a replica of the new master (with the replica wait on
    // every replica, writes resume once both follow it).
    servers[index] = Server::replica_of(dir, old, new);
    let before = load.acked();
    wait_for("writes on the new master", Duration::from_secs(30), || load.acked() > before);
    let switched = killed.elapsed();
    // Both replicas resynchronise with the new master: the killed one, and the other one once the
    // sentinels reconfigure it (slower on a loaded machine; the drill measures writes, not this).
    let started = Instant::now();
    while !has_replicas(new, 2) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the replicas did not both follow the new master in 90 s: {}",
            replication(new)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    load.wait_for_more(100, Duration::from_secs(30));
    let report = load.finish(Duration::from_secs(11));
    let state = state_through(&addr, app);
    let lost = lost(&report.acked, &state).len();
    (report, lost, switched)
}

#[test]
fn redis_master_killed_sentinel_promotes_a_replica_and_with_the_replica_wait_nothing_is_lost() {
    let scratch = Scratch::new("sentinel");
    let dir = &scratch.0;
    let master = spare_port();
    let mut servers = vec![
        Server::start(dir, master, &[]),
        Server::replica_of(dir, spare_port(), master),
        Server::replica_of(dir, spare_port(), master),
    ];
    wait_for("two replicas", Duration::from_secs(30), || has_replicas(master, 2));
    let sentinel_ports: Vec<u16> = (0..3).map(|_| spare_port()).collect();
    let _sentinels: Vec<Server> = sentinel_ports
        .iter()
        .map(|&port| {
            let conf = dir.join(format!("sentinel-{port}.conf"));
            let text = format!(
                "port {port}\nbind 127.0.0.1\nsentinel monitor drill 127.0.0.1 {master} 2\n\
                 sentinel down-after-milliseconds drill 1000\nsentinel failover-timeout drill 5000\n"
            );
            std::fs::write(&conf, text).unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            wait_for("a sentinel", Duration::from_secs(10), || ping(port));
            Server { port, child: Some(child) }
        })
        .collect();
    wait_for("the sentinels to agree", Duration::from_secs(30), || master_port(sentinel_ports[0]) == Some(master));
    let hosts = sentinel_ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",");
    let prefix = format!("t{}:", spare_port());

    super::conformance("Redis Sentinel", &format!("redis+sentinel://{hosts}/drill?prefix={prefix}suite:"));

    // The replica wait refuses what no replica confirmed: a Redis without replicas (the shared one).
    let (child, addr) =
        serve(&format!("redis://127.0.0.1:6379/0?prefix={prefix}alone:&wait_replicas=1&wait_timeout_ms=100"));
    let _alone = Running(child);
    let (status, body) = http(&addr, "POST", "/apps/alone/users/u/sessions", r#"{"sessionId": "s"}"#);
    assert_eq!(status, 503, "{body}");
    drop(_alone);

    let waited = format!("redis+sentinel://{hosts}/drill?prefix={prefix}&wait_replicas=2&timeout_ms=1000");
    let (report, lost, switched) = one_failover(dir, &mut servers, &waited, "waited", &sentinel_ports);
    eprintln!(
        "Redis Sentinel, wait_replicas=2: 1 round, {} writes acknowledged, {lost} lost, {} refused, slowest request \
         {:?}, kill to writes on the new master {switched:?}",
        report.acked.len(),
        report.refused.len(),
        report.slowest
    );
    assert_eq!(lost, 0, "acknowledged writes lost with the replica wait on");

    let unwaited = format!("redis+sentinel://{hosts}/drill?prefix={prefix}&timeout_ms=1000");
    let (report, lost, switched) = one_failover(dir, &mut servers, &unwaited, "unwaited", &sentinel_ports);
    eprintln!(
        "Redis Sentinel, no replica wait: 1 round, {} writes acknowledged, {lost} lost, {} refused, slowest request \
         {:?}, kill to writes on the new master {switched:?}",
        report.acked.len(),
        report.refused.len(),
        report.slowest
    );
}
