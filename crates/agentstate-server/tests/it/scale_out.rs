//! Two `agentstate serve` processes share one PostgreSQL database (the scale-out deployment) and
//! take concurrent PATCH load on the same sessions and the same user's keys: no update is lost.

use std::sync::Arc;
use std::thread;

use serde_json::{Value, json};

use crate::binary::{Running, http, serve};

/// A new, empty PostgreSQL database on the test server.
fn fresh_postgres() -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(agentstate_conformance::databases::fresh_postgres())
}

#[test]
fn two_servers_on_one_postgres_lose_no_patch() {
    const THREADS: usize = 8;
    const PATCHES: usize = 25;
    const SESSIONS: usize = 3;
    let db = fresh_postgres();
    let (a, addr_a) = serve(&db);
    let _a = Running(a);
    let (b, addr_b) = serve(&db);
    let _b = Running(b);
    let servers = Arc::new([addr_a, addr_b]);
    let base = "/apps/scale/users/u/sessions";
    for s in 0..SESSIONS {
        let (status, body) = http(&servers[s % 2], "POST", base, &json!({"sessionId": format!("s{s}")}).to_string());
        assert_eq!(status, 200, "{body}");
    }
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let servers = Arc::clone(&servers);
            thread::spawn(move || {
                for n in 0..PATCHES {
                    let delta =
                        json!({"stateDelta": {format!("user:t{t}_{n}"): n, format!("from_t{t}"): n, "app:hits": n}});
                    let path = format!("{base}/s{}", (t + n) % SESSIONS);
                    let (status, body) = http(&servers[(t + n) % 2], "PATCH", &path, &delta.to_string());
                    assert_eq!(status, 200, "thread {t} patch {n}: {body}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut events = 0;
    for s in 0..SESSIONS {
        let (status, body) = http(&servers[s % 2], "GET", &format!("{base}/s{s}"), "");
        assert_eq!(status, 200);
        let session: Value = serde_json::from_str(&body).unwrap();
        events += session["events"].as_array().unwrap().len();
        for t in 0..THREADS {
            for n in 0..PATCHES {
                assert_eq!(
                    session["state"][format!("user:t{t}_{n}")],
                    n,
                    "user key of thread {t} patch {n} lost (s{s})"
                );
            }
        }
    }
    assert_eq!(events, THREADS * PATCHES, "every PATCH is one event");
}
