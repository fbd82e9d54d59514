//! Around the routes: limits, access tokens, metrics, the OpenAPI document.

use agentstate::SessionService;
use agentstate_server::{AppState, app};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{S, call, call_as, router};

/// A router with small limits (2,000-byte bodies, 8-character keys, depth 3, 500-byte states) and
/// a session `l`.
async fn limited() -> axum::Router {
    use agentstate_server::Limits;
    let limits = Limits {
        max_body_bytes: 2000,
        max_key_chars: 8,
        max_json_depth: 3,
        max_state_bytes: 500,
        max_artifact_bytes: 3000,
    };
    let r = app(AppState::new(SessionService::in_memory()).with_limits(limits));
    call(&r, Method::POST, S, Some(r#"{"sessionId": "l"}"#)).await;
    r
}

#[tokio::test]
async fn limits_are_enforced_with_messages_naming_them() {
    let r = limited().await;
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
    let r = limited().await;
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
    let r = crate::support::with_tokens(
        r#"{"tokens": [{"token": "admin-token-0123456789", "apps": "*"},
                       {"token": "alice-token-0123456789", "apps": ["myapp"], "users": ["alice"]}]}"#,
    );
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
                .replace("{artifact_path}", "a.txt")
                .replace("{file}", "inspector.css");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let request =
                Request::builder().method(method.clone()).uri(&concrete).header("content-type", "application/json");
            let response = r.clone().oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            // A route that is not registered gets the fallback's 404 (FastAPI's `Not Found`) or a 405.
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path} is documented but not routed");
            assert!(
                status != StatusCode::NOT_FOUND
                    || !(bytes.as_ref() == br#"{"detail":"Not Found"}"#
                        || bytes.as_ref().ends_with(b"Requested entity was not found.\",\"status\":\"NOT_FOUND\"}}")),
                "{method} {path} is documented but not routed"
            );
        }
    }
    // 103 routes (18 of the managed-service surface, 26 of its Memory Bank, 4 of history, 6 of shared
    // state, 7 of memory, 10 of artifacts, 1 admin, 15 of the inspector);
    // /list-apps, /run and /run_sse come with the `agents` feature.
    let expected = if cfg!(feature = "agents") { 103 } else { 100 };
    assert_eq!(operations, expected, "every route is documented");
    assert_eq!(operations, agentstate_server::OPERATIONS.len());
    assert!(spec["components"]["schemas"]["Session"]["required"].as_array().unwrap().len() >= 6);

    // Links take a created session to the routes that use it, and every one points at an
    // operation of the document: a contract tester's stateful phase follows them.
    let resolve = |reference: &str| {
        let pointer = reference.trim_start_matches('#').replace("~1", "/").replace("~0", "~");
        let (path, method) = pointer.trim_start_matches("/paths/").rsplit_once('/').unwrap();
        paths.get(path).and_then(|p| p.get(method)).is_some()
    };
    let mut links = 0;
    for (path, methods) in paths {
        for op in methods.as_object().unwrap().values() {
            for link in op["responses"]["200"]["links"].as_object().into_iter().flat_map(|l| l.values()) {
                let reference = link["operationRef"].as_str().unwrap();
                assert!(resolve(reference), "{path}: a link to {reference}, which is not in the document");
                links += 1;
            }
        }
    }
    assert_eq!(links, 10 + 4 + 4, "ADK create (7 + 3 of the engine surface), both engine creates (4 each)");
    #[cfg(feature = "grpc")]
    assert_eq!(spec["x-grpc"].as_array().unwrap().len(), agentstate_server::grpc::METHODS.len());
}

/// With tokens configured, every route but the probes refuses a request without a token, as the
/// route table's authentication column says; the OpenAPI document says the same per route.
#[tokio::test]
async fn with_tokens_every_route_but_the_probes_needs_one() {
    use agentstate_server::{Access, OPERATIONS, Tokens};
    let tokens = Tokens::parse(r#"{"tokens": [{"token": "admin-token-0123456789", "apps": "*"}]}"#).unwrap();
    let r = app(AppState::new(SessionService::in_memory()).with_tokens(tokens));
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
            .replace("{*artifact_path}", "a.txt")
            .replace("{file}", "inspector.css");
        let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        let request = Request::builder().method(method).uri(&concrete).header("content-type", "application/json");
        let response = r.clone().oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap();
        let status = response.status();
        let location = response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let documented = &spec["paths"][op.path.replace("{*", "{").as_str()][op.method];
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
    let r = app(AppState::new(SessionService::in_memory()).with_tokens(tokens));
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

/// A router with two tokens for `myapp`: `whole-app-token-0123` (every user) and
/// `one-user-token-01234` (user `u1` only).
fn app_and_user_tokens() -> axum::Router {
    let tokens = agentstate_server::Tokens::parse(
        r#"{"tokens": [{"token": "whole-app-token-0123", "apps": ["myapp"]},
                       {"token": "one-user-token-01234", "apps": ["myapp"], "users": ["u1"]}]}"#,
    )
    .unwrap();
    app(AppState::new(SessionService::in_memory()).with_tokens(tokens))
}

/// agentstate's extensions of the ADK routes that `agentstate-adk` (the Python package) uses:
/// event windows on get, pages on list, the app-wide list, and an append with the stale check.
#[tokio::test]
async fn the_app_wide_list_needs_a_token_for_every_user() {
    let r = app_and_user_tokens();
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

/// A user's and an app's state without a session: keys without their prefix; the user's needs a
/// token for that user, the app's a token for every user of the app.
#[tokio::test]
async fn shared_state_is_read_without_a_session_with_the_tokens_it_needs() {
    let r = app_and_user_tokens();
    let send = |method: Method, path: &'static str, token: &'static str, body: &'static str| {
        let r = r.clone();
        async move { call_as(&r, token, method, path, body).await }
    };
    let create = r#"{"sessionId": "s", "state": {"user:lang": "fr", "app:theme": "dark", "own": 1}}"#;
    assert_eq!(
        send(Method::POST, "/apps/myapp/users/u1/sessions", "one-user-token-01234", create).await.0,
        StatusCode::OK
    );
    assert_eq!(
        send(Method::DELETE, "/apps/myapp/users/u1/sessions/s", "one-user-token-01234", "").await.0,
        StatusCode::OK
    );
    let mine = send(Method::GET, "/apps/myapp/users/u1/state", "one-user-token-01234", "").await;
    assert_eq!(mine, (StatusCode::OK, json!({"lang": "fr"})), "kept after its session is gone");
    let other = send(Method::GET, "/apps/myapp/users/u2/state", "one-user-token-01234", "").await;
    assert_eq!(other.0, StatusCode::FORBIDDEN);
    let nobody = send(Method::GET, "/apps/myapp/users/u2/state", "whole-app-token-0123", "").await;
    assert_eq!(nobody, (StatusCode::OK, json!({})));
    assert_eq!(send(Method::GET, "/apps/myapp/state", "one-user-token-01234", "").await.0, StatusCode::FORBIDDEN);
    let shared = send(Method::GET, "/apps/myapp/state", "whole-app-token-0123", "").await;
    assert_eq!(shared, (StatusCode::OK, json!({"theme": "dark"})));
}

/// A user's and an app's state written without a session: the same tokens as reading them; the
/// body of a session PATCH; keys without their prefix; refusals write nothing.
#[tokio::test]
async fn shared_state_is_written_without_a_session_with_the_tokens_it_needs() {
    let r = app_and_user_tokens();
    let send = |method: Method, path: &'static str, token: &'static str, body: &'static str| {
        let r = r.clone();
        async move { call_as(&r, token, method, path, body).await }
    };
    const USER: &str = "/apps/myapp/users/u1/state";
    let written = send(Method::PATCH, USER, "one-user-token-01234", r#"{"stateDelta": {"lang": "de", "n": 1}}"#).await;
    assert_eq!(written, (StatusCode::OK, json!({"lang": "de", "n": 1})));
    let deleted = send(Method::PATCH, USER, "one-user-token-01234", r#"{"deleteKeys": ["n"]}"#).await;
    assert_eq!(deleted, (StatusCode::OK, json!({"lang": "de"})));
    let other =
        send(Method::PATCH, "/apps/myapp/users/u2/state", "one-user-token-01234", r#"{"stateDelta": {"a": 1}}"#);
    assert_eq!(other.await.0, StatusCode::FORBIDDEN);
    let prefixed = send(Method::PATCH, USER, "one-user-token-01234", r#"{"stateDelta": {"user:lang": "xx"}}"#).await;
    assert_eq!(prefixed.0, StatusCode::BAD_REQUEST, "{:?}", prefixed.1);
    assert!(prefixed.1.to_string().contains("without their scope prefix"), "{:?}", prefixed.1);
    assert_eq!(send(Method::PATCH, USER, "one-user-token-01234", "{}").await.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(send(Method::PATCH, USER, "one-user-token-01234", "{nope").await.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(send(Method::GET, USER, "one-user-token-01234", "").await.1, json!({"lang": "de"}), "nothing written");
    // The user's first session starts with it.
    let create = r#"{"sessionId": "s"}"#;
    let session = send(Method::POST, "/apps/myapp/users/u1/sessions", "one-user-token-01234", create).await;
    assert_eq!(session.1["state"]["user:lang"], json!("de"));

    const APP: &str = "/apps/myapp/state";
    let body = r#"{"stateDelta": {"theme": "light"}}"#;
    assert_eq!(send(Method::PATCH, APP, "one-user-token-01234", body).await.0, StatusCode::FORBIDDEN);
    assert_eq!(
        send(Method::PATCH, APP, "whole-app-token-0123", body).await,
        (StatusCode::OK, json!({"theme": "light"}))
    );
    let session = send(Method::GET, "/apps/myapp/users/u1/sessions/s", "one-user-token-01234", "").await;
    assert_eq!(session.1["state"]["app:theme"], json!("light"));

    // The logs: which keys, when, by which route; paged; with the tokens of the state.
    let log = send(Method::GET, "/apps/myapp/users/u1/state/writes", "one-user-token-01234", "").await;
    assert_eq!(log.0, StatusCode::OK);
    let writes = log.1["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 2, "{log:?}");
    assert_eq!(writes[0]["deleteKeys"], json!(["n"]));
    assert_eq!(writes[1]["setKeys"], json!(["lang", "n"]));
    assert_eq!(writes[1]["origin"], json!("PATCH /apps/{app_name}/users/{user_id}/state"));
    assert!(writes[1]["time"].as_f64().unwrap() > 1.6e9);
    let first = send(Method::GET, "/apps/myapp/users/u1/state/writes?pageSize=1", "one-user-token-01234", "").await;
    assert_eq!(first.1["writes"][0]["id"], writes[0]["id"]);
    let token = first.1["nextPageToken"].as_str().unwrap().to_owned();
    let path: &'static str =
        Box::leak(format!("/apps/myapp/users/u1/state/writes?pageSize=1&pageToken={token}").into_boxed_str());
    let second = send(Method::GET, path, "one-user-token-01234", "").await;
    assert_eq!(second.1["writes"][0]["id"], writes[1]["id"]);
    let bad = send(Method::GET, "/apps/myapp/users/u1/state/writes?pageToken=zz", "one-user-token-01234", "").await;
    assert_eq!(bad.0, StatusCode::BAD_REQUEST);
    let other = send(Method::GET, "/apps/myapp/users/u2/state/writes", "one-user-token-01234", "").await;
    assert_eq!(other.0, StatusCode::FORBIDDEN);
    assert_eq!(
        send(Method::GET, "/apps/myapp/state/writes", "one-user-token-01234", "").await.0,
        StatusCode::FORBIDDEN
    );
    let app_log = send(Method::GET, "/apps/myapp/state/writes", "whole-app-token-0123", "").await;
    assert_eq!(app_log.1["writes"][0]["origin"], json!("PATCH /apps/{app_name}/state"));
}
