//! A Redis Cluster of three masters on loopback ports of the test's own: the whole conformance
//! suite and the model test pass through it, and the apps the suite made are spread over the
//! nodes (every key of an app on one node, as the hash tag says).

use std::sync::Arc;

use agentstate::store::SessionStore;
use agentstate_conformance::Stack;
use agentstate_conformance::redis_servers::RedisCluster;
use agentstate_redis::RedisStore;

#[test]
fn the_conformance_suite_passes_on_a_redis_cluster() {
    let cluster = RedisCluster::start();
    let url = cluster.url("cluster:");
    let factory = |_clock| {
        let url = url.clone();
        async move { Arc::new(RedisStore::connect(&url).await.unwrap()) as Arc<dyn SessionStore> }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = runtime.block_on(factory(agentstate::clock::ManualClock::new()));
    let lacked = agentstate_conformance::Capability::lacked_by(store.as_ref());
    drop((store, runtime));
    let mut ran = 0;
    for stack in [Stack::Plain, Stack::EncryptedRefresh] {
        let runs = |name: &&str| agentstate_conformance::case_capability(name).is_none_or(|c| !lacked.contains(&c));
        for name in agentstate_conformance::case_names().filter(runs) {
            agentstate_conformance::run_case(factory, stack, name);
            ran += 1;
        }
        agentstate_conformance::check_against_model(factory, stack, 8);
    }
    assert!(ran >= 2 * 52, "{ran} cases");

    let holding = cluster.keys_per_node();
    assert!(holding.iter().filter(|&&keys| keys > 0).count() >= 2, "apps spread over the nodes: {holding:?}");
}
