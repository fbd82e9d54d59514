//! A database *machine* goes away and another takes over while `agentstate serve` takes writes:
//! a PostgreSQL primary with a synchronous standby, a three-node MariaDB Galera cluster and Redis
//! with Sentinel, each started by the test on spare loopback ports in a directory of its own and
//! killed with `kill -9`. Four writers PATCH distinct `user:` keys throughout; every PATCH answered
//! 200 must be in the database afterwards (where the setup promises it), every refusal is a 503
//! within the request's timeout, and the server carries on without a restart. Each drill prints
//! its rounds, writes acknowledged, writes lost and the slowest request.

mod galera;
mod postgres;
mod sentinel;

use std::net::TcpListener;
use std::time::Instant;

pub(crate) use crate::load::{Load, NoAnswer, Report};

/// A port nothing listens on now.
pub(crate) fn spare_port() -> u16 {
    // Below the kernel's ephemeral range (32768 and up by default): a node killed and restarted
    // on its ports must find them free, and an ephemeral port can meanwhile be the local end of
    // any outgoing connection of the machine (which once kept a Galera node from rejoining).
    // Ports are handed out once per process, from a start that differs between processes.
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let start = 20_000 + (std::process::id() % 500) as u16 * 20;
    let _ = NEXT.compare_exchange(0, start, std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst);
    loop {
        let port = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(port < 32_000, "no spare port below the ephemeral range");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A directory of the test's own (under /tmp, which the `postgres` user can reach when we are
/// root); removed when dropped.
pub(crate) struct Scratch(pub(crate) std::path::PathBuf);

impl Scratch {
    pub(crate) fn new(what: &str) -> Self {
        let base = if crate::outage::is_root() { std::path::PathBuf::from("/tmp") } else { std::env::temp_dir() };
        let dir = base.join(format!("agentstate-{what}-{}", agentstate::Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The conformance suite on the store `url` opens (as `agentstate serve --db` opens it).
pub(crate) fn conformance(what: &str, url: &str) {
    let url = url.to_owned();
    conformance_with(what, move |_| {
        let url = url.clone();
        async move { agentstate_backends::open(&url).await.unwrap() }
    });
}

/// Every conformance case the store's capabilities allow on the plain stack (the encrypted and refreshing stacks wrap the same
/// store calls, and run on every backend elsewhere), then the model test; prints how many cases
/// ran and how long they took.
pub(crate) fn conformance_with<F, FF>(what: &str, factory: F)
where
    F: Fn(agentstate::clock::ManualClock) -> FF + Clone,
    FF: Future<Output = std::sync::Arc<dyn agentstate::store::SessionStore>>,
{
    let started = Instant::now();
    let lacked = tokio::runtime::Runtime::new().unwrap().block_on(async {
        agentstate_conformance::Capability::lacked_by(factory(agentstate::clock::ManualClock::new()).await.as_ref())
    });
    let runs = |name: &&str| agentstate_conformance::case_capability(name).is_none_or(|c| !lacked.contains(&c));
    let mut ran = 0;
    for name in agentstate_conformance::case_names().filter(runs) {
        agentstate_conformance::run_case(factory.clone(), agentstate_conformance::Stack::Plain, name);
        ran += 1;
    }
    agentstate_conformance::check_against_model(factory, agentstate_conformance::Stack::Plain, 16);
    eprintln!("{what}: conformance suite, {ran} cases and the model test in {:?}", started.elapsed());
}

/// The keys of `acked` that `state` lacks.
pub(crate) fn lost<'a>(acked: &'a [String], state: &serde_json::Value) -> Vec<&'a String> {
    acked.iter().filter(|k| state.get(k.as_str()).is_none()).collect()
}

/// The state of session `s` of user `u` of `app`, read through the server at `addr`.
pub(crate) fn state_through(addr: &str, app: &str) -> serde_json::Value {
    let (status, body) = crate::binary::http(addr, "GET", &format!("/apps/{app}/users/u/sessions/s"), "");
    assert_eq!(status, 200, "{body}");
    let session: serde_json::Value = serde_json::from_str(&body).unwrap();
    session["state"].clone()
}
