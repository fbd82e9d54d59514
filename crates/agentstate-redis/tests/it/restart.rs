//! Redis killed (SIGKILL) and restarted in the middle of a write burst: with `appendfsync always`
//! every acknowledged append is there afterwards, calls during the outage fail (retryable) within
//! their timeout instead of hanging, and the same service, never restarted, goes on by itself once
//! Redis is back.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
use agentstate_redis::RedisStore;
use serde_json::json;

use agentstate_conformance::redis_servers::OwnRedis;

use crate::servers::url_with_prefix;

const WRITERS: usize = 4;
const APPENDS: usize = 150;

#[test]
fn acknowledged_appends_survive_a_redis_crash_and_the_service_recovers() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let redis = Arc::new(Mutex::new(OwnRedis::start(&["--appendonly", "yes", "--appendfsync", "always"])));
    let url = url_with_prefix(&redis.lock().unwrap().url(), "crash:");
    runtime.block_on(async move {
        let service = SessionService::new(RedisStore::connect(&format!("{url}&timeout_ms=1000")).await.unwrap());
        let acked = Arc::new(Mutex::new(Vec::new()));
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let (service, acked) = (service.clone(), Arc::clone(&acked));
            writers.push(tokio::spawn(async move { write(&service, w, &acked).await }));
        }
        // Crash Redis once a third of the appends are acknowledged.
        while acked.lock().unwrap().len() < WRITERS * APPENDS / 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let before = acked.lock().unwrap().len();
        let restarted = Arc::clone(&redis);
        tokio::task::spawn_blocking(move || restarted.lock().unwrap().crash_and_restart(Duration::from_millis(1500)))
            .await
            .unwrap();
        let mut errors = 0;
        for writer in writers {
            errors += writer.await.unwrap();
        }
        assert!(errors > 0, "the writers should have seen Redis go away");

        let acked: BTreeSet<String> = acked.lock().unwrap().iter().cloned().collect();
        assert_eq!(acked.len(), WRITERS * APPENDS, "every append was eventually acknowledged");
        let mut found = BTreeSet::new();
        for w in 0..WRITERS {
            let key = agentstate::SessionKey::new("crash", format!("u{w}"), "s").unwrap();
            let session = service.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            assert_eq!(session.events().len(), APPENDS, "{key}: a retry is never stored twice");
            for event in session.events().iter() {
                found.insert(event.id.clone());
                let written = event.actions.state_delta.keys().next().unwrap();
                assert!(session.state().get(written).is_some(), "{written} of {} is in the state", event.id);
            }
        }
        let lost: Vec<_> = acked.difference(&found).collect();
        assert!(lost.is_empty(), "acknowledged but lost after the crash: {lost:?}");
        eprintln!("{before} appends acknowledged before the crash, {errors} failed calls during it, none lost");
    });
}

/// Appends `APPENDS` events to its own session, retrying (same event id) through failures;
/// returns how many calls failed.
async fn write(service: &SessionService, w: usize, acked: &Mutex<Vec<String>>) -> usize {
    let user = format!("u{w}");
    let mut session = service.create_session(CreateSession::new("crash", &user).id("s")).await.unwrap();
    let mut errors = 0;
    for i in 0..APPENDS {
        let id = format!("w{w}-{i}");
        let mut event = Event::new(format!("inv-{w}")).author("writer").delta(format!("user:{id}"), json!(i));
        event.id = id.clone();
        loop {
            match service.append_event(&mut session, event.clone()).await {
                Ok(_) => break,
                Err(e) if e.is_retryable() || e.kind() == agentstate::ErrorKind::Conflict => {
                    errors += usize::from(e.is_retryable());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    // Reload: a failed call may have been applied before the connection dropped.
                    if let Ok(Some(fresh)) = service.get_session(session.key(), GetSessionConfig::default()).await {
                        session = fresh;
                    }
                }
                Err(e) => panic!("append {id}: {e}"),
            }
        }
        acked.lock().unwrap().push(id);
    }
    errors
}
