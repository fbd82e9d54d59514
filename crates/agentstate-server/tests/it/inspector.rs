//! The session inspector (`/ui`) through the router: navigation, the timeline, the state as of
//! an event with its changes, live rows, escaping, the actions and their form secret, and sign-in
//! with tokens. (The browser tests drive the same pages in Chromium.)

use agentstate::SessionService;

use agentstate_server::{AppState, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

async fn send(
    r: &Router,
    method: Method,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String, Option<String>) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = r.clone().oneshot(request.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
    let status = response.status();
    let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let cookie = response.headers().get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned(), location.or(cookie))
}

const JSON: (&str, &str) = ("content-type", "application/json");
const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

fn secret(page: &str) -> String {
    let at = page.find("name=\"csrf\" content=\"").unwrap() + "name=\"csrf\" content=\"".len();
    page[at..at + 32].to_owned()
}

#[tokio::test]
async fn the_inspector_shows_sessions_their_timeline_and_state_and_escapes_everything() {
    let r = app(AppState::new(SessionService::in_memory()));
    let (status, _, location) = send(&r, Method::GET, "/", "", &[]).await;
    assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some("/ui")));

    let hostile = "<script>alert('x')</script>";
    let create = format!(r#"{{"sessionId": "s1", "state": {{"note": "{hostile}", "user:name": "Ann"}}}}"#);
    assert_eq!(send(&r, Method::POST, "/apps/shop/users/ann/sessions", &create, &[JSON]).await.0, StatusCode::OK);
    for k in 1..=3 {
        let body = format!(r#"{{"stateDelta": {{"step": {k}, "app:hits": {k}}}}}"#);
        assert_eq!(send(&r, Method::PATCH, "/apps/shop/users/ann/sessions/s1", &body, &[JSON]).await.0, StatusCode::OK);
    }
    let base = "/ui/apps/shop/users/ann/sessions/s1";

    let (_, apps, _) = send(&r, Method::GET, "/ui", "", &[]).await;
    assert!(apps.contains("href=\"/ui/apps/shop\""), "{apps}");
    let (_, users, _) = send(&r, Method::GET, "/ui/apps/shop", "", &[]).await;
    assert!(users.contains("href=\"/ui/apps/shop/users/ann\""), "{users}");
    let (_, sessions, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann", "", &[]).await;
    assert!(sessions.contains(base) && sessions.contains("<td class=\"num\">3</td>"), "{sessions}");
    assert!(!sessions.contains(hostile) && sessions.contains("&lt;script&gt;"), "the preview is escaped");
    let (_, found, _) = send(&r, Method::GET, "/ui/apps/shop?session=s1", "", &[]).await;
    assert!(found.contains(base), "{found}");

    let (status, page, _) = send(&r, Method::GET, base, "", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page.matches("<li class=\"event").count(), 3);
    assert!(page.contains("3 events"));
    assert!(!page.contains(hostile) && page.contains("&lt;script&gt;alert"), "state values render as text");
    assert!(page.contains("class=\"key changed\"") && page.contains("app:hits"), "the last event's changes are marked");
    assert!(page.contains("<span class=\"shared\""), "user: and app: keys are marked as shared");
    assert!(
        page.contains("/ui/assets/inspector.js") && !page.contains("http://") && !page.contains("https://"),
        "nothing from elsewhere"
    );

    // The state as of the first event, with what it set.
    let first = page.split("data-id=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let (_, panel, _) = send(&r, Method::GET, &format!("{base}/state?at={first}"), "", &[]).await;
    assert!(panel.contains("class=\"key set\"") && panel.contains("step"), "{panel}");
    assert!(panel.contains("<pre>1</pre>"), "{panel}");

    // Live: what was appended after the last shown event comes as rows.
    let cursor = page.split("data-after=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let body = format!(r#"{{"stateDelta": {{"step": 4, "msg": "{hostile}"}}}}"#);
    send(&r, Method::PATCH, "/apps/shop/users/ann/sessions/s1", &body, &[JSON]).await;
    let (_, live, _) = send(&r, Method::GET, &format!("{base}/live?after={cursor}"), "", &[]).await;
    let live: Value = serde_json::from_str(&live).unwrap();
    assert_eq!(live["count"], 4);
    assert_eq!(live["html"].as_str().unwrap().matches("<li class=\"event").count(), 1, "{live}");
    let (_, none, _) =
        send(&r, Method::GET, &format!("{base}/live?after={}", live["after"].as_str().unwrap()), "", &[]).await;
    assert_eq!(serde_json::from_str::<Value>(&none).unwrap()["html"], "", "nothing new");

    // Actions need the page's secret; then they happen.
    let (status, _, _) =
        send(&r, Method::POST, &format!("{base}/fork"), &format!("csrf=wrong&at={first}"), &[FORM]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let csrf = secret(&page);
    let (status, _, fork) =
        send(&r, Method::POST, &format!("{base}/fork"), &format!("csrf={csrf}&at={first}"), &[FORM]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, forked, _) = send(&r, Method::GET, &fork.unwrap(), "", &[]).await;
    assert_eq!(forked.matches("<li class=\"event").count(), 1, "the fork has the history up to the event");
    let (status, _, _) = send(&r, Method::POST, &format!("{base}/delete"), "csrf=wrong", &[FORM]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = send(&r, Method::POST, &format!("{base}/delete"), &format!("csrf={csrf}"), &[FORM]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(send(&r, Method::GET, base, "", &[]).await.0, StatusCode::NOT_FOUND);
    let (_, css, _) = send(&r, Method::GET, "/ui/assets/inspector.css", "", &[]).await;
    assert!(css.contains("prefers-color-scheme: dark"));
}

#[tokio::test]
async fn a_users_sessions_are_listed_newest_first_a_page_at_a_time() {
    let r = app(AppState::new(SessionService::in_memory()));
    for i in 0..55 {
        let create = format!(r#"{{"sessionId": "s{i:02}"}}"#);
        assert_eq!(send(&r, Method::POST, "/apps/shop/users/ann/sessions", &create, &[JSON]).await.0, StatusCode::OK);
    }
    let ids = |page: &str| -> Vec<String> {
        page.split("/ui/apps/shop/users/ann/sessions/").skip(1).map(|rest| rest[..3].to_owned()).collect()
    };
    let (_, first, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann", "", &[]).await;
    let shown = ids(&first);
    assert_eq!(shown.len(), 50);
    assert_eq!((shown[0].as_str(), shown[49].as_str()), ("s54", "s05"), "newest first");
    assert!(first.contains("page 1 of 2"), "{first}");
    let (_, second, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann?page=2", "", &[]).await;
    assert_eq!(ids(&second), ["s04", "s03", "s02", "s01", "s00"]);
    assert!(second.contains("page 2 of 2"));
    let (_, beyond, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann?page=9", "", &[]).await;
    assert!(ids(&beyond).is_empty(), "past the last page: no session");

    // Filtered, in Agent Engine's syntax, names and labels shown; pages keep the filter.
    let labelled = r#"{"userId": "ann", "displayName": "Trip", "labels": {"team": "red"}}"#;
    let made = send(&r, Method::POST, "/v1/reasoningEngines/shop/sessions?sessionId=s99", labelled, &[JSON]).await;
    assert_eq!(made.0, StatusCode::OK, "{}", made.1);
    let (status, red, _) =
        send(&r, Method::GET, "/ui/apps/shop/users/ann?filter=labels.team%3D%22red%22", "", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&red), ["s99"]);
    assert!(red.contains("Trip") && red.contains("team=red"), "{red}");
    let (_, older, _) =
        send(&r, Method::GET, "/ui/apps/shop/users/ann?filter=create_time%3C%222000-01-01T00%3A00%3A00Z%22", "", &[])
            .await;
    assert!(ids(&older).is_empty() && older.contains("No sessions."));
    let (status, refused, _) =
        send(&r, Method::GET, "/ui/apps/shop/users/ann?filter=colour%3D%22red%22", "", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(refused.contains("character 1"), "{refused}");
}

#[tokio::test]
async fn with_tokens_the_inspector_asks_for_one_and_shows_only_what_it_may_read() {
    let r = crate::support::with_tokens(
        r#"{"tokens": [{"token": "admin-token-0123456789", "apps": "*"},
                       {"token": "narrow-token-0123456789", "apps": ["shop"], "users": ["ann"]}]}"#,
    );
    let admin = ("authorization", "Bearer admin-token-0123456789");
    for path in ["/apps/shop/users/ann/sessions", "/apps/shop/users/bob/sessions", "/apps/other/users/ann/sessions"] {
        assert_eq!(send(&r, Method::POST, path, "{}", &[JSON, admin]).await.0, StatusCode::OK);
    }
    let (status, _, location) = send(&r, Method::GET, "/ui/apps/shop", "", &[]).await;
    assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some("/ui/login?next=%2Fui%2Fapps%2Fshop")));
    let (_, form, _) = send(&r, Method::GET, "/ui/login", "", &[]).await;
    assert!(form.contains("type=\"password\""));
    let (_, _, refused) = send(&r, Method::POST, "/ui/login", "token=wrong-token-0123456789", &[FORM]).await;
    assert_eq!(refused.as_deref(), Some("/ui/login?failed=1"), "a wrong token is refused");
    let request = Request::post("/ui/login").header(FORM.0, FORM.1);
    let response =
        r.clone().oneshot(request.body(Body::from("token=narrow-token-0123456789&next=%2Fui")).unwrap()).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let jar = cookie.split(';').next().unwrap().to_owned();
    let with = ("cookie", jar.as_str());
    let (_, apps, _) = send(&r, Method::GET, "/ui", "", &[with]).await;
    assert!(apps.contains("/ui/apps/shop") && !apps.contains("/ui/apps/other"), "only its app: {apps}");
    let (_, users, _) = send(&r, Method::GET, "/ui/apps/shop", "", &[with]).await;
    assert!(users.contains("/users/ann") && !users.contains("/users/bob"), "only its user: {users}");
    assert_eq!(send(&r, Method::GET, "/ui/apps/other", "", &[with]).await.0, StatusCode::FORBIDDEN);
    assert_eq!(send(&r, Method::GET, "/ui/apps/shop/users/bob", "", &[with]).await.0, StatusCode::FORBIDDEN);
    let (_, _, next) =
        send(&r, Method::POST, "/ui/login", "token=narrow-token-0123456789&next=https://evil.example", &[FORM]).await;
    assert_eq!(next.as_deref(), Some("/ui"), "never a redirect elsewhere");
}

#[tokio::test]
async fn rewinds_are_badged_in_the_timeline() {
    let r = app(AppState::new(SessionService::in_memory()));
    let create = r#"{"sessionId": "r"}"#;
    assert_eq!(send(&r, Method::POST, "/apps/shop/users/ann/sessions", create, &[JSON]).await.0, StatusCode::OK);
    for (id, invocation) in [("first-event", "inv-a"), ("second-event", "inv-b")] {
        let body = format!(r#"{{"event": {{"id": "{id}", "author": "agent", "invocationId": "{invocation}"}}}}"#);
        let (status, answer, _) =
            send(&r, Method::POST, "/apps/shop/users/ann/sessions/r/events", &body, &[JSON]).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let path = "/apps/shop/users/ann/sessions/r/rewind";
    let (status, answer, _) = send(&r, Method::POST, path, r#"{"rewindAfterEventId": "first-event"}"#, &[JSON]).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (_, page, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/sessions/r", "", &[]).await;
    assert!(page.contains("rewind to first-event"), "{page}");
    assert!(!page.contains("rewind before inv-b"), "one badge per rewind, the event it goes back to");
}

/// A user's memories: linked from their sessions, listed a page at a time, searched, escaped.
#[tokio::test]
async fn the_inspector_shows_and_searches_a_users_memories() {
    let r = app(AppState::new(SessionService::in_memory()));
    let hostile = "<script>alert('m')</script> teal";
    let memories: Vec<String> = (0..60)
        .map(|i| format!(r#"{{"id": "m{i:02}", "content": {{"parts": [{{"text": "note {i} about cats"}}]}}}}"#))
        .chain([format!(r#"{{"id": "h", "content": {{"parts": [{{"text": "{hostile}"}}]}}, "author": "user"}}"#)])
        .collect();
    let body = format!(r#"{{"memories": [{}]}}"#, memories.join(","));
    assert_eq!(send(&r, Method::POST, "/apps/shop/users/ann/memories", &body, &[JSON]).await.0, StatusCode::OK);
    assert_eq!(send(&r, Method::POST, "/apps/shop/users/ann/sessions", "", &[JSON]).await.0, StatusCode::OK);

    let (_, sessions, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann", "", &[]).await;
    assert!(sessions.contains("href=\"/ui/apps/shop/users/ann/memories\""), "{sessions}");
    let (status, first, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/memories", "", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(first.contains("note 0 about cats") && !first.contains("note 55 about cats"), "one page of 50");
    let at = first.find("?after=").unwrap() + "?after=".len();
    let token: String = first[at..].chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    let (_, second, _) =
        send(&r, Method::GET, &format!("/ui/apps/shop/users/ann/memories?after={token}"), "", &[]).await;
    assert!(second.contains("note 55 about cats") && !second.contains("note 0 about cats"));
    assert!(second.contains("&lt;script&gt;") && !second.contains(hostile), "escaped");

    let (_, found, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/memories?q=teal", "", &[]).await;
    assert!(found.contains("1 found") && found.contains("&lt;script&gt;alert"), "{found}");
    let (status, _, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/memories?after=zz", "", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// A Memory Bank memory of a user's scope is listed with its revisions, newest first.
#[tokio::test]
async fn the_inspector_shows_a_memorys_revisions() {
    let r = app(AppState::new(SessionService::in_memory()));
    let create = r#"{"fact": "likes <b>green</b> tea", "scope": {"app_name": "shop", "user_id": "ann"},
                     "revisionLabels": {"author": "user"}}"#;
    let path = "/v1beta1/reasoningEngines/shop/memories?memoryId=tea";
    assert_eq!(send(&r, Method::POST, path, create, &[JSON]).await.0, StatusCode::OK);
    let patch = r#"{"fact": "likes oolong tea"}"#;
    let path = "/v1beta1/reasoningEngines/shop/memories/tea?updateMask=fact";
    assert_eq!(send(&r, Method::PATCH, path, patch, &[JSON]).await.0, StatusCode::OK);
    let (status, page, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/memories", "", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("2 revisions"), "{page}");
    let (newest, oldest) = (page.find("likes oolong tea</span>").unwrap(), page.find("&lt;b&gt;green").unwrap());
    assert!(newest < oldest, "newest first: {page}");
    assert!(page.contains("author=user") && !page.contains("<b>green"), "labels shown, facts escaped: {page}");
}

#[tokio::test]
async fn a_sessions_artifacts_are_listed_with_their_versions_and_shown_inline() {
    let r = app(AppState::new(SessionService::in_memory()));
    assert_eq!(
        send(&r, Method::POST, "/apps/shop/users/ann/sessions", r#"{"sessionId": "s1"}"#, &[JSON]).await.0,
        StatusCode::OK
    );
    let a = "/apps/shop/users/ann/sessions/s1/artifacts";
    for body in [
        r#"{"filename": "<b>notes</b>.txt", "artifact": {"text": "<script>alert(1)</script> first"}}"#,
        r#"{"filename": "<b>notes</b>.txt", "artifact": {"text": "second"}}"#,
        r#"{"filename": "pic.png", "artifact": {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo_-A=="}}}"#,
        r#"{"filename": "user:card", "artifact": {"text": "shared"}}"#,
    ] {
        assert_eq!(send(&r, Method::POST, a, body, &[JSON]).await.0, StatusCode::OK, "{body}");
    }
    let (status, page, _) = send(&r, Method::GET, "/ui/apps/shop/users/ann/sessions/s1", "", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<h2>Artifacts</h2>"), "{page}");
    assert!(page.contains("&lt;b&gt;notes&lt;/b&gt;.txt") && !page.contains("<b>notes</b>"), "names are escaped");
    assert!(page.contains("2 versions") && page.contains("v0 · text/plain · 31 bytes"), "{page}");
    assert!(page.contains("second") && !page.contains("<script>alert(1)"), "the latest text, escaped");
    assert!(page.contains("src=\"data:image/png;base64,iVBORw0KGgo/+A==\""), "the image inline: {page}");
    assert!(page.contains("user:card"), "the user's artifacts too");
    // A session without artifacts shows no panel.
    assert_eq!(
        send(&r, Method::POST, "/apps/shop/users/bob/sessions", r#"{"sessionId": "s2"}"#, &[JSON]).await.0,
        StatusCode::OK
    );
    let (_, page, _) = send(&r, Method::GET, "/ui/apps/shop/users/bob/sessions/s2", "", &[]).await;
    assert!(!page.contains("Artifacts"));
}
