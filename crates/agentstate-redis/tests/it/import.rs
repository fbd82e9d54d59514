//! `import_adk` reads sessions written by ADK for Python's `RedisSessionService` (google-adk
//! 2.13.0) and stores them as the reference reads them back: state (session, `app:`, `user:`),
//! events and times, ids with `:` included.

use std::process::Command;

use agentstate::archive::ImportOptions;
use agentstate::{GetSessionConfig, SessionKey, SessionService};
use agentstate_conformance::reference::adk_python;
use agentstate_redis::RedisStore;
use serde_json::Value;

use crate::servers::{fresh_prefix, redis_url, url_with_prefix};

#[test]
fn sessions_written_by_the_reference_are_imported_as_it_reads_them() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let source_prefix = format!("{}adk:", fresh_prefix());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/adk_redis.py");
        let output = Command::new(adk_python()).arg(script).arg(redis_url()).arg(&source_prefix).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let expected: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(expected.len(), 3);

        let target =
            SessionService::new(RedisStore::connect(&url_with_prefix(&redis_url(), &fresh_prefix())).await.unwrap());
        let mut seen = Vec::new();
        let done = agentstate_redis::import_adk(
            target.store().as_ref(),
            &redis_url(),
            &source_prefix,
            ImportOptions::default(),
            |p| {
                seen.push(p.sessions);
            },
        )
        .await
        .unwrap();
        assert_eq!((done.sessions, done.events, done.skipped), (3, 12, 0));
        assert_eq!(seen.last(), Some(&3), "progress is reported");

        for reference in &expected {
            let field = |name: &str| reference[name].as_str().unwrap().to_owned();
            let key = SessionKey::new(field("app_name"), field("user_id"), field("id")).unwrap();
            let session = target.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            let state = serde_json::to_value(session.state()).unwrap();
            assert_eq!(state, reference["state"], "{key}: state");
            assert_eq!(session.events().len(), 4, "{key}");
            for (ours, theirs) in session.events().iter().zip(reference["events"].as_array().unwrap()) {
                assert_eq!(ours.id, theirs["id"].as_str().unwrap(), "{key}: event ids");
                assert_eq!(ours.author, theirs["author"].as_str().unwrap());
                assert_eq!(ours.invocation_id, theirs["invocation_id"].as_str().unwrap());
                let content = serde_json::to_value(&ours.content).unwrap();
                let their_text = &theirs["content"]["parts"][0]["text"];
                if !their_text.is_null() {
                    assert_eq!(&content["parts"][0]["text"], their_text, "{key}: text");
                } else {
                    assert_eq!(content["parts"][0]["function_call"]["name"], "lookup");
                }
                assert_eq!(serde_json::to_value(&ours.actions.state_delta).unwrap(), theirs["actions"]["state_delta"]);
                assert!((ours.timestamp - theirs["timestamp"].as_f64().unwrap()).abs() < 1e-6, "{key}: event time");
            }
            assert!(session.last_update_time() >= reference["last_update_time"].as_f64().unwrap() - 1e-6);
            let expires = session.attributes().expire_time_micros.expect("the reference's TTL becomes an expire time");
            let left = expires as f64 / 1e6 - agentstate::store::now_secs();
            assert!((3500.0..=3601.0).contains(&left), "{key}: {left} s left");
        }
        // A second run refuses, or skips with --skip-existing.
        assert!(
            agentstate_redis::import_adk(
                target.store().as_ref(),
                &redis_url(),
                &source_prefix,
                ImportOptions::default(),
                |_| {}
            )
            .await
            .is_err()
        );
        let again = agentstate_redis::import_adk(
            target.store().as_ref(),
            &redis_url(),
            &source_prefix,
            ImportOptions { skip_existing: true },
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!((again.sessions, again.skipped), (0, 3));
    });
}
