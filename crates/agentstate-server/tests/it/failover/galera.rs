//! MariaDB Galera: three nodes (`galera-4`, `mariadbd` with wsrep on spare loopback ports, state
//! transfer by rsync), started by the test. Schema preparation by two stores starting at once on
//! two nodes; the conformance suite with writes spread over two nodes; then two `agentstate serve`
//! on two nodes under four writers while one node is killed with `kill -9` and rejoins.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;
use agentstate_sql::SqlStore;

use super::{Load, NoAnswer, Scratch, lost, spare_port, state_through};
use crate::binary::{Running, http, serve_with};
use crate::outage::{is_root, wait_for};

/// One node: its directory, client port and cluster ports.
struct Node {
    dir: PathBuf,
    port: u16,
    gcomm: u16,
    ist: u16,
    sst: u16,
    child: Option<Child>,
}

impl Node {
    fn new(root: &Path, name: &str) -> Self {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        // As root, the nodes run as `mysql`: the rsync state transfer's daemon would otherwise
        // write as `nobody`, which cannot.
        if is_root() {
            assert!(Command::new("chown").args(["-R", "mysql"]).arg(root).status().unwrap().success());
        }
        let mut install = Command::new("mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg("--auth-root-authentication-method=normal");
        if is_root() {
            install.arg("--user=mysql");
        }
        let out = install.output().expect("mariadb-install-db is installed (Debian's mariadb-server)");
        assert!(out.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&out.stderr));
        Self { dir, port: spare_port(), gcomm: spare_port(), ist: spare_port(), sst: spare_port(), child: None }
    }

    /// Starts it: the first node of a new cluster (`bootstrap`), or a member joining `members`.
    fn start(&mut self, members: &str, bootstrap: bool) {
        let mut command = Command::new("mariadbd");
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.dir.join("data").display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", self.dir.join("sock").display()))
            .arg(format!("--pid-file={}", self.dir.join("pid").display()))
            .arg(format!("--log-error={}", self.dir.join("error.log").display()))
            .arg("--skip-name-resolve")
            .arg("--binlog-format=ROW")
            .arg("--innodb-autoinc-lock-mode=2")
            .arg("--innodb-flush-log-at-trx-commit=2")
            .arg("--wsrep-on=ON")
            .arg("--wsrep-provider=/usr/lib/galera/libgalera_smm.so")
            .arg("--wsrep-cluster-name=agentstate-test")
            .arg(format!("--wsrep-cluster-address=gcomm://{members}"))
            .arg(format!("--wsrep-node-address=127.0.0.1:{}", self.gcomm))
            // A killed node is declared gone after 3 s of silence instead of Galera's 5 to 15 s:
            // until then the survivors hold every commit, and a write waiting that long met the
            // writers' 10 s read timeout once on a busy machine. Still well above what a live
            // node on loopback ever stays silent (a keepalive every half second).
            .arg(format!(
                "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{};ist.recv_addr=127.0.0.1:{};gcache.size=64M;\
                 evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT3S;\
                 evs.inactive_timeout=PT6S;evs.install_timeout=PT6S",
                self.gcomm, self.ist
            ))
            .arg("--wsrep-sst-method=rsync")
            .arg(format!("--wsrep-sst-receive-address=127.0.0.1:{}", self.sst))
            // Reads, updates and deletes on one node see what another node committed first
            // (read-your-writes across servers on different nodes): with reads alone (1), a delete
            // on one node could run before that node applied the create made on another, delete
            // nothing, and the session live on.
            .arg("--wsrep-sync-wait=3")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if bootstrap {
            command.arg("--wsrep-new-cluster");
        }
        if is_root() {
            command.arg("--user=mysql");
        }
        self.child = Some(command.spawn().unwrap());
        let started = Instant::now();
        while self.state().as_deref() != Some("Synced") {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "node on {} did not sync: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `wsrep_local_state_comment`, if the node answers.
    fn state(&self) -> Option<String> {
        self.sql("SHOW STATUS LIKE 'wsrep_local_state_comment'")
            .and_then(|out| out.split_whitespace().nth(1).map(str::to_owned))
    }

    fn sql(&self, statement: &str) -> Option<String> {
        let out = Command::new("mariadb")
            .args(["-h", "127.0.0.1", "-P", &self.port.to_string(), "-uroot", "-N", "-e", statement])
            .output()
            .ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}?acquire_timeout_ms=2000", self.port)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three synced nodes.
fn cluster(root: &Path) -> Vec<Node> {
    let mut nodes: Vec<Node> = ["a", "b", "c"].iter().map(|n| Node::new(root, n)).collect();
    let members = nodes.iter().map(|n| format!("127.0.0.1:{}", n.gcomm)).collect::<Vec<_>>().join(",");
    nodes[0].start(&members, true);
    for node in &mut nodes[1..] {
        node.start(&members, false);
    }
    let size = nodes[0].sql("SHOW STATUS LIKE 'wsrep_cluster_size'").unwrap_or_default();
    assert!(size.contains('3'), "cluster size: {size}");
    nodes
}

#[test]
fn galera_three_nodes_conformance_schema_race_and_a_killed_node_loses_nothing() {
    let scratch = Scratch::new("galera");
    let started = Instant::now();
    let mut nodes = cluster(&scratch.0);
    let members = nodes.iter().map(|n| format!("127.0.0.1:{}", n.gcomm)).collect::<Vec<_>>().join(",");
    eprintln!("Galera: three nodes synced in {:?}", started.elapsed());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    // Two stores start at once on two nodes of an empty database: both succeed, five times.
    for round in 0..5 {
        let database = format!("race{round}");
        nodes[0].sql(&format!("CREATE DATABASE {database}")).unwrap();
        // Each node applies the DDL on its own: the second may see it a moment later.
        let seen = Instant::now();
        while !nodes[1].sql(&format!("SHOW DATABASES LIKE '{database}'")).is_some_and(|out| out.contains(&database)) {
            assert!(seen.elapsed() < Duration::from_secs(30), "{database} never reached the second node");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (a, b) = (nodes[0].url(&database), nodes[1].url(&database));
        runtime.block_on(async {
            let (a, b) = tokio::join!(SqlStore::connect(&a), SqlStore::connect(&b));
            a.unwrap();
            b.unwrap();
        });
        let tables =
            nodes[2].sql(&format!("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{database}'"));
        assert_eq!(tables.unwrap().trim(), "14", "round {round}");
    }

    // The conformance suite, every write alternating between two nodes.
    nodes[0].sql("CREATE DATABASE suite").unwrap();
    let (a, b) = (nodes[0].url("suite"), nodes[1].url("suite"));
    super::conformance_with("Galera, alternating two nodes", move |_clock: ManualClock| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let a: Arc<dyn SessionStore> = Arc::new(SqlStore::connect(&a).await.unwrap());
            let b: Arc<dyn SessionStore> = Arc::new(SqlStore::connect(&b).await.unwrap());
            Arc::new(agentstate_conformance::Alternating::new(vec![a, b])) as Arc<dyn SessionStore>
        }
    });

    // Two servers on two nodes; the second node is killed and rejoins.
    nodes[0].sql("CREATE DATABASE drill").unwrap();
    let drill = Instant::now();
    // A store call the cluster holds (commits wait while it evicts the killed node) is answered
    // fails after 3 s and its PATCH is answered 503, well within the writers' 10 s.
    let serve = |url: &str| serve_with(&["--db", url, "--addr", "127.0.0.1:0", "--store-timeout-secs", "3"]);
    let (child_a, addr_a) = serve(&nodes[0].url("drill"));
    let (child_b, addr_b) = serve(&nodes[1].url("drill"));
    let (_a, _b) = (Running(child_a), Running(child_b));
    assert_eq!(http(&addr_a, "POST", "/apps/galera/users/u/sessions", r#"{"sessionId": "s"}"#).0, 200);
    let load = Load::start(&[addr_a.clone(), addr_b.clone()], "galera", NoAnswer::Refused);
    load.wait_for_more(100, Duration::from_secs(30));
    nodes[1].kill();
    let killed = Instant::now();
    // The server on the surviving node carries on.
    load.wait_for_more(100, Duration::from_secs(30));
    assert_eq!(http(&addr_b, "GET", "/readyz", "").0, 503, "ready without its node");
    nodes[1].start(&members, false);
    let rejoined = killed.elapsed();
    wait_for("the second server to recover", Duration::from_secs(30), || http(&addr_b, "GET", "/readyz", "").0 == 200);
    load.wait_for_more(100, Duration::from_secs(30));
    let report = load.finish(Duration::from_secs(11));
    let lost_a = lost(&report.acked, &state_through(&addr_a, "galera"));
    let lost_b = lost(&report.acked, &state_through(&addr_b, "galera"));
    eprintln!(
        "Galera: 1 round, {} writes acknowledged, {} lost, {} refused ({} of them lost races), slowest request {:?}, \
         node back and synced {:?} after the kill, drill {:?}",
        report.acked.len(),
        lost_a.len().max(lost_b.len()),
        report.refused.len(),
        report.refused.iter().filter(|(status, ..)| *status == 409).count(),
        report.slowest,
        rejoined,
        drill.elapsed()
    );
    assert!(lost_a.is_empty() && lost_b.is_empty(), "acknowledged writes lost: {lost_a:?} {lost_b:?}");
}
