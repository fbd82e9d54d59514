//! The session routes of `adk api_server`: create, get, list, patch, delete, events, appends.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{S, call, router};

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

/// On a store that keeps events as text (SQLite), a PATCH answers the session from that text, as
/// a GET does: the same JSON as the GET, but for this request's `temp:` keys.
#[tokio::test]
async fn a_patch_answers_what_a_get_answers_with_its_temp_keys() {
    let store = agentstate_sql::SqlStore::connect("sqlite::memory:").await.unwrap();
    let r = agentstate_server::app(agentstate_server::AppState::new(agentstate::SessionService::new(store)));
    call(&r, Method::POST, S, Some(r#"{"sessionId": "t", "state": {"a": 1}}"#)).await;
    for body in [
        r#"{"stateDelta": {"k": 1, "user:u": [1, {"x": "é"}]}}"#,
        r#"{"stateDelta": {"k": 2, "temp:t": 3}}"#,
        r#"{"stateDelta": {"temp:t": 4}, "deleteKeys": ["a", "temp:t"]}"#,
        r#"{"deleteKeys": ["k"]}"#,
    ] {
        let (status, patched) = call(&r, Method::PATCH, &format!("{S}/t"), Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{patched}");
        let (_, mut got) = call(&r, Method::GET, &format!("{S}/t"), None).await;
        let sent: Value = serde_json::from_str(body).unwrap();
        let shown = got["state"].as_object_mut().unwrap();
        for (key, value) in sent["stateDelta"].as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("temp:"))
        {
            shown.insert(key.clone(), value.clone());
        }
        for key in sent["deleteKeys"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if key.starts_with("temp:") {
                shown.shift_remove(key);
            }
        }
        assert_eq!(patched, got, "{body}");
    }
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
