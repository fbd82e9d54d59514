//! Expiry: a session whose expire time has passed behaves as deleted for every read and write,
//! before and after a sweep removes it; a sweep removes expired sessions in bounded batches and
//! nothing else (with their artifacts, where the store keeps them: the one case that sweeps, so
//! no other case's sweep takes its sessions while it counts them).

use std::time::Duration;

use agentstate::history::{ForkSession, HistoryAt};
use agentstate::{CreateSession, ErrorKind, GetSessionConfig, ListEvents, ListSessions};
use serde_json::json;

use super::{Svc, event, key};
use crate::unique;

/// Every way of reaching the session `id` of `app`/`u` finds nothing.
async fn gone(svc: &Svc, app: &str, id: &str, live_ids: &[&str]) {
    let k = key(app, "u", id);
    assert!(svc.get_session(&k, GetSessionConfig::default()).await.unwrap().is_none(), "get {id}");
    let page = svc.list_sessions(ListSessions::user(app, "u")).await.unwrap();
    let listed: Vec<&str> = page.sessions.iter().map(|s| s.id()).collect();
    assert_eq!(listed, live_ids, "list skips expired sessions");
    let by_app = svc.list_sessions(ListSessions::app(app)).await.unwrap();
    assert_eq!(by_app.sessions.len(), live_ids.len());
    // Pages stay full and cover every live session once, whatever expired between them.
    let mut paged = Vec::new();
    let mut request = ListSessions::app(app).page_size(1);
    loop {
        let page = svc.list_sessions(request.clone()).await.unwrap();
        paged.extend(page.sessions.iter().map(|s| s.id().to_owned()));
        match page.next_page_token {
            Some(token) => request = request.page_token(token),
            None => break,
        }
    }
    assert_eq!(paged, live_ids, "paged list");
    // Newest first, a page at a time, and counted: the same sessions.
    let mut newest = Vec::new();
    let mut request = ListSessions::app(app).page_size(1).newest_first().count();
    loop {
        let page = svc.list_sessions(request.clone()).await.unwrap();
        assert_eq!(page.total_size, Some(live_ids.len()), "counted");
        newest.extend(page.sessions.iter().map(|s| s.id().to_owned()));
        match page.next_page_token {
            Some(token) => request = request.page_token(token),
            None => break,
        }
    }
    assert_eq!(newest, live_ids.iter().rev().copied().collect::<Vec<_>>(), "newest first");
    assert!(svc.list_events(&k, ListEvents::default()).await.unwrap().is_none(), "events of {id}");
    if let Some(at) = svc.history(svc.state_at(&k, HistoryAt::Creation).await) {
        assert!(at.is_none(), "history of {id}");
    }
    assert!(svc.find_sessions(app, id).await.unwrap().is_empty(), "find {id}");
}

pub(crate) async fn expired_sessions_behave_as_deleted(svc: Svc) {
    let app = unique("expiry");
    let now = svc.now_secs();
    // Expired at creation, expiring soon, never expiring.
    let past = CreateSession::new(&app, "u").id("past").state("k", json!(1)).expire_time(now - 1.0);
    svc.create_session(past).await.unwrap();
    let soon = CreateSession::new(&app, "u").id("soon").state("user:shared", json!(1)).ttl(Duration::from_secs(60));
    let mut soon = svc.create_session(soon).await.unwrap();
    svc.clock().advance(Duration::from_millis(1));
    let kept = CreateSession::new(&app, "u").id("kept").expire_time(now + 10.0 * 365.0 * 86_400.0);
    let mut kept = svc.create_session(kept).await.unwrap();
    gone(&svc, &app, "past", &["soon", "kept"]).await;

    // Alive until its time: readable, appendable, and its expire time is kept.
    let first = svc.append_event(&mut soon, event("inv-1", json!({"a": 1}))).await.unwrap();
    let loaded = svc.get_session(soon.key(), GetSessionConfig::default()).await.unwrap().expect("alive");
    assert_eq!(loaded.attributes().expire_time_micros, soon.attributes().expire_time_micros);
    assert!(loaded.attributes().expire_time_micros.is_some());

    svc.outlive(Duration::from_secs(60));
    gone(&svc, &app, "soon", &["kept"]).await;
    let late = svc.append_event(&mut soon, event("inv-2", json!({"a": 2}))).await.unwrap_err();
    assert_eq!(late.kind(), ErrorKind::NotFound, "append to an expired session");
    if let Some(diff) = svc.history(svc.event_diff(soon.key(), &first.id).await) {
        assert!(diff.is_none());
        assert_eq!(svc.rewind(&mut soon, "inv-1").await.unwrap_err().kind(), ErrorKind::NotFound);
        let fork = ForkSession { source: soon.key().clone(), at_event_id: first.id.clone(), session_id: None };
        assert_eq!(svc.fork_session(fork).await.unwrap_err().kind(), ErrorKind::NotFound);
    }
    // Shared state written by an expired session stays, as after a delete.
    svc.append_event(&mut kept, event("inv", json!({}))).await.unwrap();
    let kept = svc.get_session(kept.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(kept.state().get("user:shared"), Some(&json!(1)));

    // Its id is free again: a new session, not the old one.
    let again = svc.create_session(CreateSession::new(&app, "u").id("soon")).await.unwrap();
    assert!(again.state().get("a").is_none() && again.events().is_empty());
    assert_eq!(again.attributes().expire_time_micros, svc.default_expiry(), "the stack's default, not the old one's");
    let reloaded = svc.get_session(again.key(), GetSessionConfig::default()).await.unwrap().expect("recreated");
    assert!(reloaded.events().is_empty(), "the expired session's events are not the new one's");
}

pub(crate) async fn sweeps_remove_expired_sessions_in_batches(svc: Svc) {
    let app = unique("sweep");
    let now = svc.now_secs();
    for i in 0..3 {
        let request = CreateSession::new(&app, "u").id(format!("old-{i}")).expire_time(now - 10.0 + f64::from(i));
        svc.create_session(request).await.unwrap();
    }
    let future = CreateSession::new(&app, "u").id("future").ttl(Duration::from_secs(3600));
    svc.create_session(future).await.unwrap();
    svc.create_session(CreateSession::new(&app, "u").id("forever")).await.unwrap();
    // Artifacts of an expired session and of a live one, and the user's own.
    let artifacts = agentstate::artifact::ArtifactService::new(svc.service().clone());
    let scope = |id: &'static str| agentstate::artifact::ArtifactScope::new(&app, "u", Some(id));
    if artifacts.is_supported() {
        for id in ["old-0", "forever"] {
            artifacts.save(scope(id), "a", &agentstate::Part::text(id), None).await.unwrap();
            artifacts.save(scope(id), "user:u", &agentstate::Part::text(id), None).await.unwrap();
        }
    }

    // Bounded: one at a time. Other runs sharing the database may have expired sessions too, so
    // count at least ours.
    assert!(svc.sweep_expired(1).await.unwrap() <= 1);
    let mut removed = 1;
    loop {
        let n = svc.sweep_expired(100).await.unwrap();
        removed += n;
        if n < 100 {
            break;
        }
    }
    assert!(removed >= 3, "{removed} removed");
    let page = svc.list_sessions(ListSessions::app(&app)).await.unwrap();
    let mut left: Vec<&str> = page.sessions.iter().map(|s| s.id()).collect();
    left.sort_unstable();
    assert_eq!(left, ["forever", "future"], "live sessions are never swept");
    if artifacts.is_supported() {
        let names = artifacts.list_keys(scope("old-0")).await.unwrap();
        assert_eq!(names, ["user:u"], "the expired session's artifacts went with it, the user's stay");
        assert!(artifacts.load(scope("old-0"), "a", None).await.unwrap().is_none());
        assert_eq!(artifacts.load(scope("forever"), "a", None).await.unwrap(), Some(agentstate::Part::text("forever")));
        assert_eq!(artifacts.list_versions(scope("forever"), "user:u").await.unwrap(), [0, 1]);
    }
    // Removed, not only hidden: ids are free and nothing of them is found.
    for i in 0..3 {
        let id = format!("old-{i}");
        assert!(svc.get_session(&key(&app, "u", &id), GetSessionConfig::default()).await.unwrap().is_none());
        svc.create_session(CreateSession::new(&app, "u").id(id)).await.unwrap();
    }
}

pub(crate) async fn expire_times_move_both_ways(svc: Svc) {
    let app = unique("expire-move");
    let now = svc.now_secs();
    let soon = CreateSession::new(&app, "u").id("soon").ttl(Duration::from_secs(60));
    let mut soon = svc.create_session(soon).await.unwrap();
    svc.append_event(&mut soon, event("inv", json!({"k": 1}))).await.unwrap();
    let later = CreateSession::new(&app, "u").id("later").ttl(Duration::from_secs(3600));
    svc.create_session(later).await.unwrap();

    // Extended before it expired: alive past its first expire time, with its events.
    svc.set_expire_time(soon.key(), Some(now + 3600.0)).await.unwrap();
    // Shortened into the past: gone at once.
    svc.set_expire_time(&key(&app, "u", "later"), Some(now - 1.0)).await.unwrap();
    svc.clock().advance(Duration::from_secs(61));
    let alive = svc.get_session(soon.key(), GetSessionConfig::default()).await.unwrap().expect("extended");
    assert_eq!(alive.events().len(), 1);
    let moved = alive.attributes().expire_time_micros.unwrap();
    assert!((moved - agentstate::store::secs_to_micros(now + 3600.0).unwrap()).abs() <= 1, "{moved}");
    svc.append_event(&mut soon, event("inv", json!({"k": 2}))).await.unwrap();
    gone(&svc, &app, "later", &["soon"]).await;

    // Never: no expire time at all. An expired or missing session cannot be moved.
    svc.set_expire_time(soon.key(), None).await.unwrap();
    let forever = svc.get_session(soon.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(forever.attributes().expire_time_micros, None);
    for id in ["later", "missing"] {
        let error = svc.set_expire_time(&key(&app, "u", id), Some(now + 60.0)).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound, "{id}");
    }
}

/// Creating a session under the id of an expired one replaces it in one step: a new session,
/// nothing of the old one's events or history, even before any sweep, and a concurrent create
/// of the same id wins once.
pub(crate) async fn expired_ids_are_taken_again_at_once(svc: Svc) {
    let app = unique("expiry-again");
    let first = CreateSession::new(&app, "u").id("s").state("old", json!(1)).ttl(Duration::from_secs(60));
    let mut first = svc.create_session(first).await.unwrap();
    let old = svc.append_event(&mut first, event("inv-old", json!({"old": 2}))).await.unwrap();
    let taken = svc.create_session(CreateSession::new(&app, "u").id("s")).await.unwrap_err();
    assert_eq!(taken.kind(), ErrorKind::AlreadyExists, "alive: taken");
    svc.outlive(Duration::from_secs(60));

    let create = || svc.create_session(CreateSession::new(&app, "u").id("s").state("new", json!(true)));
    let (a, b) = tokio::join!(create(), create());
    let kinds = [a.as_ref().map(|_| ()).map_err(|e| e.kind()), b.as_ref().map(|_| ()).map_err(|e| e.kind())];
    assert!(kinds.contains(&Ok(())) && kinds.contains(&Err(ErrorKind::AlreadyExists)), "one wins: {kinds:?}");
    let again = svc.get_session(first.key(), GetSessionConfig::default()).await.unwrap().expect("the new one");
    assert_eq!(again.state().get("old"), None);
    assert_eq!(again.state().get("new"), Some(&json!(true)));
    assert!(again.events().is_empty(), "the old events went with it");
    assert!(svc.list_events(first.key(), ListEvents::default()).await.unwrap().unwrap().events.is_empty());
    assert_eq!(svc.count_events(first.key()).await.unwrap(), Some(0));
    let refused = svc.event_diff(first.key(), &old.id).await.unwrap_err().kind();
    if svc.keeps_history() {
        assert_eq!(refused, ErrorKind::InvalidArgument, "the old event is not the new session's");
        if let Some(creation) = svc.state_at(first.key(), HistoryAt::Creation).await.ok().flatten() {
            assert_eq!(creation.state.get("old"), None, "its history is its own");
        }
    } else {
        assert_eq!(refused, ErrorKind::Unsupported);
    }
}

/// With the refresh policy, an append to an expiring session moves its expire time to now plus
/// its app's time to live (never earlier); without it, expire times stay. Either way sessions
/// that never expire keep not expiring, and a duplicate append moves nothing.
pub(crate) async fn appends_refresh_expiry_by_the_policy(svc: Svc) {
    let app = unique("refresh");
    let ttl = Duration::from_secs(3600);
    let request = CreateSession::new(&app, "u").id("s").ttl(ttl);
    let mut session = svc.create_session(request).await.unwrap();
    let created = session.attributes().expire_time_micros.unwrap();
    let mut forever = svc.create_session(CreateSession::new(&app, "u").id("f")).await.unwrap();
    svc.set_expire_time(forever.key(), None).await.ok();
    let forever_expiry = svc.get_session(forever.key(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    let forever_expiry = forever_expiry.attributes().expire_time_micros;

    svc.clock().advance(Duration::from_secs(1800));
    let appended = svc.append_event(&mut session, event("inv", json!({"k": 1}))).await.unwrap();
    svc.append_event(&mut forever, event("inv", json!({}))).await.unwrap();
    let expiry = |s: &agentstate::Session| s.attributes().expire_time_micros;
    let reloaded = svc.get_session(session.key(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    let refreshed = svc.expire_after(crate::REFRESH_TTL);
    match svc.policies().refresh_ttl_on_append {
        true => assert_eq!(expiry(&reloaded), Some(refreshed.max(created)), "moved to now plus the app's ttl"),
        false => assert_eq!(expiry(&reloaded), Some(created), "no policy: the expire time stays"),
    }
    let moved = expiry(&reloaded);
    let unchanged = svc.get_session(forever.key(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    if forever_expiry.is_none() {
        assert_eq!(expiry(&unchanged), None, "a session that never expires is not given an expire time");
    }
    // A retry stores nothing and moves nothing.
    svc.clock().advance(Duration::from_secs(60));
    let mut handle = svc.get_session(session.key(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    let retried = svc.append_event(&mut handle, appended.clone()).await.unwrap();
    assert_eq!(retried, appended);
    let after = svc.get_session(session.key(), GetSessionConfig::recent(0)).await.unwrap().unwrap();
    assert_eq!(expiry(&after), moved);
}
