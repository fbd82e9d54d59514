//! Run leases: one run of a session at a time, over every server sharing the store.

use std::sync::Arc;
use std::time::Duration;

use agentstate::SessionKey;
use agentstate::store::{LeaseRequest, LeaseState, LeaseStore};
use tokio::sync::Barrier;

use super::Svc;
use crate::unique;

const TTL: i64 = 30_000_000;

fn ask(svc: &Svc, key: &SessionKey, holder: &str) -> LeaseRequest {
    let now_micros = svc.now_micros();
    LeaseRequest { key: key.clone(), holder: holder.to_owned(), now_micros, until_micros: now_micros + TTL }
}

/// The store's leases, asked afresh for each call: over several instances of a store (the
/// alternating stack) each call may go to another one, as runs on several servers do.
fn leases(svc: &Svc) -> &dyn LeaseStore {
    assert!(svc.leases_are_shared(), "the case runs where the store keeps leases");
    svc.leases()
}

async fn acquire(svc: &Svc, key: &SessionKey, holder: &str) -> LeaseState {
    leases(svc).acquire_lease(&ask(svc, key, holder)).await.unwrap()
}

async fn release(svc: &Svc, key: &SessionKey, holder: &str) -> bool {
    leases(svc).release_lease(key, holder).await.unwrap()
}

async fn interrupt(svc: &Svc, key: &SessionKey) -> bool {
    leases(svc).interrupt_lease(key, svc.now_micros()).await.unwrap()
}

pub(super) async fn leases_let_one_run_at_a_time(svc: Svc) {
    let app = unique("lease");
    let key = SessionKey::new(&app, "ann", "s1").unwrap();
    let held = LeaseState::Held { interrupt_requested: false };
    assert_eq!(acquire(&svc, &key, "run-1").await, held, "free: taken (no session needed)");
    let until = svc.now_micros() + TTL;
    assert_eq!(
        acquire(&svc, &key, "run-2").await,
        LeaseState::Busy { holder: "run-1".into(), until_micros: until },
        "held by another"
    );
    // Other sessions, users and apps have leases of their own.
    for other in [
        SessionKey::new(&app, "ann", "s2").unwrap(),
        SessionKey::new(&app, "bob", "s1").unwrap(),
        SessionKey::new(unique("lease"), "ann", "s1").unwrap(),
    ] {
        assert_eq!(acquire(&svc, &other, "run-2").await, held, "{other}");
    }
    // Renewing moves the time it lapses.
    svc.clock().advance(Duration::from_secs(20));
    assert_eq!(acquire(&svc, &key, "run-1").await, held, "renewed");
    svc.clock().advance(Duration::from_secs(20));
    assert!(matches!(acquire(&svc, &key, "run-2").await, LeaseState::Busy { .. }));
    // Released by its holder only.
    assert!(!release(&svc, &key, "run-2").await, "not the holder");
    assert!(release(&svc, &key, "run-1").await);
    assert!(!release(&svc, &key, "run-1").await, "released once");
    assert_eq!(acquire(&svc, &key, "run-2").await, held, "free again");
    // A holder that stops renewing (a crashed server) loses it once it lapses, not before.
    svc.clock().advance(Duration::from_secs(29));
    assert!(matches!(acquire(&svc, &key, "run-3").await, LeaseState::Busy { .. }));
    svc.clock().advance(Duration::from_secs(1));
    assert_eq!(acquire(&svc, &key, "run-3").await, held, "lapsed: taken over");
    assert!(!release(&svc, &key, "run-2").await, "the lapsed holder cannot release it");
    assert!(matches!(acquire(&svc, &key, "run-2").await, LeaseState::Busy { .. }));
}

pub(super) async fn interrupting_a_run_is_seen_on_its_next_renewal(svc: Svc) {
    let app = unique("lease");
    let key = SessionKey::new(&app, "ann", "s1").unwrap();
    assert!(!interrupt(&svc, &key).await, "no run to interrupt");
    acquire(&svc, &key, "run-1").await;
    assert!(interrupt(&svc, &key).await);
    let interrupted = LeaseState::Held { interrupt_requested: true };
    assert_eq!(acquire(&svc, &key, "run-1").await, interrupted);
    assert_eq!(acquire(&svc, &key, "run-1").await, interrupted, "kept while it runs");
    assert!(matches!(acquire(&svc, &key, "run-2").await, LeaseState::Busy { .. }));
    assert!(release(&svc, &key, "run-1").await);
    let held = LeaseState::Held { interrupt_requested: false };
    assert_eq!(acquire(&svc, &key, "run-2").await, held, "the next run starts clean");
    // A lapsed lease is nobody's to interrupt, and whoever takes it over starts clean.
    svc.clock().advance(Duration::from_secs(31));
    assert!(!interrupt(&svc, &key).await);
    acquire(&svc, &key, "run-3").await;
    assert!(interrupt(&svc, &key).await);
    svc.clock().advance(Duration::from_secs(31));
    assert_eq!(acquire(&svc, &key, "run-4").await, held);
}

pub(super) async fn concurrent_runs_take_a_free_lease_once(svc: Svc) {
    let app = unique("lease");
    for round in 0..8 {
        let key = SessionKey::new(&app, "ann", format!("s{round}")).unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let mut tasks = Vec::new();
        for run in 0..8 {
            let (svc, barrier, request) = (svc.clone(), Arc::clone(&barrier), ask(&svc, &key, &format!("run-{run}")));
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                leases(&svc).acquire_lease(&request).await
            }));
        }
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        let held = answers.iter().filter(|a| matches!(a, Ok(LeaseState::Held { .. }))).count();
        assert_eq!(held, 1, "round {round}: {answers:?}");
    }
    // Erasing the user forgets their leases.
    if let Some(lifecycle) = svc.capabilities().lifecycle {
        lifecycle.erase_user(&app, "ann").await.unwrap();
        let key = SessionKey::new(&app, "ann", "s0").unwrap();
        let held = LeaseState::Held { interrupt_requested: false };
        assert_eq!(acquire(&svc, &key, "late").await, held, "erased");
    }
}
