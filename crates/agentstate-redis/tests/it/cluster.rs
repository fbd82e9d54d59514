//! A Redis Cluster of three masters on loopback ports of the test's own: the whole conformance
//! suite and the model test pass through it, and the apps the suite made are spread over the
//! nodes (every key of an app on one node, as the hash tag says).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::store::SessionStore;
use agentstate_conformance::Stack;
use agentstate_redis::RedisStore;

use crate::servers::OwnRedis;

fn start_cluster() -> Vec<OwnRedis> {
    let nodes: Vec<OwnRedis> =
        (0..3).map(|_| OwnRedis::start(&["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])).collect();
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli is installed (Debian's redis-tools package)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let start = Instant::now();
    for node in &nodes {
        loop {
            let info =
                Command::new("redis-cli").args(["-p", &node.port.to_string(), "cluster", "info"]).output().unwrap();
            if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the cluster did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    nodes
}

#[test]
fn the_conformance_suite_passes_on_a_redis_cluster() {
    let nodes = start_cluster();
    let url = format!("redis://127.0.0.1:{}/?cluster=true&prefix=cluster:", nodes[0].port);
    let factory = |_clock| {
        let url = url.clone();
        async move { Arc::new(RedisStore::connect(&url).await.unwrap()) as Arc<dyn SessionStore> }
    };
    let mut ran = 0;
    for stack in [Stack::Plain, Stack::EncryptedRefresh] {
        for name in agentstate_conformance::case_names() {
            agentstate_conformance::run_case(factory, stack, name);
            ran += 1;
        }
        agentstate_conformance::check_against_model(factory, stack, 8);
    }
    assert!(ran >= 2 * 52, "{ran} cases");

    let holding: Vec<u64> = nodes
        .iter()
        .map(|node| {
            let out = Command::new("redis-cli").args(["-p", &node.port.to_string(), "dbsize"]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        })
        .collect();
    assert!(holding.iter().filter(|&&keys| keys > 0).count() >= 2, "apps spread over the nodes: {holding:?}");
}
