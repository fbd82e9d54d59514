use std::sync::Arc;

use agentstate::InMemorySessionService;
use agentstate_server::{AppState, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

fn router() -> Router {
    app(AppState::new(Arc::new(InMemorySessionService::new())))
}

async fn call(router: &Router, method: Method, path: &str, body: Option<&str>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    (status, value)
}

const S: &str = "/apps/myapp/users/u1/sessions";

#[tokio::test]
async fn create_without_body_generates_an_id() {
    let r = router();
    let (status, body) = call(&r, Method::POST, S, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["id"].as_str().unwrap().len(), 36);
    assert_eq!((body["appName"].as_str(), body["userId"].as_str()), (Some("myapp"), Some("u1")));
    assert_eq!(body["state"], json!({}));
    assert_eq!(body["events"], json!([]));
    assert!(body["lastUpdateTime"].as_f64().unwrap() > 1.7e9);
}

#[tokio::test]
async fn create_splits_state_and_refuses_duplicates() {
    let r = router();
    let request = r#"{"sessionId": "s1", "state": {"k": 1, "app:a": "A", "user:u": "U", "temp:t": "T"}}"#;
    let (status, body) = call(&r, Method::POST, S, Some(request)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["state"], json!({"k": 1, "app:a": "A", "user:u": "U"}));
    let (status, body) = call(&r, Method::POST, S, Some(request)).await;
    assert_eq!((status, body), (StatusCode::CONFLICT, json!({"detail": "Session already exists: s1"})));
    // snake_case is accepted too.
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"session_id": "s2"}"#)).await;
    assert_eq!((status, body["id"].as_str()), (StatusCode::OK, Some("s2")));
}

#[tokio::test]
async fn create_options_are_refused_as_the_reference_does() {
    let r = router();
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"options": {"state": 1, "app_name": 2}}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["detail"], "Session options cannot contain keys already bound by the endpoint: app_name, state");
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"options": {"ttl": "60s"}}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["detail"], "Session options are not supported by the configured session service.");
}

#[tokio::test]
async fn create_restores_events_and_refuses_adk_internal_ones() {
    let r = router();
    let events = json!([
        {"author": "user", "invocationId": "i1", "content": {"role": "user", "parts": [{"text": "hi"}]}},
        {"author": "agent", "invocationId": "i1", "content": {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {"q_text": "x"}}}]},
         "customMetadata": {"__adk_internal_x": 1, "mine": 2}}
    ]);
    let (status, body) =
        call(&r, Method::POST, S, Some(&json!({"sessionId": "r", "events": events}).to_string())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let stored = &body["events"];
    assert_eq!(stored.as_array().unwrap().len(), 2);
    assert_eq!(stored[1]["content"]["parts"][0]["functionCall"]["args"], json!({"q_text": "x"}));
    assert_eq!(stored[1]["customMetadata"], json!({"mine": 2}), "internal metadata is never shown");
    assert!(stored[0].get("customMetadata").is_none());

    for (event, what) in [
        (json!({"author": "a", "actions": {"stateDelta": {"k": 1}}}), "event actions"),
        (json!({"author": "a", "longRunningToolIds": ["t"]}), "long-running tool IDs"),
        (
            json!({"author": "a", "content": {"parts": [{"functionCall": {"name": "adk_request_confirmation"}}]}}),
            "ADK protocol function calls",
        ),
    ] {
        let (status, body) =
            call(&r, Method::POST, S, Some(&json!({"events": [{"author": "ok"}, event]}).to_string())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["detail"], format!("Session initialization event 1 cannot include {what}."));
    }
}

#[tokio::test]
async fn bad_bodies_and_ids() {
    let r = router();
    let (status, body) = call(&r, Method::POST, S, Some("{not json")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"][0]["type"], "json_invalid");
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"state": [1]}"#)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = call(&r, Method::GET, "/apps/myapp/users/u1/sessions/%20padded", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["detail"].as_str().unwrap().contains("session_id"), "{body}");
    let (status, _) = call(&r, Method::POST, "/apps/myapp/users/u%07/sessions", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn create_with_id_takes_the_body_as_state() {
    let r = router();
    let (status, body) = call(&r, Method::POST, &format!("{S}/legacy"), Some(r#"{"user:x": 1, "k": 2}"#)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((body["id"].as_str(), &body["state"]), (Some("legacy"), &json!({"k": 2, "user:x": 1})));
    let (status, body) = call(&r, Method::POST, &format!("{S}/legacy"), None).await;
    assert_eq!((status, body), (StatusCode::CONFLICT, json!({"detail": "Session already exists: legacy"})));
}

#[tokio::test]
async fn get_list_and_not_found() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "a", "state": {"user:n": 1}}"#)).await;
    call(&r, Method::POST, S, Some(r#"{"sessionId": "adk-eval-session-1"}"#)).await;
    call(&r, Method::PATCH, &format!("{S}/a"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    let (status, body) = call(&r, Method::GET, &format!("{S}/a"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["events"].as_array().unwrap().len(), 1);
    let (status, body) = call(&r, Method::GET, S, None).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = body.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a"], "eval sessions are not listed");
    assert_eq!(body[0]["events"], json!([]));
    assert_eq!(body[0]["state"], json!({"k": 1, "user:n": 1}));
    let (status, body) = call(&r, Method::GET, "/apps/myapp/users/nobody/sessions", None).await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));
    let (status, body) = call(&r, Method::GET, &format!("{S}/missing"), None).await;
    assert_eq!((status, body), (StatusCode::NOT_FOUND, json!({"detail": "Session not found"})));
}

#[tokio::test]
async fn patch_appends_a_user_event() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "p"}"#)).await;
    let (status, body) =
        call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"stateDelta": {"k": 1, "user:u": 2, "temp:t": 3}}"#)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["state"],
        json!({"k": 1, "user:u": 2, "temp:t": 3}),
        "the response shows temp keys, as the reference"
    );
    let event = &body["events"][0];
    assert_eq!(event["author"], "user");
    assert!(event["invocationId"].as_str().unwrap().starts_with("p-"));
    assert_eq!(event["actions"]["stateDelta"], json!({"k": 1, "user:u": 2}));
    let (_, stored) = call(&r, Method::GET, &format!("{S}/p"), None).await;
    assert_eq!(stored["state"], json!({"k": 1, "user:u": 2}));

    let (status, body) = call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"delta": {}}"#)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "stateDelta"]));
    let (status, body) = call(&r, Method::PATCH, &format!("{S}/gone"), Some(r#"{"stateDelta": {}}"#)).await;
    assert_eq!((status, body), (StatusCode::NOT_FOUND, json!({"detail": "Session not found"})));

    // agentstate's extension: deleteKeys, alone or with a delta.
    let (status, body) =
        call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"deleteKeys": ["k", "user:u"], "stateDelta": {"n": 1}}"#))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["state"], json!({"n": 1}));
    let event = body["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(event["deletedKeys"], json!(["k", "user:u"]));
    assert_eq!(event["actions"]["stateDelta"], json!({"n": 1, "k": null, "user:u": null}));
    let (status, body) = call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"deleteKeys": ["n"]}"#)).await;
    assert_eq!((status, &body["state"]), (StatusCode::OK, &json!({})));
    let (status, body) = call(&r, Method::PATCH, &format!("{S}/p"), Some(r#"{"deleteKeys": "n"}"#)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "deleteKeys"]));
}

#[tokio::test]
async fn delete_is_idempotent_and_answers_null() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "d"}"#)).await;
    assert_eq!(call(&r, Method::DELETE, &format!("{S}/d"), None).await, (StatusCode::OK, Value::Null));
    assert_eq!(call(&r, Method::DELETE, &format!("{S}/d"), None).await, (StatusCode::OK, Value::Null));
    assert_eq!(call(&r, Method::GET, &format!("{S}/d"), None).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn concurrent_patches_lose_no_update() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "c"}"#)).await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let r = r.clone();
            tokio::spawn(async move {
                let body = json!({"stateDelta": {format!("user:k{i}"): i, "last": i}}).to_string();
                call(&r, Method::PATCH, &format!("{S}/c"), Some(&body)).await.0
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), StatusCode::OK);
    }
    let (_, body) = call(&r, Method::GET, &format!("{S}/c"), None).await;
    for i in 0..20 {
        assert_eq!(body["state"][format!("user:k{i}")], i);
    }
    assert_eq!(body["events"].as_array().unwrap().len(), 20);
}

#[tokio::test]
async fn probes_and_request_ids() {
    let r = router();
    assert_eq!(call(&r, Method::GET, "/healthz", None).await, (StatusCode::OK, json!({"status": "ok"})));
    assert_eq!(call(&r, Method::GET, "/readyz", None).await, (StatusCode::OK, json!({"status": "ready"})));
    let response = r.oneshot(Request::get("/healthz").body(Body::empty()).unwrap()).await.unwrap();
    assert!(response.headers().contains_key("x-request-id"));
}

#[tokio::test]
async fn path_unsafe_ids_are_refused() {
    let r = router();
    for path in [format!("{S}/a%2Fb"), format!("{S}/.."), "/apps/a%5Cb/users/u/sessions".to_owned()] {
        let (status, body) = call(&r, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(body["detail"].as_str().unwrap().contains("path separator"), "{body}");
    }
    let (status, _) = call(&r, Method::POST, S, Some(r#"{"sessionId": "../../etc"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn limits_are_enforced_with_messages_naming_them() {
    use agentstate_server::Limits;
    let limits = Limits { max_body_bytes: 2000, max_key_chars: 8, max_json_depth: 3, max_state_bytes: 500 };
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_limits(limits));
    call(&r, Method::POST, S, Some(r#"{"sessionId": "l"}"#)).await;
    let patch = |delta: Value| json!({"stateDelta": delta}).to_string();
    let cases = [
        (patch(json!({"123456789": 1})), StatusCode::BAD_REQUEST, "--max-key-chars"),
        (patch(json!({"k": [[[[1]]]]})), StatusCode::BAD_REQUEST, "--max-json-depth"),
        (patch(json!({"k": "x".repeat(600)})), StatusCode::PAYLOAD_TOO_LARGE, "--max-state-bytes"),
        (patch(json!({"k": "x".repeat(3000)})), StatusCode::PAYLOAD_TOO_LARGE, "--max-body-bytes"),
    ];
    for (body, status, names) in cases {
        let (got, detail) = call(&r, Method::PATCH, &format!("{S}/l"), Some(&body)).await;
        assert_eq!(got, status, "{detail}");
        assert!(detail["detail"].as_str().unwrap().contains(names), "{detail}");
    }
    let (status, detail) = call(&r, Method::POST, S, Some(r#"{"state": {"a_very_long_key": 1}}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{detail}");
    // Nothing was written by the refused requests.
    let (_, session) = call(&r, Method::GET, &format!("{S}/l"), None).await;
    assert_eq!((session["state"].clone(), session["events"].as_array().unwrap().len()), (json!({}), 0));
}

/// Each limit at its bound is accepted, and one past it refused with a message naming it.
#[tokio::test]
async fn every_limit_holds_at_its_bound_and_refuses_one_past() {
    use agentstate_server::Limits;
    let limits = Limits { max_body_bytes: 2000, max_key_chars: 8, max_json_depth: 3, max_state_bytes: 500 };
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_limits(limits));
    call(&r, Method::POST, S, Some(r#"{"sessionId": "l"}"#)).await;
    let patch = |delta: Value| json!({"stateDelta": delta}).to_string();
    // A body of exactly `n` bytes: a small delta padded with JSON whitespace.
    let padded = |n: usize| {
        let body = patch(json!({"p": 1}));
        format!("{body}{}", " ".repeat(n - body.len()))
    };
    // `{"k":"xx…"}` of exactly `n` bytes of JSON.
    let sized = |n: usize| json!({"k": "x".repeat(n - r#"{"k":""}"#.len())});
    let cases = [
        ("--max-key-chars", patch(json!({"12345678": 1})), patch(json!({"123456789": 1})), StatusCode::BAD_REQUEST),
        ("--max-json-depth", patch(json!({"k": [[[1]]]})), patch(json!({"k": [[[[1]]]]})), StatusCode::BAD_REQUEST),
        ("--max-state-bytes", patch(sized(500)), patch(sized(501)), StatusCode::PAYLOAD_TOO_LARGE),
        ("--max-body-bytes", padded(2000), padded(2001), StatusCode::PAYLOAD_TOO_LARGE),
    ];
    for (option, at, past, refusal) in cases {
        let (status, body) = call(&r, Method::PATCH, &format!("{S}/l"), Some(&at)).await;
        assert_eq!(status, StatusCode::OK, "{option} at its bound: {body}");
        let (status, body) = call(&r, Method::PATCH, &format!("{S}/l"), Some(&past)).await;
        assert_eq!(status, refusal, "{option} one past: {body}");
        assert!(body["detail"].as_str().unwrap().contains(option), "{body}");
    }
    // Initial state on create: the same checks.
    let create = |state: Value| json!({"state": state}).to_string();
    assert_eq!(call(&r, Method::POST, S, Some(&create(sized(500)))).await.0, StatusCode::OK);
    assert_eq!(call(&r, Method::POST, S, Some(&create(sized(501)))).await.0, StatusCode::PAYLOAD_TOO_LARGE);
    // Pages: at most 1,000 sessions a page; a larger pageSize is clamped to it, as documented.
    for i in 0..1001 {
        let body = json!({"sessionId": format!("p{i}")}).to_string();
        call(&r, Method::POST, "/apps/myapp/users/pages/sessions", Some(&body)).await;
    }
    for size in [1000, 1001] {
        let (status, page) =
            call(&r, Method::GET, &format!("/apps/myapp/users/pages/sessions?pageSize={size}"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(page["sessions"].as_array().unwrap().len(), 1000, "pageSize={size}");
        assert!(page["nextPageToken"].is_string(), "pageSize={size}: the 1,001st is on the next page");
    }
}

#[tokio::test]
async fn tokens_limit_access_to_their_apps_and_users() {
    use agentstate_server::Tokens;
    let tokens = Tokens::parse(
        r#"{"tokens": [{"token": "admin-token-0123456789", "apps": "*"},
                       {"token": "alice-token-0123456789", "apps": ["myapp"], "users": ["alice"]}]}"#,
    )
    .unwrap();
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_tokens(tokens));
    let send = |token: Option<&'static str>, method: Method, path: &'static str| {
        let r = r.clone();
        async move {
            let mut request = Request::builder().method(method).uri(path).header("content-type", "application/json");
            if let Some(t) = token {
                request = request.header("authorization", format!("Bearer {t}"));
            }
            let response = r.oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
            let status = response.status();
            let www = response.headers().get("www-authenticate").cloned();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null), www)
        }
    };
    let (status, body, www) = send(None, Method::POST, "/apps/myapp/users/alice/sessions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(www.unwrap(), "Bearer");
    assert_eq!(
        send(Some("wrong-token-0123456789"), Method::GET, "/apps/myapp/users/alice/sessions").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(Some("alice-token-0123456789"), Method::POST, "/apps/myapp/users/alice/sessions").await.0,
        StatusCode::OK
    );
    let (status, body, _) =
        send(Some("alice-token-0123456789"), Method::POST, "/apps/other/users/alice/sessions").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body["detail"].as_str().unwrap().contains("\"other\""), "{body}");
    let (status, _, _) = send(Some("alice-token-0123456789"), Method::POST, "/apps/myapp/users/bob/sessions").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The refused requests touched nothing; the admin token sees everything.
    let (status, body, _) = send(Some("admin-token-0123456789"), Method::GET, "/apps/myapp/users/bob/sessions").await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));
    let (_, body, _) = send(Some("admin-token-0123456789"), Method::GET, "/apps/other/users/alice/sessions").await;
    assert_eq!(body, json!([]));
    // Probes need no token.
    assert_eq!(send(None, Method::GET, "/healthz").await.0, StatusCode::OK);
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_appends_and_statuses() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "m"}"#)).await;
    call(&r, Method::PATCH, &format!("{S}/m"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    call(&r, Method::PATCH, &format!("{S}/m"), Some(r#"{"stateDelta": {"k": 2}}"#)).await;
    call(&r, Method::GET, &format!("{S}/nope"), None).await;
    let response = r.oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    let route = "/apps/{app_name}/users/{user_id}/sessions";
    for line in [
        format!(r#"agentstate_http_requests_total{{method="POST",route="{route}",status="200"}} 1"#),
        format!(r#"agentstate_http_requests_total{{method="PATCH",route="{route}/{{session_id}}",status="200"}} 2"#),
        format!(r#"agentstate_http_requests_total{{method="GET",route="{route}/{{session_id}}",status="404"}} 1"#),
        format!(
            r#"agentstate_http_request_duration_seconds_count{{method="PATCH",route="{route}/{{session_id}}",status="200"}} 2"#
        ),
        "agentstate_appends_total 2".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
    }
    assert!(!text.contains("/nope"), "raw paths never become labels");
}

#[tokio::test]
async fn events_are_paged_oldest_first() {
    let r = router();
    call(&r, Method::POST, S, Some(r#"{"sessionId": "h"}"#)).await;
    for n in 0..5 {
        call(&r, Method::PATCH, &format!("{S}/h"), Some(&json!({"stateDelta": {"n": n}}).to_string())).await;
    }
    let (status, first) = call(&r, Method::GET, &format!("{S}/h/events?limit=2"), None).await;
    assert_eq!(status, StatusCode::OK);
    let deltas = |page: &Value| -> Vec<i64> {
        page["events"].as_array().unwrap().iter().map(|e| e["actions"]["stateDelta"]["n"].as_i64().unwrap()).collect()
    };
    assert_eq!(deltas(&first), [0, 1]);
    let token = first["nextPageToken"].as_str().unwrap();
    let (_, second) = call(&r, Method::GET, &format!("{S}/h/events?limit=2&after={token}"), None).await;
    assert_eq!(deltas(&second), [2, 3]);
    let token = second["nextPageToken"].as_str().unwrap();
    let (_, last) = call(&r, Method::GET, &format!("{S}/h/events?limit=2&after={token}"), None).await;
    assert_eq!(deltas(&last), [4]);
    assert!(last.get("nextPageToken").is_none());
    assert_eq!(call(&r, Method::GET, &format!("{S}/nope/events"), None).await.0, StatusCode::NOT_FOUND);
    let (status, body) = call(&r, Method::GET, &format!("{S}/h/events?limit=0"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(call(&r, Method::GET, &format!("{S}/h/events?after=zz"), None).await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn openapi_describes_exactly_the_routes_that_answer() {
    let r = router();
    let (status, spec) = call(&r, Method::GET, "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(spec["openapi"], "3.1.0");
    let paths = spec["paths"].as_object().unwrap();
    let mut operations = 0;
    for (path, methods) in paths {
        for (method, op) in methods.as_object().unwrap() {
            operations += 1;
            assert!(op["summary"].is_string() && op["responses"].is_object(), "{method} {path}");
            let concrete = path
                .replace("{app_name}", "a")
                .replace("{user_id}", "u")
                .replace("{session_id}", "s")
                .replace("{file}", "inspector.css");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let request =
                Request::builder().method(method.clone()).uri(&concrete).header("content-type", "application/json");
            let response = r.clone().oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            // A route that is not registered gets the router's empty 404 or a 405.
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path} is documented but not routed");
            assert!(
                status != StatusCode::NOT_FOUND || !bytes.is_empty(),
                "{method} {path} is documented but not routed"
            );
        }
    }
    // 51 routes (16 of the managed-service surface, 4 of history, 1 admin, 14 of the inspector); /list-apps, /run and /run_sse
    // come with the `agents` feature.
    let expected = if cfg!(feature = "agents") { 51 } else { 48 };
    assert_eq!(operations, expected, "every route is documented");
    assert_eq!(operations, agentstate_server::OPERATIONS.len());
    assert!(spec["components"]["schemas"]["Session"]["required"].as_array().unwrap().len() >= 6);
}

/// With tokens configured, every route but the probes refuses a request without a token, as the
/// route table's authentication column says; the OpenAPI document says the same per route.
#[tokio::test]
async fn with_tokens_every_route_but_the_probes_needs_one() {
    use agentstate_server::{Access, OPERATIONS, Tokens};
    let tokens = Tokens::parse(r#"{"tokens": [{"token": "admin-token-0123456789", "apps": "*"}]}"#).unwrap();
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_tokens(tokens));
    let (_, spec) = {
        let request = Request::get("/openapi.json").header("authorization", "Bearer admin-token-0123456789");
        let response = r.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice::<Value>(&bytes).unwrap())
    };
    let mut public = Vec::new();
    for op in OPERATIONS {
        let concrete = op
            .path
            .replace("{app_name}", "a")
            .replace("{user_id}", "u")
            .replace("{session_id}", "s")
            .replace("{file}", "inspector.css");
        let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        let request = Request::builder().method(method).uri(&concrete).header("content-type", "application/json");
        let response = r.clone().oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
        let status = response.status();
        let location = response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let documented = &spec["paths"][op.path][op.method];
        if op.access == Access::Ui {
            // The inspector's pages send a browser to sign in, and show nothing.
            assert_eq!(status, StatusCode::SEE_OTHER, "{} {}", op.method, op.path);
            assert!(location.starts_with("/ui/login?next="), "{} {}: {location}", op.method, op.path);
            assert_eq!(documented["security"], json!([{}, {"bearer": []}]), "{} {}", op.method, op.path);
        } else if op.access == Access::Public {
            public.push(op.path);
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{} {}", op.method, op.path);
            assert_eq!(documented["security"], json!([]), "{} {}", op.method, op.path);
        } else {
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{} {} answers without a token", op.method, op.path);
            assert_eq!(documented["security"], json!([{"bearer": []}]), "{} {}", op.method, op.path);
            assert!(documented["responses"]["401"].is_object(), "{} {}", op.method, op.path);
        }
    }
    assert_eq!(public, ["/", "/ui/login", "/ui/login", "/ui/logout", "/ui/assets/{file}", "/healthz", "/readyz"]);
}

#[tokio::test]
async fn metrics_and_the_openapi_document_need_a_token_when_tokens_are_configured() {
    use agentstate_server::Tokens;
    let tokens = Tokens::parse(r#"{"tokens": [{"token": "support-token-0123456789", "apps": ["bot"]}]}"#).unwrap();
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_tokens(tokens));
    for path in ["/metrics", "/openapi.json"] {
        let bare = r.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(bare.status(), StatusCode::UNAUTHORIZED, "{path}");
        let request = Request::get(path).header("authorization", "Bearer support-token-0123456789");
        let allowed = r.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(allowed.status(), StatusCode::OK, "{path}");
    }
    // Failed attempts are counted, by reason.
    let wrong = Request::get("/metrics").header("authorization", "Bearer guessed-token-0123456789");
    assert_eq!(r.clone().oneshot(wrong.body(Body::empty()).unwrap()).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    let request = Request::get("/metrics").header("authorization", "Bearer support-token-0123456789");
    let metrics = r.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
    let text = String::from_utf8(metrics.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(text.contains("agentstate_auth_failures_total{reason=\"missing\"} 2\n"), "{text}");
    assert!(text.contains("agentstate_auth_failures_total{reason=\"unknown\"} 1\n"), "{text}");
    assert_eq!(r.oneshot(Request::get("/readyz").body(Body::empty()).unwrap()).await.unwrap().status(), StatusCode::OK);
}

/// agentstate's extensions of the ADK routes that `agentstate-adk` (the Python package) uses:
/// event windows on get, pages on list, the app-wide list, and an append with the stale check.
#[tokio::test]
async fn appends_with_the_stale_check_windows_and_pages() {
    let r = router();
    let (_, created) = call(&r, Method::POST, S, Some(r#"{"sessionId": "a", "state": {"k": 0}}"#)).await;
    let marker = created["lastUpdateTime"].as_f64().unwrap();
    let append = |event: Value, expected: Option<f64>| {
        let mut body = json!({ "event": event });
        if let Some(t) = expected {
            body["expectedLastUpdateTime"] = json!(t);
        }
        body.to_string()
    };
    let event = json!({"id": "e1", "author": "agent", "invocationId": "i1", "timestamp": 1.0,
                       "actions": {"stateDelta": {"k": 1, "user:u": 1, "temp:t": 1}},
                       "content": {"role": "model", "parts": [{"text": "hi"}]}});
    let (status, stored) =
        call(&r, Method::POST, &format!("{S}/a/events"), Some(&append(event.clone(), Some(marker)))).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["event"]["actions"]["stateDelta"], json!({"k": 1, "user:u": 1}), "temp: keys are not stored");
    assert_eq!(stored["duplicate"], false);
    let after = stored["lastUpdateTime"].as_f64().unwrap();
    assert!(after > marker);
    // The same event again, with the old marker (a retry after a lost answer): stored once.
    let (status, again) = call(&r, Method::POST, &format!("{S}/a/events"), Some(&append(event, Some(marker)))).await;
    assert_eq!((status, &again["duplicate"], &again["lastUpdateTime"]), (StatusCode::OK, &json!(true), &json!(after)));
    // A handle loaded before that append is stale now.
    let late = json!({"author": "agent", "invocationId": "i2", "actions": {"stateDelta": {"k": 2}}});
    let (status, body) =
        call(&r, Method::POST, &format!("{S}/a/events"), Some(&append(late.clone(), Some(marker)))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["detail"].as_str().unwrap().contains("modified in storage"), "{body}");
    let (status, _) = call(&r, Method::POST, &format!("{S}/a/events"), Some(&append(late, None))).await;
    assert_eq!(status, StatusCode::OK, "without a marker: a blind append");
    for (body, status) in [
        (json!({}).to_string(), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({"event": 5}).to_string(), StatusCode::UNPROCESSABLE_ENTITY),
        (
            json!({"event": {"author": "a"}, "expectedLastUpdateTime": "x"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ] {
        assert_eq!(call(&r, Method::POST, &format!("{S}/a/events"), Some(&body)).await.0, status, "{body}");
    }
    let body = append(json!({"author": "a"}), None);
    assert_eq!(call(&r, Method::POST, &format!("{S}/gone/events"), Some(&body)).await.0, StatusCode::NOT_FOUND);

    // Windows on get; pages on list; the app-wide list.
    let (_, recent) = call(&r, Method::GET, &format!("{S}/a?numRecentEvents=1"), None).await;
    assert_eq!(recent["events"].as_array().unwrap().len(), 1);
    let (_, none) = call(&r, Method::GET, &format!("{S}/a?numRecentEvents=0"), None).await;
    assert_eq!(none["events"], json!([]));
    assert_eq!(call(&r, Method::GET, &format!("{S}/a?numRecentEvents=-1"), None).await.0, StatusCode::BAD_REQUEST);
    call(&r, Method::POST, S, Some(r#"{"sessionId": "b"}"#)).await;
    call(&r, Method::POST, "/apps/myapp/users/u2/sessions", Some(r#"{"sessionId": "c"}"#)).await;
    let (_, page) = call(&r, Method::GET, &format!("{S}?pageSize=1"), None).await;
    assert_eq!(page["sessions"].as_array().unwrap().len(), 1);
    let token = page["nextPageToken"].as_str().unwrap();
    let (_, rest) = call(&r, Method::GET, &format!("{S}?pageSize=1&pageToken={token}"), None).await;
    assert_eq!((rest["sessions"].as_array().unwrap().len(), rest.get("nextPageToken")), (1, None));
    let (status, all) = call(&r, Method::GET, "/apps/myapp/sessions?pageSize=10", None).await;
    assert_eq!(status, StatusCode::OK);
    let users: Vec<&str> = all["sessions"].as_array().unwrap().iter().map(|s| s["userId"].as_str().unwrap()).collect();
    assert_eq!(users.len(), 3);
    assert!(users.contains(&"u2"));
    assert_eq!(call(&r, Method::GET, "/apps/myapp/sessions?pageToken=nonsense", None).await.0, StatusCode::BAD_REQUEST);
}

/// The app-wide list needs a token for every user of the app.
#[tokio::test]
async fn the_app_wide_list_needs_a_token_for_every_user() {
    use agentstate_server::Tokens;
    let tokens = Tokens::parse(
        r#"{"tokens": [{"token": "whole-app-token-0123", "apps": ["myapp"]},
                       {"token": "one-user-token-01234", "apps": ["myapp"], "users": ["u1"]}]}"#,
    )
    .unwrap();
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_tokens(tokens));
    let get = |token: &'static str| {
        let r = r.clone();
        async move {
            let request = Request::get("/apps/myapp/sessions").header("authorization", format!("Bearer {token}"));
            r.oneshot(request.body(Body::empty()).unwrap()).await.unwrap().status()
        }
    };
    assert_eq!(get("whole-app-token-0123").await, StatusCode::OK);
    assert_eq!(get("one-user-token-01234").await, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn sessions_expire_by_request_or_by_default_and_the_sweep_removes_them() {
    use std::time::Duration;

    use agentstate_server::Expiry;
    let expiry = Expiry { sweep_every: Some(Duration::from_millis(100)), ..Expiry::default() }
        .app_ttl("shortlived", Duration::from_millis(300));
    let state = AppState::new(Arc::new(InMemorySessionService::new())).with_expiry(expiry);
    let sweeper = tokio::spawn(state.sweeper());
    let r = app(state);

    // ttl (the managed service's duration) or expireTime, answered as expireTime.
    let (status, body) = call(&r, Method::POST, S, Some(r#"{"sessionId": "t", "ttl": "0.3s"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let expire = body["expireTime"].as_str().unwrap().to_owned();
    assert!(expire.ends_with('Z'), "{expire}");
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

    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(call(&r, Method::GET, &format!("{S}/t"), None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(call(&r, Method::GET, "/apps/shortlived/users/u/sessions/d", None).await.0, StatusCode::NOT_FOUND);
    let (status, _) = call(&r, Method::PATCH, &format!("{S}/t"), Some(r#"{"stateDelta": {"k": 1}}"#)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = call(&r, Method::GET, S, None).await;
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // The sweep removed both and counted them.
    let request = Request::builder().uri("/metrics").body(Body::empty()).unwrap();
    let response = r.clone().oneshot(request).await.unwrap();
    let text = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(text.contains("agentstate_sessions_expired_total 2"), "{text}");
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
    let r = app(AppState::new(Arc::new(InMemorySessionService::new())).with_tokens(tokens));
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
    assert_eq!(counted, json!({"sessions": 2, "events": 1, "userStateKeys": 1, "dryRun": true}));
    let (status, erased) = send(admin, Method::DELETE, "/apps/myapp/users/gone", "").await;
    assert_eq!(
        (status, erased),
        (StatusCode::OK, json!({"sessions": 2, "events": 1, "userStateKeys": 1, "dryRun": false}))
    );
    let (_, list) = send(admin, Method::GET, "/apps/myapp/users/gone/sessions", "").await;
    assert_eq!(list, json!([]));
    assert_eq!(send(admin, Method::DELETE, "/apps/myapp/users/gone?bogus=1", "").await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_sweep_applies_each_apps_retention_policy() {
    use std::time::Duration;

    use agentstate_server::{Expiry, parse_retention};
    let mut expiry = Expiry { sweep_every: Some(Duration::from_millis(100)), ..Expiry::default() };
    expiry.retention.insert("myapp".into(), parse_retention("2").unwrap());
    let state = AppState::new(Arc::new(InMemorySessionService::new())).with_expiry(expiry);
    let sweeper = tokio::spawn(state.sweeper());
    let r = app(state);
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
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (_, session) = call(&r, Method::GET, &format!("{S}/r"), None).await;
    assert_eq!(session["events"].as_array().unwrap().len(), 2, "the newest two are kept");
    assert_eq!(session["state"], json!({"k0": 0, "k1": 1, "k2": 2, "k3": 3, "k4": 4}), "the state stays");
    let (_, untouched) = call(&r, Method::GET, &format!("{other}/o"), None).await;
    assert_eq!(untouched["events"].as_array().unwrap().len(), 3, "apps without a policy keep everything");
    let request = Request::builder().uri("/metrics").body(Body::empty()).unwrap();
    let text = String::from_utf8(
        r.clone().oneshot(request).await.unwrap().into_body().collect().await.unwrap().to_bytes().to_vec(),
    )
    .unwrap();
    assert!(text.contains("agentstate_events_dropped_total 3"), "{text}");
    sweeper.abort();
}
