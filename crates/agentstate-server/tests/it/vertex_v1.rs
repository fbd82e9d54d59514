//! The managed-service surface under `/v1/` as under `/v1beta1/`: the version carried into the
//! resource types and operation names, the operation forms each client parses (both answered by
//! GetOperation), empty append answers, newest-first event pages, and Google's refusals.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::vertex_routes::{call, event, google_error, router};

const V1: &str = "/v1/projects/p/locations/l/reasoningEngines/42";
const V1_SHORT: &str = "/v1/reasoningEngines/42";
const BETA: &str = "/v1beta1/projects/p/locations/l/reasoningEngines/42";

#[tokio::test]
async fn v1_answers_its_own_types_and_the_operation_names_its_clients_parse() {
    let r = router();
    let (status, op) = call(&r, "POST", &format!("{V1}/sessions?sessionId=a"), Some(json!({"userId": "u"})), &[]).await;
    assert_eq!(status, StatusCode::OK, "{op}");
    assert_eq!(op["response"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.Session");
    assert_eq!(op["response"]["name"], "projects/p/locations/l/reasoningEngines/42/sessions/a");
    let name = op["name"].as_str().unwrap();
    let id = name.strip_prefix("projects/p/locations/l/operations/").unwrap_or_else(|| panic!("{name}"));
    assert!(id.bytes().all(|b| b.is_ascii_digit()), "{name}");

    let (_, beta) = call(&r, "POST", &format!("{BETA}/sessions?sessionId=b"), Some(json!({"userId": "u"})), &[]).await;
    assert_eq!(beta["response"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1beta1.Session");
    let beta_name = beta["name"].as_str().unwrap();
    assert!(beta_name.starts_with("projects/p/locations/l/reasoningEngines/42/sessions/b/operations/"), "{beta_name}");

    // GetOperation answers both forms, on both versions, named as asked.
    for version in ["v1", "v1beta1"] {
        for name in [name, beta_name] {
            let (status, got) = call(&r, "GET", &format!("/{version}/{name}"), None, &[]).await;
            assert_eq!((status, got["done"].as_bool()), (StatusCode::OK, Some(true)), "{version} {name}: {got}");
            assert_eq!(got["name"], name);
        }
    }
    let (status, session_op) = call(&r, "GET", &format!("/v1/{beta_name}"), None, &[]).await;
    let b = "projects/p/locations/l/reasoningEngines/42/sessions/b";
    assert_eq!((status, &session_op["response"]["name"]), (StatusCode::OK, &json!(b)));

    // The short form on v1 names what it can: the session.
    let (_, short) =
        call(&r, "POST", &format!("{V1_SHORT}/sessions?sessionId=c"), Some(json!({"userId": "u"})), &[]).await;
    assert!(short["name"].as_str().unwrap().starts_with("reasoningEngines/42/sessions/c/operations/"), "{short}");

    // The same sessions on both versions.
    let (status, listed) = call(&r, "GET", &format!("{V1}/sessions"), None, &[]).await;
    assert_eq!((status, listed["sessions"].as_array().map(Vec::len)), (StatusCode::OK, Some(3)), "{listed}");
    let (status, got) = call(&r, "GET", &format!("{BETA}/sessions/a"), None, &[]).await;
    assert_eq!((status, &got["userId"]), (StatusCode::OK, &json!("u")));
}

#[tokio::test]
async fn a_taken_id_is_already_exists_on_v1_and_invalid_on_v1beta1() {
    let r = router();
    let body = Some(json!({"userId": "u"}));
    assert_eq!(call(&r, "POST", &format!("{V1}/sessions?sessionId=s"), body.clone(), &[]).await.0, StatusCode::OK);
    let (status, v1) = call(&r, "POST", &format!("{V1}/sessions?sessionId=s"), body.clone(), &[]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    google_error(&v1, 409, "ALREADY_EXISTS");
    assert_eq!(v1["error"]["message"], "Session with user-provided ID 's' already exists");
    let (status, beta) = call(&r, "POST", &format!("{BETA}/sessions?sessionId=s"), body, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    google_error(&beta, 400, "INVALID_ARGUMENT");
}

#[tokio::test]
async fn appends_answer_empty_and_events_page_newest_first() {
    let r = router();
    call(&r, "POST", &format!("{V1}/sessions?sessionId=h"), Some(json!({"userId": "u"})), &[]).await;
    for i in 0..7 {
        let mut e = event("agent", &json!({"n": i}));
        e["timestamp"] = json!(format!("2030-01-01T00:00:0{i}Z"));
        let (status, answer) = call(&r, "POST", &format!("{V1}/sessions/h:appendEvent"), Some(e), &[]).await;
        assert_eq!((status, answer), (StatusCode::OK, json!({})));
    }
    let ns = |page: &Value| -> Vec<i64> {
        page["sessionEvents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["actions"]["stateDelta"]["n"].as_i64().unwrap())
            .collect()
    };
    // Newest first, three a page, the order kept across pages.
    let mut pages = Vec::new();
    let mut path = format!("{V1}/sessions/h/events?orderBy=timestamp%20desc&pageSize=3");
    loop {
        let (status, page) = call(&r, "GET", &path, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages.push(ns(&page));
        match page["nextPageToken"].as_str() {
            Some(token) => {
                path = format!("{V1}/sessions/h/events?orderBy=timestamp%20desc&pageSize=3&pageToken={token}");
            }
            None => break,
        }
    }
    assert_eq!(pages, [vec![6, 5, 4], vec![3, 2, 1], vec![0]]);
    // The newest N, as ADK-Rust reads them; and within a time range, both ways.
    let (_, newest) =
        call(&r, "GET", &format!("{V1}/sessions/h/events?pageSize=2&orderBy=timestamp+desc"), None, &[]).await;
    assert_eq!(ns(&newest), [6, 5]);
    let range =
        "filter=timestamp%3E%3D%222030-01-01T00%3A00%3A02Z%22%20AND%20timestamp%3C%222030-01-01T00%3A00%3A05Z%22";
    let (_, down) =
        call(&r, "GET", &format!("{V1}/sessions/h/events?{range}&orderBy=timestamp%20desc"), None, &[]).await;
    assert_eq!(ns(&down), [4, 3, 2]);
    let (_, up) = call(&r, "GET", &format!("{BETA}/sessions/h/events?{range}&orderBy=timestamp"), None, &[]).await;
    assert_eq!(ns(&up), [2, 3, 4]);
    assert!(up.get("nextPageToken").is_none() && down.get("nextPageToken").is_none());
}

#[tokio::test]
async fn bad_orders_versions_and_times_are_refused_in_googles_shape() {
    let r = router();
    call(&r, "POST", &format!("{V1}/sessions?sessionId=h"), Some(json!({"userId": "u"})), &[]).await;
    for order in ["author", "timestamp%20sideways", "timestamp%20desc%20asc", "update_time%20desc"] {
        let (status, body) = call(&r, "GET", &format!("{V1}/sessions/h/events?orderBy={order}"), None, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{order}: {body}");
        google_error(&body, 400, "INVALID_ARGUMENT");
    }
    let (status, body) = call(&r, "GET", "/v2/projects/p/locations/l/reasoningEngines/42/sessions/h", None, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    google_error(&body, 404, "NOT_FOUND");
    let mut late = event("agent", &json!({"n": 1}));
    late["timestamp"] = json!("yesterday");
    let (status, body) = call(&r, "POST", &format!("{V1}/sessions/h:appendEvent"), Some(late), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    google_error(&body, 400, "INVALID_ARGUMENT");
    let (_, events) = call(&r, "GET", &format!("{V1}/sessions/h/events"), None, &[]).await;
    assert_eq!(events["sessionEvents"], json!([]), "nothing written");
}
