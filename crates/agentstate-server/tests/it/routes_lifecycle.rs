//! Lifecycle through the API: expiry by request or by the app's default, the sweep, retention,
//! erasure; and what a PATCH costs in storage round trips.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentstate::clock::{Clock, ManualClock};
use agentstate::store::{
    Capabilities, CommitOutcome, EventCommit, EventQuery, LifecycleStore, ListQuery, LoadedSession, NewSession,
    SessionRead, SessionStore, UserDataCounts,
};
use agentstate::{Event, InMemoryStore, Policies, Session, SessionKey, SessionService};
use agentstate_server::{AppState, Sweep, app, parse_retention};
use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{S, call};

/// The metrics the router serves.
async fn metrics(r: &Router) -> String {
    let request = Request::builder().uri("/metrics").body(Body::empty()).unwrap();
    let response = r.clone().oneshot(request).await.unwrap();
    String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// Waits (the sweep ticks in real time) until the metrics say `what`.
async fn until_metrics_say(r: &Router, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = metrics(r).await;
        if text.contains(what) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the metrics never said {what}: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A router whose service reads `clock`, with `policies` and a sweep every 20 ms.
fn swept(clock: &ManualClock, policies: Policies) -> (Router, tokio::task::JoinHandle<()>) {
    let service =
        SessionService::builder(InMemoryStore::new()).clock(clock.clone()).policies(policies).build().unwrap();
    let state = AppState::new(service).with_sweep(Sweep { every: Some(Duration::from_millis(20)), batch: 10 });
    let sweeper = tokio::spawn(state.sweeper());
    (app(state), sweeper)
}

#[tokio::test]
async fn sessions_expire_by_request_or_by_default_and_the_sweep_removes_them() {
    let clock = ManualClock::new();
    let (r, sweeper) = swept(&clock, Policies::default().app_ttl("shortlived", Duration::from_secs(60)));

    // ttl (the managed service's duration) or expireTime, answered as expireTime.
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"sessionId": "t", "ttl": "60s"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let expire = body["expireTime"].as_str().unwrap().to_owned();
    assert_eq!(expire, agentstate::wire::engine::rfc3339(clock.now_micros() + 60_000_000), "by the service's clock");
    let (_, body) =
        call(&r, Method::POST, S, Some(r#"{"sessionId": "at", "expireTime": "2099-01-01T00:00:00Z"}"#)).await;
    assert_eq!(body["expireTime"], "2099-01-01T00:00:00.000000Z");
    let (_, body) = call(&r, Method::POST, S, Some(r#"{"sessionId": "never"}"#)).await;
    assert!(body.get("expireTime").is_none(), "no expiry, no field: {body}");
    let (_, body) = call(&r, Method::POST, "/apps/shortlived/users/u/sessions", Some(r#"{"sessionId": "d"}"#)).await;
    assert!(body["expireTime"].is_string(), "the app's default applies: {body}");
    for bad in [
        r#"{"ttl": "soon"}"#,
        r#"{"ttl": "0s"}"#,
        r#"{"expireTime": "tomorrow"}"#,
        r#"{"ttl": "1s", "expireTime": "2099-01-01T00:00:00Z"}"#,
    ] {
        let (status, body) = call(&r, Method::POST, S, Some(bad)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    assert_eq!(call(&r, Method::GET, &format!("{S}/t"), None).await.0, StatusCode::OK);

    clock.advance(Duration::from_secs(61));
    assert_eq!(call(&r, Method::GET, &format!("{S}/t"), None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(call(&r, Method::GET, "/apps/shortlived/users/u/sessions/d", None).await.0, StatusCode::NOT_FOUND);
    let (status, _) = call(&r, Method::PATCH, &format!("{S}/t"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = call(&r, Method::GET, S, None).await;
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // The sweep removes both and counts them.
    until_metrics_say(&r, "agentstate_sessions_expired_total 2").await;
    sweeper.abort();
}

#[tokio::test]
async fn erasing_a_user_needs_an_admin_token_and_says_what_it_removed() {
    use agentstate_server::Tokens;
    let tokens = Tokens::parse(
        r#"{"tokens": [{"token": "admin-token-0123456789", "apps": ["myapp"], "admin": true},
                       {"token": "every-token-0123456789", "apps": "*"},
                       {"token": "alice-token-0123456789", "apps": ["myapp"], "users": ["alice"], "admin": true}]}"#,
    )
    .unwrap();
    let r = app(AppState::new(SessionService::in_memory()).with_tokens(tokens));
    let send = |token: &'static str, method: Method, path: &str, body: &'static str| {
        let (r, path) = (r.clone(), path.to_owned());
        async move {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {token}"))
                .body(Body::from(body))
                .unwrap();
            let response = r.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
        }
    };
    let admin = "admin-token-0123456789";
    for id in ["a", "b"] {
        let body =
            if id == "a" { r#"{"sessionId": "a", "state": {"user:email": "x@y"}}"# } else { r#"{"sessionId": "b"}"# };
        assert_eq!(send(admin, Method::POST, "/apps/myapp/users/gone/sessions", body).await.0, StatusCode::OK);
    }
    send(admin, Method::PATCH, "/apps/myapp/users/gone/sessions/a", r#"{"stateDelta": {"k": 1}}"#).await;
    // Not admin, or admin of some users only, or of another app: 403, nothing removed.
    for (token, path) in [
        ("every-token-0123456789", "/apps/myapp/users/gone"),
        ("alice-token-0123456789", "/apps/myapp/users/alice"),
        (admin, "/apps/other/users/gone"),
    ] {
        assert_eq!(send(token, Method::DELETE, path, "").await.0, StatusCode::FORBIDDEN, "{token} {path}");
    }
    let (status, counted) = send(admin, Method::DELETE, "/apps/myapp/users/gone?dryRun=true", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        counted,
        json!({"sessions": 2, "events": 1, "userStateKeys": 1, "memories": 0, "artifacts": 0, "dryRun": true})
    );
    let (status, erased) = send(admin, Method::DELETE, "/apps/myapp/users/gone", "").await;
    assert_eq!(
        (status, erased),
        (
            StatusCode::OK,
            json!({"sessions": 2, "events": 1, "userStateKeys": 1, "memories": 0, "artifacts": 0, "dryRun": false})
        )
    );
    let (_, list) = send(admin, Method::GET, "/apps/myapp/users/gone/sessions", "").await;
    assert_eq!(list, json!([]));
    assert_eq!(send(admin, Method::DELETE, "/apps/myapp/users/gone?bogus=1", "").await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_sweep_applies_each_apps_retention_policy() {
    let policies =
        Policies { retention: [("myapp".to_owned(), parse_retention("2").unwrap())].into(), ..Policies::default() };
    let (r, sweeper) = swept(&ManualClock::new(), policies);
    call(&r, Method::POST, S, Some(r#"{"sessionId": "r"}"#)).await;
    for k in 0..5 {
        let body = format!(r#"{{"stateDelta": {{"k{k}": {k}}}}}"#);
        assert_eq!(call(&r, Method::PATCH, &format!("{S}/r"), Some(&body)).await.0, StatusCode::OK);
    }
    let other = "/apps/other/users/u1/sessions";
    call(&r, Method::POST, other, Some(r#"{"sessionId": "o"}"#)).await;
    for _ in 0..3 {
        call(&r, Method::PATCH, &format!("{other}/o"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    }
    until_metrics_say(&r, "agentstate_events_dropped_total 3").await;
    let (_, session) = call(&r, Method::GET, &format!("{S}/r"), None).await;
    assert_eq!(session["events"].as_array().unwrap().len(), 2, "the newest two are kept");
    assert_eq!(session["state"], json!({"k0": 0, "k1": 1, "k2": 2, "k3": 3, "k4": 4}), "the state stays");
    let (_, untouched) = call(&r, Method::GET, &format!("{other}/o"), None).await;
    assert_eq!(untouched["events"].as_array().unwrap().len(), 3, "apps without a policy keep everything");
    sweeper.abort();
}

/// A store that counts the calls that reach it (each a storage round trip on a server store).
struct Counting {
    inner: InMemoryStore,
    calls: Arc<AtomicUsize>,
}

impl Counting {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl SessionStore for Counting {
    async fn create(&self, new: NewSession) -> agentstate::Result<Session> {
        self.count();
        self.inner.create(new).await
    }
    async fn get(&self, key: &SessionKey, read: &SessionRead) -> agentstate::Result<Option<LoadedSession>> {
        self.count();
        self.inner.get(key, read).await
    }
    async fn list(&self, query: &ListQuery) -> agentstate::Result<Vec<Session>> {
        self.count();
        self.inner.list(query).await
    }
    async fn delete(&self, key: &SessionKey) -> agentstate::Result<()> {
        self.count();
        self.inner.delete(key).await
    }
    async fn commit(&self, commit: EventCommit) -> agentstate::Result<CommitOutcome> {
        self.count();
        self.inner.commit(commit).await
    }
    async fn events(&self, query: &EventQuery) -> agentstate::Result<Option<Vec<Event>>> {
        self.count();
        self.inner.events(query).await
    }
    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> agentstate::Result<Option<usize>> {
        self.count();
        self.inner.count_events(key, now_micros).await
    }
    async fn users_with_session(&self, app: &str, id: &str, now_micros: i64) -> agentstate::Result<Vec<String>> {
        self.count();
        self.inner.users_with_session(app, id, now_micros).await
    }
    // Lifecycle alone (the refresh policy needs it), counted like the rest.
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::none().with_lifecycle(self)
    }
}

#[async_trait]
impl LifecycleStore for Counting {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> agentstate::Result<Vec<SessionKey>> {
        self.count();
        self.inner.delete_expired(before_micros, limit).await
    }
    async fn set_expire_time(&self, key: &SessionKey, at: Option<i64>, now: i64) -> agentstate::Result<bool> {
        self.count();
        self.inner.set_expire_time(key, at, now).await
    }
    async fn set_attributes(
        &self,
        key: &SessionKey,
        update: &agentstate::store::AttributesUpdate,
        now: i64,
    ) -> agentstate::Result<bool> {
        self.count();
        self.inner.set_attributes(key, update, now).await
    }
    async fn erase_user(&self, app: &str, user: &str) -> agentstate::Result<UserDataCounts> {
        self.count();
        self.inner.erase_user(app, user).await
    }
    async fn count_user_data(&self, app: &str, user: &str) -> agentstate::Result<UserDataCounts> {
        self.count();
        self.inner.count_user_data(app, user).await
    }
}

/// A PATCH on the ADK route, with the refresh-on-append policy on (its worst case): the marker,
/// the append (the expire time moves inside it), the session answered. A GET: one read.
#[tokio::test]
async fn a_patch_costs_three_storage_round_trips_and_a_get_one() {
    let calls = Arc::new(AtomicUsize::new(0));
    let store = Counting { inner: InMemoryStore::new(), calls: Arc::clone(&calls) };
    let policies =
        Policies { default_ttl: Some(Duration::from_secs(3600)), refresh_ttl_on_append: true, ..Policies::default() };
    let r = app(AppState::new(SessionService::builder(store).policies(policies).build().unwrap()));
    assert_eq!(call(&r, Method::POST, S, Some(r#"{"sessionId": "p"}"#)).await.0, StatusCode::OK);
    let created = calls.swap(0, Ordering::SeqCst);
    assert_eq!(created, 1, "a create is one round trip");
    let (status, body) = call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["state"], json!({"k": 1}));
    assert!(calls.swap(0, Ordering::SeqCst) <= 3, "a PATCH costs at most three round trips");
    let (status, body) = call(&r, Method::GET, &format!("{S}/p"), None).await;
    assert_eq!((status, body["events"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a GET is one read");
    let _: Value = body;

    // What the store cannot do is answered 501 and named, before anything is done.
    let (status, body) = call(&r, Method::GET, &format!("{S}/p/state?atCreation=true"), None).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert_eq!(
        body["detail"],
        json!("this backend cannot answer history questions (its store has no history capability)")
    );
}
