//! The local Redis, a key prefix per test run, and Redis servers of a test's own.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::OnceCell;

/// The shared local Redis.
pub(crate) fn redis_url() -> String {
    std::env::var("AGENTSTATE_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

const RUN_PREFIX: &str = "agentstate-test-";

static PREFIX: OnceCell<String> = OnceCell::const_new();

/// This test run's key prefix, `agentstate-test-<epoch seconds>-<random>:`. The first call also
/// removes what runs older than a day left behind.
pub(crate) async fn run_prefix() -> String {
    PREFIX
        .get_or_init(|| async {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
            sweep_old_runs(now).await;
            format!("{RUN_PREFIX}{now}-{}:", agentstate::Event::new_id())
        })
        .await
        .clone()
}

/// A prefix no other test uses.
pub(crate) async fn fresh_prefix() -> String {
    format!("{}{}:", run_prefix().await, agentstate::Event::new_id())
}

/// The local Redis URL with a prefix.
pub(crate) fn url_with_prefix(url: &str, prefix: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}prefix={prefix}")
}

async fn sweep_old_runs(now: u64) {
    let Ok(client) = redis::Client::open(redis_url()) else { return };
    let Ok(mut connection) = client.get_multiplexed_async_connection().await else { return };
    let mut cursor = 0u64;
    loop {
        let reply: redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{RUN_PREFIX}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await;
        let Ok((next, keys)) = reply else { return };
        let old: Vec<&String> = keys
            .iter()
            .filter(|k| {
                k[RUN_PREFIX.len()..]
                    .split('-')
                    .next()
                    .and_then(|t| t.parse::<u64>().ok())
                    .is_some_and(|t| t + 86_400 < now)
            })
            .collect();
        if !old.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("UNLINK").arg(old).query_async(&mut connection).await;
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

/// A loopback port nobody listens on now.
pub(crate) fn spare_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `redis-server` of the test's own, on a spare loopback port, with its data in a temporary
/// directory; stopped (SIGKILL) when dropped.
pub(crate) struct OwnRedis {
    pub(crate) port: u16,
    dir: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts one with `args` (e.g. `--appendonly yes`).
    pub(crate) fn start(args: &[&str]) -> Self {
        let port = spare_port();
        let dir = std::env::temp_dir().join(format!("agentstate-redis-{port}-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = Self { port, dir, args: args.iter().map(|a| (*a).to_owned()).collect(), child: None };
        server.run();
        server
    }

    pub(crate) fn url(&self) -> String {
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
            .expect("redis-server is installed (Debian's redis-server package)");
        self.child = Some(child);
        wait_for_port(self.port, Duration::from_secs(10));
    }

    /// Kills it (SIGKILL: no shutdown save), leaves it down for `downtime`, and starts it again
    /// on the same port and data.
    pub(crate) fn crash_and_restart(&mut self, downtime: Duration) {
        self.kill();
        std::thread::sleep(downtime);
        self.run();
    }

    pub(crate) fn kill(&mut self) {
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
