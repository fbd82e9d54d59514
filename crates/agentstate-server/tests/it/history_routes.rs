//! The history routes: the state at an event or time, an event's diff, rewind and fork, with
//! the errors a client can cause.

use agentstate::SessionService;

use agentstate_server::{AppState, app};
use axum::Router;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

const S: &str = "/apps/app/users/u/sessions";

use crate::support::call_json as call;

/// A session `h` with the creation state {k: 0, keep: 1}, then three PATCHes; the events.
async fn history(r: &Router) -> Vec<Value> {
    let (status, _) = call(r, Method::POST, S, Some(json!({"sessionId": "h", "state": {"k": 0, "keep": 1}}))).await;
    assert_eq!(status, StatusCode::OK);
    for change in
        [json!({"stateDelta": {"k": 1}}), json!({"stateDelta": {"k": 2, "new": true}}), json!({"deleteKeys": ["keep"]})]
    {
        let (status, body) = call(r, Method::PATCH, &format!("{S}/h"), Some(change)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (_, session) = call(r, Method::GET, &format!("{S}/h"), None).await;
    session["events"].as_array().unwrap().clone()
}

#[tokio::test]
async fn state_and_diffs_of_any_event() {
    let r = app(AppState::new(SessionService::in_memory()));
    let events = history(&r).await;
    let id = |i: usize| events[i]["id"].as_str().unwrap().to_owned();
    let (status, at) = call(&r, Method::GET, &format!("{S}/h/state?atEvent={}", id(1)), None).await;
    assert_eq!(status, StatusCode::OK, "{at}");
    assert_eq!((&at["eventId"], &at["state"]), (&json!(id(1)), &json!({"k": 2, "keep": 1, "new": true})));
    let (_, at) = call(&r, Method::GET, &format!("{S}/h/state?beforeEvent={}", id(0)), None).await;
    assert_eq!(at["state"], json!({"k": 0, "keep": 1}));
    let (_, at) = call(&r, Method::GET, &format!("{S}/h/state?atCreation=true"), None).await;
    assert_eq!((&at["eventId"], &at["state"]), (&Value::Null, &json!({"k": 0, "keep": 1})));
    let time = events[2]["timestamp"].as_f64().unwrap();
    let (_, at) = call(&r, Method::GET, &format!("{S}/h/state?atTime={time}"), None).await;
    assert_eq!(at["state"], json!({"k": 2, "new": true}));

    let (status, diff) = call(&r, Method::GET, &format!("{S}/h/events/{}/diff", id(1)), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        diff["changes"],
        json!([{"key": "k", "change": "changed", "before": 1, "after": 2}, {"key": "new", "change": "set", "after": true}])
    );
    let (_, diff) = call(&r, Method::GET, &format!("{S}/h/events/{}/diff", id(2)), None).await;
    assert_eq!(diff["changes"], json!([{"key": "keep", "change": "deleted", "before": 1}]));

    for (path, status) in [
        (format!("{S}/h/state"), StatusCode::BAD_REQUEST),
        (format!("{S}/h/state?atEvent={}&atCreation=true", id(0)), StatusCode::BAD_REQUEST),
        (format!("{S}/h/state?atEvent=nope"), StatusCode::BAD_REQUEST),
        (format!("{S}/h/state?atTime=1"), StatusCode::BAD_REQUEST),
        (format!("{S}/h/state?atTime=soon"), StatusCode::BAD_REQUEST),
        (format!("{S}/missing/state?atCreation=true"), StatusCode::NOT_FOUND),
        (format!("{S}/h/events/nope/diff"), StatusCode::NOT_FOUND),
        (format!("{S}/missing/events/{}/diff", id(0)), StatusCode::NOT_FOUND),
    ] {
        let (got, body) = call(&r, Method::GET, &path, None).await;
        assert_eq!(got, status, "{path}: {body}");
        assert!(body["detail"].is_string(), "{path}: {body}");
    }
}

#[tokio::test]
async fn rewind_and_fork_answer_sessions_and_refuse_bad_input() {
    let r = app(AppState::new(SessionService::in_memory()));
    let events = history(&r).await;
    let invocation = events[1]["invocationId"].as_str().unwrap();
    let (status, rewound) =
        call(&r, Method::POST, &format!("{S}/h/rewind"), Some(json!({"rewindBeforeInvocationId": invocation}))).await;
    assert_eq!(status, StatusCode::OK, "{rewound}");
    assert_eq!(rewound["state"], json!({"k": 1, "keep": 1}));
    let last = rewound["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((&last["author"], &last["actions"]["rewindBeforeInvocationId"]), (&json!("user"), &json!(invocation)));

    // To just after an event (ADK-Rust's rewind): the rewind names the event.
    let at = events[0]["id"].as_str().unwrap();
    let (status, to_event) =
        call(&r, Method::POST, &format!("{S}/h/rewind"), Some(json!({"rewindAfterEventId": at}))).await;
    assert_eq!(status, StatusCode::OK, "{to_event}");
    assert_eq!(to_event["state"], json!({"k": 1, "keep": 1}));
    let last = to_event["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["rewindAfterEventId"], json!(at), "{last}");

    let (status, fork) =
        call(&r, Method::POST, &format!("{S}/h/fork"), Some(json!({"atEventId": at, "sessionId": "f"}))).await;
    assert_eq!(status, StatusCode::OK, "{fork}");
    assert_eq!((&fork["id"], &fork["state"]), (&json!("f"), &json!({"k": 1, "keep": 1})));
    assert_eq!(fork["events"].as_array().unwrap().len(), 1);
    let (status, generated) = call(&r, Method::POST, &format!("{S}/h/fork"), Some(json!({"atEventId": at}))).await;
    assert_eq!((status, generated["id"].as_str().map(str::len)), (StatusCode::OK, Some(36)));

    for (path, body, status) in [
        ("h/rewind", json!({"rewindBeforeInvocationId": "nope"}), StatusCode::BAD_REQUEST),
        ("missing/rewind", json!({"rewindBeforeInvocationId": invocation}), StatusCode::NOT_FOUND),
        ("h/rewind", json!({}), StatusCode::UNPROCESSABLE_ENTITY),
        ("h/rewind", json!({"rewindBeforeInvocationId": 7}), StatusCode::UNPROCESSABLE_ENTITY),
        ("h/rewind", json!({"rewindAfterEventId": "nope"}), StatusCode::BAD_REQUEST),
        (
            "h/rewind",
            json!({"rewindAfterEventId": at, "rewindBeforeInvocationId": invocation}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        ("h/fork", json!({"atEventId": at, "sessionId": "f"}), StatusCode::CONFLICT),
        ("h/fork", json!({"atEventId": "nope"}), StatusCode::BAD_REQUEST),
        ("h/fork", json!({"atEventId": at, "sessionId": "a/b"}), StatusCode::BAD_REQUEST),
        ("missing/fork", json!({"atEventId": at}), StatusCode::NOT_FOUND),
        ("h/fork", json!({}), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let (got, answer) = call(&r, Method::POST, &format!("{S}/{path}"), Some(body.clone())).await;
        assert_eq!(got, status, "{path} {body}: {answer}");
    }
    let (_, error) =
        call(&r, Method::POST, &format!("{S}/h/rewind"), Some(json!({"rewindBeforeInvocationId": "nope"}))).await;
    assert!(error["detail"].as_str().unwrap().contains("Invocation ID not found: nope"), "{error}");
}
