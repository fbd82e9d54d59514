//! The managed-service surface through the router: Google-style refusals of bad input with
//! nothing half-written, the same sessions as the ADK routes, and agentstate's extensions (the
//! user header, the stale check, duplicate appends).

use agentstate::SessionService;

use agentstate_server::{AppState, Tokens, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const E: &str = "/v1beta1/reasoningEngines/42";
const FULL: &str = "/v1beta1/projects/p/locations/l/reasoningEngines/42";

pub(crate) fn router() -> Router {
    app(AppState::new(SessionService::in_memory()))
}

pub(crate) async fn call(
    r: &Router,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let response = r.clone().oneshot(request.body(body).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

pub(crate) fn event(author: &str, delta: &Value) -> Value {
    json!({
        "author": author,
        "invocationId": "inv",
        "timestamp": "2030-01-01T00:00:00Z",
        "actions": { "stateDelta": delta },
    })
}

pub(crate) fn google_error(body: &Value, code: u16, status: &str) {
    assert_eq!(
        (body["error"]["code"].as_u64(), body["error"]["status"].as_str()),
        (Some(u64::from(code)), Some(status)),
        "{body}"
    );
}

#[tokio::test]
async fn sessions_are_the_same_through_both_surfaces() {
    let r = router();
    let (status, op) = call(&r, "POST", &format!("{FULL}/sessions?sessionId=v1"), Some(json!({"userId": "u", "sessionState": {"k": 1}, "displayName": "Trip", "labels": {"team": "a"}, "ttl": "3600s"})), &[]).await;
    assert_eq!(status, StatusCode::OK, "{op}");
    assert_eq!(op["done"], true);
    let session = &op["response"];
    assert_eq!(session["name"], "projects/p/locations/l/reasoningEngines/42/sessions/v1");
    assert_eq!((session["displayName"].as_str(), session["labels"]["team"].as_str()), (Some("Trip"), Some("a")));
    assert!(session["expireTime"].as_str().unwrap().ends_with('Z'));
    assert!(
        op["name"].as_str().unwrap().starts_with("projects/p/locations/l/reasoningEngines/42/sessions/v1/operations/")
    );
    // The operation can be read back, and names the session.
    let (status, polled) = call(&r, "GET", &format!("/v1beta1/{}", op["name"].as_str().unwrap()), None, &[]).await;
    assert_eq!((status, polled["done"].as_bool()), (StatusCode::OK, Some(true)));
    assert_eq!(polled["response"]["name"], session["name"]);

    // The same session on the ADK routes, and an ADK session on the managed routes.
    let (status, adk) = call(&r, "GET", "/apps/42/users/u/sessions/v1", None, &[]).await;
    assert_eq!((status, adk["state"].clone()), (StatusCode::OK, json!({"k": 1})));
    call(&r, "POST", "/apps/42/users/w/sessions", Some(json!({"sessionId": "from-adk", "state": {"user:n": 2}})), &[])
        .await;
    let (status, seen) = call(&r, "GET", &format!("{E}/sessions/from-adk"), None, &[]).await;
    assert_eq!(
        (status, seen["userId"].as_str(), seen["sessionState"].clone()),
        (StatusCode::OK, Some("w"), json!({"user:n": 2}))
    );
    assert_eq!(seen["name"], "reasoningEngines/42/sessions/from-adk");

    // Generated ids look like the managed service's.
    let (_, op) = call(&r, "POST", &format!("{E}/sessions"), Some(json!({"userId": "u"})), &[]).await;
    let id = op["response"]["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    assert!(id.len() == 19 && id.bytes().all(|b| b.is_ascii_digit()), "{id}");

    // Appends through the managed routes show on the ADK routes.
    let (status, stored) = call(
        &r,
        "POST",
        &format!("{E}/sessions/v1:appendEvent"),
        Some(event("agent", &json!({"k": 2, "user:x": 1, "temp:t": 1}))),
        &[],
    )
    .await;
    assert_eq!((status, &stored), (StatusCode::OK, &json!({})), "the managed service's empty answer");
    let (_, adk) = call(&r, "GET", "/apps/42/users/u/sessions/v1", None, &[]).await;
    assert_eq!(adk["state"], json!({"k": 2, "user:x": 1}), "temp: keys are never stored");
    assert_eq!(adk["events"][0]["author"], "agent");

    // Listing: by user, paged.
    let (status, listed) =
        call(&r, "GET", &format!("{E}/sessions?filter=user_id%3D%22u%22&pageSize=1"), None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    let token = listed["nextPageToken"].as_str().unwrap();
    let (_, second) =
        call(&r, "GET", &format!("{E}/sessions?filter=user_id%3D%22u%22&pageSize=1&pageToken={token}"), None, &[])
            .await;
    assert_eq!(second["sessions"].as_array().unwrap().len(), 1);
    assert!(second.get("nextPageToken").is_none());
    let (_, all) = call(&r, "GET", &format!("{E}/sessions"), None, &[]).await;
    assert_eq!(all["sessions"].as_array().unwrap().len(), 3);
    // Newest first (`v1` was appended to last), a page at a time; another order is refused.
    let names = |page: &Value| -> Vec<String> {
        page["sessions"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect()
    };
    let (status, newest) =
        call(&r, "GET", &format!("{E}/sessions?orderBy=update_time%20desc&pageSize=2"), None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{newest}");
    let mut walked = names(&newest);
    assert!(walked[0].ends_with("/sessions/v1"), "{walked:?}");
    let token = newest["nextPageToken"].as_str().unwrap();
    let (_, rest) =
        call(&r, "GET", &format!("{E}/sessions?orderBy=update_time%20desc&pageSize=2&pageToken={token}"), None, &[])
            .await;
    walked.extend(names(&rest));
    let mut oldest = names(&all);
    oldest.reverse();
    assert_eq!(walked, oldest);
    let (status, refused) = call(&r, "GET", &format!("{E}/sessions?orderBy=display_name"), None, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    google_error(&refused, 400, "INVALID_ARGUMENT");

    // Deleting answers a done operation; the session is gone from both surfaces.
    let (status, deleted) = call(&r, "DELETE", &format!("{E}/sessions/v1"), None, &[]).await;
    assert_eq!((status, deleted["done"].as_bool()), (StatusCode::OK, Some(true)));
    let (status, missing) = call(&r, "GET", &format!("{E}/sessions/v1"), None, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    google_error(&missing, 404, "NOT_FOUND");
    assert_eq!(call(&r, "GET", "/apps/42/users/u/sessions/v1", None, &[]).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn events_are_listed_oldest_first_in_pages_and_by_time() {
    let r = router();
    call(&r, "POST", &format!("{E}/sessions?sessionId=h"), Some(json!({"userId": "u"})), &[]).await;
    for i in 0..250 {
        let mut e = event("agent", &json!({"n": i}));
        e["timestamp"] = json!(format!("2030-01-01T00:{:02}:{:02}Z", i / 60, i % 60));
        e["rawEvent"] = json!({"id": format!("h{i:03}"), "author": "agent", "content": {"role": "model", "parts": [{"text": format!("t{i}")}]}});
        let (status, body) = call(&r, "POST", &format!("{E}/sessions/h:appendEvent"), Some(e), &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let mut ids = Vec::new();
    let mut pages = 0;
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            Some(t) => format!("{E}/sessions/h/events?pageSize=100&pageToken={t}"),
            None => format!("{E}/sessions/h/events?pageSize=100"),
        };
        let (status, page) = call(&r, "GET", &path, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        for e in page["sessionEvents"].as_array().unwrap() {
            ids.push(e["rawEvent"]["id"].as_str().unwrap().to_owned());
            assert!(e["name"].as_str().unwrap().starts_with("reasoningEngines/42/sessions/h/events/"));
        }
        match page["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!((pages, ids.len()), (3, 250), "pages of 100");
    assert_eq!(ids, (0..250).map(|i| format!("h{i:03}")).collect::<Vec<_>>());
    // Without a page size, the whole history in one page (ADK for TypeScript reads one page only).
    let (status, whole) = call(&r, "GET", &format!("{E}/sessions/h/events"), None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{whole}");
    let all: Vec<&str> =
        whole["sessionEvents"].as_array().unwrap().iter().map(|e| e["rawEvent"]["id"].as_str().unwrap()).collect();
    assert_eq!(all, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(whole.get("nextPageToken").is_none());
    let filter =
        "timestamp%3E%3D%222030-01-01T00%3A04%3A00%2B00%3A00%22%20AND%20timestamp%3C%222030-01-01T00%3A04%3A03Z%22";
    let (status, page) = call(&r, "GET", &format!("{E}/sessions/h/events?filter={filter}"), None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let got: Vec<&str> =
        page["sessionEvents"].as_array().unwrap().iter().map(|e| e["rawEvent"]["id"].as_str().unwrap()).collect();
    assert_eq!(got, ["h240", "h241", "h242"]);
    assert!(page.get("nextPageToken").is_none());
}

#[tokio::test]
async fn bad_input_is_refused_google_style_and_nothing_is_half_written() {
    let r = router();
    call(&r, "POST", &format!("{E}/sessions?sessionId=s"), Some(json!({"userId": "u", "sessionState": {"k": 0}})), &[])
        .await;
    let before = call(&r, "GET", "/apps/42/users/u/sessions/s", None, &[]).await.1;
    let refusals = [
        ("POST", format!("{E}/sessions"), Some(json!({"sessionState": {}})), "INVALID_ARGUMENT"),
        ("POST", format!("{E}/sessions"), Some(json!({"userId": "u", "colour": "red"})), "INVALID_ARGUMENT"),
        (
            "POST",
            format!("{E}/sessions"),
            Some(json!({"userId": "u", "ttl": "1s", "expireTime": "2030-01-01T00:00:00Z"})),
            "INVALID_ARGUMENT",
        ),
        ("POST", format!("{E}/sessions?sessionId=s"), Some(json!({"userId": "other"})), "INVALID_ARGUMENT"),
        ("POST", format!("{E}/sessions?sessionId=a%20b%2F"), Some(json!({"userId": "u"})), "INVALID_ARGUMENT"),
        ("GET", format!("{E}/sessions?filter=colour%3D%22x%22"), None, "INVALID_ARGUMENT"),
        ("GET", format!("{E}/sessions?pageToken=garbage"), None, "INVALID_ARGUMENT"),
        ("GET", format!("{E}/sessions/s/events?filter=author%3D%22x%22"), None, "INVALID_ARGUMENT"),
        ("GET", format!("{E}/sessions/s/events?filter=timestamp%3E%3Dyesterday"), None, "INVALID_ARGUMENT"),
        ("POST", format!("{E}/sessions/s:appendEvent"), Some(json!({"author": "a"})), "INVALID_ARGUMENT"),
        ("POST", format!("{E}/sessions/s:appendEvent"), Some(json!([1, 2])), "INVALID_ARGUMENT"),
        (
            "POST",
            format!("{E}/sessions/s:appendEvent"),
            Some(event("a", &json!({"k": "x".repeat(300_000)}))),
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            format!("{E}/sessions/s:appendEvent"),
            Some(event("a", &json!({"x".repeat(300): 1}))),
            "INVALID_ARGUMENT",
        ),
        ("POST", format!("{E}/sessions/s:explode"), Some(event("a", &json!({}))), "NOT_FOUND"),
        ("POST", format!("{E}/sessions/nothing:appendEvent"), Some(event("a", &json!({"k": 1}))), "NOT_FOUND"),
        ("GET", "/v1beta1/reasoningEngines/999/sessions/s".to_owned(), None, "NOT_FOUND"),
        ("DELETE", format!("{E}/sessions/nothing"), None, "NOT_FOUND"),
    ];
    for (method, path, body, status) in refusals {
        let (code, answer) = call(&r, method, &path, body, &[]).await;
        assert!(code.is_client_error(), "{method} {path}: {code} {answer}");
        assert_eq!(answer["error"]["status"], status, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], code.as_u16(), "{method} {path}");
    }
    let (code, raw) = {
        let request = Request::post(format!("{E}/sessions/s:appendEvent")).body(Body::from("{not json")).unwrap();
        let response = r.clone().oneshot(request).await.unwrap();
        let code = response.status();
        (code, serde_json::from_slice::<Value>(&response.into_body().collect().await.unwrap().to_bytes()).unwrap())
    };
    assert_eq!(code, StatusCode::BAD_REQUEST);
    google_error(&raw, 400, "INVALID_ARGUMENT");
    assert_eq!(call(&r, "GET", "/apps/42/users/u/sessions/s", None, &[]).await.1, before, "nothing was written");
}

#[tokio::test]
async fn agentstate_clients_get_the_stale_check_and_idempotent_appends() {
    let r = router();
    let (_, op) = call(&r, "POST", &format!("{E}/sessions?sessionId=s"), Some(json!({"userId": "u"})), &[]).await;
    let created = &op["response"]["updateTime"];
    let marker =
        chrono::DateTime::parse_from_rfc3339(created.as_str().unwrap()).unwrap().timestamp_micros().to_string();
    let headers = [("x-agentstate-user-id", "u"), ("x-agentstate-last-update", marker.as_str())];
    let mut first = event("agent", &json!({"k": 1}));
    first["rawEvent"] = json!({"id": "once"});
    let (status, stored) =
        call(&r, "POST", &format!("{E}/sessions/s:appendEvent"), Some(first.clone()), &headers).await;
    assert_eq!((status, &stored), (StatusCode::OK, &json!({})));
    // The same event again, as a client whose answer was lost retries it (the marker it was
    // loaded at, now stale): stored once, said so, with the stored event.
    let (status, again) = call(&r, "POST", &format!("{E}/sessions/s:appendEvent"), Some(first), &headers).await;
    assert_eq!((status, again["agentstateDuplicate"].as_bool()), (StatusCode::OK, Some(true)), "{again}");
    assert_eq!(again["rawEvent"]["id"], "once");
    // A handle loaded before that append is stale now.
    let (status, stale) =
        call(&r, "POST", &format!("{E}/sessions/s:appendEvent"), Some(event("agent", &json!({"k": 2}))), &headers)
            .await;
    assert_eq!(status, StatusCode::CONFLICT);
    google_error(&stale, 409, "ABORTED");
    assert!(stale["error"]["message"].as_str().unwrap().contains("modified in storage"));
    let (_, events) = call(&r, "GET", &format!("{E}/sessions/s/events"), None, &[]).await;
    assert_eq!(events["sessionEvents"].as_array().unwrap().len(), 1);
    // A different event under a used id is refused.
    let mut clash = event("agent", &json!({"k": 3}));
    clash["rawEvent"] = json!({"id": "once"});
    let (status, body) = call(&r, "POST", &format!("{E}/sessions/s:appendEvent"), Some(clash), &[]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    google_error(&body, 409, "ALREADY_EXISTS");
    // The user header must name the session's user.
    let (status, _) = call(&r, "GET", &format!("{E}/sessions/s"), None, &[("x-agentstate-user-id", "intruder")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn ids_two_users_share_are_ambiguous_here_and_tokens_bind_users() {
    let tokens = Tokens::parse(
        r#"{"tokens": [{"token": "only-alice-token-0123", "apps": ["42"], "users": ["alice"]},
                       {"token": "other-app-token-01234", "apps": ["7"]}]}"#,
    )
    .unwrap();
    let r = app(AppState::new(SessionService::in_memory()).with_tokens(tokens));
    let alice = [("x-goog-api-key", "only-alice-token-0123")];
    let (status, _) =
        call(&r, "POST", &format!("{E}/sessions?sessionId=a"), Some(json!({"userId": "alice"})), &alice).await;
    assert_eq!(status, StatusCode::OK);
    let (status, denied) =
        call(&r, "POST", &format!("{E}/sessions?sessionId=b"), Some(json!({"userId": "bob"})), &alice).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    google_error(&denied, 403, "PERMISSION_DENIED");
    let (status, unknown) = call(&r, "GET", &format!("{E}/sessions/a"), None, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    google_error(&unknown, 401, "UNAUTHENTICATED");
    let other_app = [("authorization", "Bearer other-app-token-01234")];
    assert_eq!(call(&r, "GET", &format!("{E}/sessions/a"), None, &other_app).await.0, StatusCode::FORBIDDEN);
    // A user-bound token lists only with a filter naming its user.
    assert_eq!(call(&r, "GET", &format!("{E}/sessions"), None, &alice).await.0, StatusCode::FORBIDDEN);
    let (status, mine) = call(&r, "GET", &format!("{E}/sessions?filter=user_id%3D%22alice%22"), None, &alice).await;
    assert_eq!((status, mine["sessions"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)));

    // Two users of one app with one id (made on the ADK routes): the managed routes cannot tell
    // them apart without the user header.
    let r = router();
    for user in ["u1", "u2"] {
        call(&r, "POST", &format!("/apps/42/users/{user}/sessions"), Some(json!({"sessionId": "twin"})), &[]).await;
    }
    let (status, body) = call(&r, "GET", &format!("{E}/sessions/twin"), None, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("several users"));
    let (status, body) = call(&r, "GET", &format!("{E}/sessions/twin"), None, &[("x-agentstate-user-id", "u2")]).await;
    assert_eq!((status, body["userId"].as_str()), (StatusCode::OK, Some("u2")));
}

/// A time to the nanosecond, as ADK-Rust's client sends it, is answered as sent on v1 and
/// v1beta1, bounds at its very nanosecond decide, and the ADK routes answer the float nearest it.
#[tokio::test]
async fn a_nanosecond_time_is_answered_as_sent() {
    let r = router();
    for (version, id) in [("v1", "n1"), ("v1beta1", "n2")] {
        let engine = format!("/{version}/projects/p/locations/l/reasoningEngines/42");
        let (status, _) =
            call(&r, "POST", &format!("{engine}/sessions?sessionId={id}"), Some(json!({"userId": "u"})), &[]).await;
        assert_eq!(status, StatusCode::OK);
        let mut e = event("agent", &json!({"k": 1}));
        e["timestamp"] = json!("2030-01-01T00:00:00.123456789Z");
        let (status, body) = call(&r, "POST", &format!("{engine}/sessions/{id}:appendEvent"), Some(e), &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let events = |filter: &'static str| {
            let (r, engine) = (r.clone(), engine.clone());
            async move {
                let (status, page) =
                    call(&r, "GET", &format!("{engine}/sessions/{id}/events?filter={filter}"), None, &[]).await;
                assert_eq!(status, StatusCode::OK, "{page}");
                page["sessionEvents"].as_array().cloned().unwrap_or_default()
            }
        };
        let all = events("").await;
        assert_eq!(all[0]["timestamp"], "2030-01-01T00:00:00.123456789Z", "{version}");
        assert!(all[0]["rawEvent"].get("customMetadata").is_none(), "{}", all[0]);
        // timestamp>="…789Z", then >="…790Z" and >"…789Z".
        assert_eq!(events("timestamp%3E%3D%222030-01-01T00%3A00%3A00.123456789Z%22").await.len(), 1);
        assert_eq!(events("timestamp%3E%3D%222030-01-01T00%3A00%3A00.12345679Z%22").await.len(), 0);
        assert_eq!(events("timestamp%3E%222030-01-01T00%3A00%3A00.123456789Z%22").await.len(), 0);
        assert_eq!(events("timestamp%3C%3D%222030-01-01T00%3A00%3A00.123456788Z%22").await.len(), 0);
        assert_eq!(events("timestamp%3C%3D%222030-01-01T00%3A00%3A00.123456789Z%22").await.len(), 1);
        // The ADK routes: the float nearest the time, and no internal metadata.
        let (status, session) = call(&r, "GET", &format!("/apps/42/users/u/sessions/{id}"), None, &[]).await;
        assert_eq!(status, StatusCode::OK, "{session}");
        let nearest = agentstate::Timestamp::parse_rfc3339("2030-01-01T00:00:00.123456789Z").unwrap().secs();
        assert_eq!(session["events"][0]["timestamp"].as_f64().map(f64::to_bits), Some(nearest.to_bits()));
        assert!(session["events"][0].get("customMetadata").is_none(), "{session}");
    }
}

/// What ADK for Go and ADK for Java send, answered as the managed service answers it: events
/// dated before their session (and at Go's zero time, 0001-01-01) come back at their own times and
/// are filtered by them, still in the order they were appended; ADK for Java's `{"seconds",
/// "nanos"}` form of a time is read; the ADK routes show where the history placed them.
#[tokio::test]
async fn events_keep_the_times_they_were_sent_with() {
    let r = router();
    let (status, _) =
        call(&r, "POST", &format!("{FULL}/sessions?sessionId=t1"), Some(json!({"userId": "u"})), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let sent = [
        json!("0001-01-01T00:00:00Z"),
        json!("2025-01-01T00:00:01Z"),
        json!({"seconds": 1_735_689_602_i64, "nanos": 500_000_000}),
        json!({"seconds": "1735689603"}),
    ];
    for (i, time) in sent.iter().enumerate() {
        let mut e = event("agent", &json!({"i": i}));
        e["timestamp"] = time.clone();
        let (status, body) = call(&r, "POST", &format!("{FULL}/sessions/t1:appendEvent"), Some(e), &[]).await;
        assert_eq!(status, StatusCode::OK, "{time}: {body}");
    }
    let events = |filter: &'static str| {
        let r = r.clone();
        async move {
            let (status, page) =
                call(&r, "GET", &format!("{FULL}/sessions/t1/events?filter={filter}"), None, &[]).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            let events = page["sessionEvents"].as_array().cloned().unwrap_or_default();
            events.iter().map(|e| e["timestamp"].as_str().unwrap_or_default().to_owned()).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        events("").await,
        [
            "0001-01-01T00:00:00.000000Z",
            "2025-01-01T00:00:01.000000Z",
            "2025-01-01T00:00:02.500000Z",
            "2025-01-01T00:00:03.000000Z"
        ]
    );
    // timestamp>="2025-01-01T00:00:02+00:00", as ADK for Go writes it; and an upper bound.
    assert_eq!(events("timestamp%3E%3D%222025-01-01T00%3A00%3A02%2B00%3A00%22").await.len(), 2);
    assert_eq!(events("timestamp%3C%222025-01-01T00%3A00%3A01Z%22").await, ["0001-01-01T00:00:00.000000Z"]);
    // The ADK routes: in the order appended, at the times the history placed them (after the
    // session's creation), nothing internal shown.
    let (_, session) = call(&r, "GET", "/apps/42/users/u/sessions/t1", None, &[]).await;
    let shown: Vec<f64> =
        session["events"].as_array().unwrap().iter().map(|e| e["timestamp"].as_f64().unwrap()).collect();
    assert!(shown.windows(2).all(|w| w[0] < w[1]) && shown[0] > 1.7e9, "{shown:?}");
    assert!(session["events"].as_array().unwrap().iter().all(|e| e.get("customMetadata").is_none()), "{session}");

    for bad in [json!({"seconds": 1, "nanos": 1_000_000_000}), json!({"seconds": "x"}), json!({"secs": 1}), json!(12)] {
        let mut e = event("agent", &json!({}));
        e["timestamp"] = bad.clone();
        let (status, body) = call(&r, "POST", &format!("{FULL}/sessions/t1:appendEvent"), Some(e), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        google_error(&body, 400, "INVALID_ARGUMENT");
    }
    assert_eq!(events("").await.len(), 4, "nothing written by a refusal");
}
