//! Redis for the tests: the shared local Redis ([`redis_url`]) under a key prefix of a test's own
//! ([`fresh_prefix`], [`url_with_prefix`]), and servers of a test's own: one `redis-server` on a
//! spare loopback port ([`OwnRedis`]), or a Redis Cluster of three masters ([`RedisCluster`]),
//! each with its data in a temporary directory and stopped when dropped, for tests that must stop
//! a server or need a cluster.
//!
//! For tests: a server that cannot be started panics with the package that provides it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The shared Redis the tests use: `AGENTSTATE_TEST_REDIS`, else the local one `.ci/services`
/// starts.
pub fn redis_url() -> String {
    std::env::var("AGENTSTATE_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

/// What every test key prefix starts with; a run's keys are `RUN_PREFIX<epoch seconds>-…`, so a
/// later run can sweep what runs older than a day left behind.
pub const RUN_PREFIX: &str = "agentstate-test-";

/// A key prefix no other test uses: `agentstate-test-<epoch seconds>-<random>:`.
pub fn fresh_prefix() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{RUN_PREFIX}{now}-{}:", agentstate::Event::new_id())
}

/// `url` with the store option `prefix` set to `prefix`.
pub fn url_with_prefix(url: &str, prefix: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}prefix={prefix}")
}

/// A loopback port nobody listens on now.
///
/// # Panics
/// When no port can be had.
pub fn spare_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("a loopback port: {e}"));
    listener.local_addr().unwrap_or_else(|e| panic!("its address: {e}")).port()
}

/// A `redis-server` of the test's own, on a spare loopback port, with its data in a temporary
/// directory; stopped (SIGKILL) and its directory removed when dropped.
#[derive(Debug)]
pub struct OwnRedis {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts one with `args` (e.g. `--appendonly yes`) and waits until it listens.
    ///
    /// # Panics
    /// When `redis-server` is not installed or does not listen within ten seconds.
    pub fn start(args: &[&str]) -> Self {
        let port = spare_port();
        let dir = std::env::temp_dir().join(format!("agentstate-redis-{port}-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut server = Self { port, dir, args: args.iter().map(|a| (*a).to_owned()).collect(), child: None };
        server.run();
        server
    }

    /// `redis://127.0.0.1:{port}/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn run(&mut self) {
        let child = Command::new("redis-server")
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--save")
            .arg("")
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("redis-server (Debian's redis-server package): {e}"));
        self.child = Some(child);
        wait_for_port(self.port, Duration::from_secs(10));
    }

    /// Kills it (SIGKILL: no shutdown save), leaves it down for `downtime`, and starts it again
    /// on the same port and data.
    pub fn crash_and_restart(&mut self, downtime: Duration) {
        self.kill();
        std::thread::sleep(downtime);
        self.run();
    }

    /// Kills it (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn wait_for_port(port: u16, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("redis-server did not listen on {port} within {limit:?}");
}

/// A Redis Cluster of three masters (no replicas) on ports of its own, ready (`cluster_state:ok`
/// on every node) when [`start`](Self::start) returns; stopped when dropped.
#[derive(Debug)]
pub struct RedisCluster {
    /// Its nodes.
    pub nodes: Vec<OwnRedis>,
}

impl RedisCluster {
    /// Starts the nodes, joins them with `redis-cli --cluster create` and waits for the cluster.
    ///
    /// # Panics
    /// When `redis-server` or `redis-cli` is missing, or the cluster is not ready in 30 s.
    pub fn start() -> Self {
        let nodes: Vec<OwnRedis> = (0..3)
            .map(|_| OwnRedis::start(&["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap_or_else(|e| panic!("redis-cli (Debian's redis-tools package): {e}"));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let start = Instant::now();
        for node in &nodes {
            loop {
                let info = Command::new("redis-cli")
                    .args(["-p", &node.port.to_string(), "cluster", "info"])
                    .output()
                    .unwrap_or_else(|e| panic!("redis-cli: {e}"));
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(30), "the cluster did not come up");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Self { nodes }
    }

    /// The URL agentstate's Redis store takes for it, its keys under `prefix`.
    pub fn url(&self, prefix: &str) -> String {
        let port = self.nodes.first().map_or(0, |n| n.port);
        format!("redis://127.0.0.1:{port}/?cluster=true&prefix={prefix}")
    }

    /// How many keys each node holds.
    pub fn keys_per_node(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .map(|node| {
                let out = Command::new("redis-cli").args(["-p", &node.port.to_string(), "dbsize"]).output();
                out.ok().and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok()).unwrap_or(0)
            })
            .collect()
    }
}
