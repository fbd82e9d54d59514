//! The memory routes: `adk api_server`'s `PATCH …/memory` answered as it answers it, and
//! agentstate's own routes to add, search, list and delete, each reaching one user's memories.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{S, call, call_as, call_json, router, with_tokens};

const M: &str = "/apps/myapp/users/u1/memories";

fn said(id: &str, author: &str, text: &str) -> Value {
    json!({"id": id, "invocationId": "inv", "author": author, "timestamp": 1_795_000_000.25,
           "content": {"role": "user", "parts": [{"text": text}]}})
}

#[tokio::test]
async fn adk_api_servers_memory_route_adds_a_stored_session() {
    let r = router();
    let (status, _) = call_json(&r, Method::POST, S, Some(json!({"sessionId": "s1"}))).await;
    assert_eq!(status, StatusCode::OK);
    let event = json!({"event": said("e1", "user", "My favourite colour is teal")});
    let (status, appended) = call_json(&r, Method::POST, &format!("{S}/s1/events"), Some(event)).await;
    assert_eq!(status, StatusCode::OK);
    let time = agentstate::Timestamp::from_secs(appended["event"]["timestamp"].as_f64().unwrap()).unwrap();

    let patch = |body: Option<&'static str>| {
        let r = r.clone();
        async move { call(&r, Method::PATCH, "/apps/myapp/users/u1/memory", body).await }
    };
    assert_eq!(patch(Some(r#"{"sessionId": "s1"}"#)).await, (StatusCode::OK, Value::Null));
    assert_eq!(patch(Some(r#"{"session_id": "s1"}"#)).await, (StatusCode::OK, Value::Null), "by name too");
    assert_eq!(
        patch(Some(r#"{"sessionId": "nope"}"#)).await,
        (StatusCode::NOT_FOUND, json!({"detail": "Session not found"}))
    );
    let (status, body) = patch(Some("{}")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "sessionId"]));
    assert_eq!(body["detail"][0]["type"], "missing");
    assert_eq!(patch(None).await.0, StatusCode::UNPROCESSABLE_ENTITY);

    let (status, found) = call(&r, Method::GET, &format!("{M}?query=which%20colour"), None).await;
    assert_eq!(status, StatusCode::OK);
    let memory = &found["memories"][0];
    assert_eq!(found["memories"].as_array().unwrap().len(), 1, "added twice, stored once");
    assert_eq!(memory["id"], "e1");
    assert_eq!(memory["sessionId"], "s1");
    assert_eq!(memory["author"], "user");
    assert_eq!(memory["content"], json!({"role": "user", "parts": [{"text": "My favourite colour is teal"}]}));
    assert_eq!(memory["timestamp"], time.rfc3339(), "the event's time, ISO 8601");
}

#[tokio::test]
async fn memories_are_added_searched_listed_and_deleted() {
    let r = router();
    let events = json!({"sessionId": "elsewhere", "events": [said("a", "user", "I live in Oslo"), said("b", "agent", "Oslo is cold")],
                        "customMetadata": {"ttl": "3600s", "topic": "home"}});
    let (status, added) = call_json(&r, Method::POST, "/apps/myapp/users/u1/memory/events", Some(events.clone())).await;
    assert_eq!((status, added), (StatusCode::OK, json!({"added": 2})));
    let again = call_json(&r, Method::POST, "/apps/myapp/users/u1/memory/events", Some(events)).await;
    assert_eq!(again, (StatusCode::OK, json!({"added": 0})));

    let whole = json!({"events": [said("c", "user", "my cat is Mia")]});
    let put = call_json(&r, Method::PUT, "/apps/myapp/users/u1/memory/sessions/kept-elsewhere", Some(whole)).await;
    assert_eq!(put, (StatusCode::OK, json!({"memories": 1})));

    let direct = json!({"memories": [{"id": "fact", "content": {"parts": [{"text": "allergic to Oslo pollen"}]}, "author": "nurse"}]});
    let (status, stored) = call_json(&r, Method::POST, M, Some(direct)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stored["memories"][0]["id"], "fact");

    let (_, found) = call(&r, Method::GET, &format!("{M}?query=oslo&limit=2"), None).await;
    assert_eq!(found["memories"].as_array().unwrap().len(), 2);
    let (_, oslo) = call(&r, Method::GET, &format!("{M}?query=live%20oslo"), None).await;
    assert_eq!(oslo["memories"][0]["id"], "a", "the one sharing the most words first");
    assert_eq!(oslo["memories"][0]["customMetadata"], json!({"ttl": "3600s", "topic": "home"}));
    assert!(oslo["memories"][0]["expireTime"].is_string());

    let (_, page) = call(&r, Method::GET, &format!("{M}?pageSize=3"), None).await;
    assert_eq!(page["memories"].as_array().unwrap().len(), 3);
    let token = page["nextPageToken"].as_str().unwrap();
    let (_, rest) = call(&r, Method::GET, &format!("{M}?pageSize=3&pageToken={token}"), None).await;
    assert_eq!(rest["memories"].as_array().unwrap().len(), 1);
    assert!(rest.get("nextPageToken").is_none());

    assert_eq!(call(&r, Method::DELETE, &format!("{M}/a"), None).await, (StatusCode::OK, json!({"deleted": 1})));
    let (status, body) = call(&r, Method::DELETE, &format!("{M}/a"), None).await;
    assert_eq!((status, body["detail"].as_str().unwrap()), (StatusCode::NOT_FOUND, "Memory a not found"));
    assert_eq!(call(&r, Method::DELETE, M, None).await, (StatusCode::OK, json!({"deleted": 3})));
    assert_eq!(call(&r, Method::GET, M, None).await, (StatusCode::OK, json!({"memories": []})));
}

#[tokio::test]
async fn bad_memory_requests_answer_4xx_and_write_nothing() {
    let r = router();
    let cases: [(Method, &str, Option<&str>, StatusCode); 15] = [
        (Method::GET, "?query=", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?limit=101", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=x&pageSize=0", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?mode=AAA", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=x&minSimilarity=2", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=x&mode=semantic", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=%20!!", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=x&limit=0", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?query=x&limit=101", None, StatusCode::BAD_REQUEST),
        (Method::GET, "?pageToken=zz", None, StatusCode::BAD_REQUEST),
        (
            Method::POST,
            "",
            Some(r#"{"memories": [{"content": {"parts": [{"text": "  "}]}}]}"#),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            "",
            Some(r#"{"memories": [{"content": {"parts": [{"text": "ok"}]}}], "customMetadata": {"ttl": "soon"}}"#),
            StatusCode::BAD_REQUEST,
        ),
        (Method::POST, "", Some(r#"{"memories": [{"id": "x"}]}"#), StatusCode::UNPROCESSABLE_ENTITY),
        (Method::POST, "", Some(r#"{"memories": "x"}"#), StatusCode::UNPROCESSABLE_ENTITY),
        (Method::POST, "", Some("not json"), StatusCode::UNPROCESSABLE_ENTITY),
    ];
    for (method, suffix, body, expected) in cases {
        let (status, answer) = call(&r, method.clone(), &format!("{M}{suffix}"), body).await;
        assert_eq!(status, expected, "{method} {suffix} {body:?}: {answer}");
    }
    let huge = "word ".repeat(60_000);
    let body =
        json!({"memories": [{"content": {"parts": [{"text": "fine"}]}}, {"content": {"parts": [{"text": huge}]}}]});
    let (status, answer) = call_json(&r, Method::POST, M, Some(body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["detail"].as_str().unwrap().contains("at most"), "{answer}");
    let events = json!({"events": [{"id": 5}]});
    assert_eq!(
        call_json(&r, Method::POST, "/apps/myapp/users/u1/memory/events", Some(events)).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(call(&r, Method::GET, M, None).await, (StatusCode::OK, json!({"memories": []})), "nothing written");
    assert_eq!(call(&r, Method::DELETE, &format!("{M}/unknown"), None).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_users_token_reaches_only_that_users_memories() {
    let r = with_tokens(
        r#"{"tokens": [{"token": "whole-app-token-0123", "apps": ["myapp"]},
                       {"token": "one-user-token-01234", "apps": ["myapp"], "users": ["u1"]}]}"#,
    );
    let send = |method: Method, path: String, token: &'static str, body: Value| {
        let r = r.clone();
        async move { call_as(&r, token, method, &path, &body.to_string()).await }
    };
    let memories = |user: &str| format!("/apps/myapp/users/{user}/memories");
    let fact = json!({"memories": [{"content": {"parts": [{"text": "u2 secret fact"}]}}]});
    assert_eq!(send(Method::POST, memories("u2"), "whole-app-token-0123", fact.clone()).await.0, StatusCode::OK);
    assert_eq!(send(Method::POST, memories("u2"), "one-user-token-01234", fact).await.0, StatusCode::FORBIDDEN);
    let search = |user: &str| format!("{}?query=secret", memories(user));
    assert_eq!(send(Method::GET, search("u2"), "one-user-token-01234", Value::Null).await.0, StatusCode::FORBIDDEN);
    let mine = send(Method::GET, search("u1"), "one-user-token-01234", Value::Null).await;
    assert_eq!(mine, (StatusCode::OK, json!({"memories": []})));
    let theirs = send(Method::GET, search("u2"), "whole-app-token-0123", Value::Null).await;
    assert_eq!(theirs.1["memories"].as_array().unwrap().len(), 1);
    let id = theirs.1["memories"][0]["id"].as_str().unwrap().to_owned();
    let delete = format!("{}/{id}", memories("u2"));
    assert_eq!(
        send(Method::DELETE, delete.clone(), "one-user-token-01234", Value::Null).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        send(Method::DELETE, format!("{}/{id}", memories("u1")), "one-user-token-01234", Value::Null).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(send(Method::DELETE, delete, "whole-app-token-0123", Value::Null).await.0, StatusCode::OK);
}
