//! Session lists by filter and order, on the managed-service surface and the ADK routes alike;
//! bad filters refused with where they went wrong, and nothing listed.

use serde_json::{Value, json};

use crate::vertex_routes::{call, google_error, router};

const E: &str = "/v1beta1/reasoningEngines/42";

fn ids_of_names(body: &Value) -> Vec<String> {
    body["sessions"]
        .as_array()
        .map(|sessions| {
            sessions.iter().filter_map(|s| s["name"].as_str()?.rsplit('/').next().map(str::to_owned)).collect()
        })
        .unwrap_or_default()
}

fn ids(sessions: &Value) -> Vec<String> {
    sessions
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// `%`-encodes a query value.
fn q(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn sessions_are_listed_by_filter_and_order_on_both_surfaces() {
    let r = router();
    let made = [
        ("a", "u", json!({"displayName": "Trip", "labels": {"team": "red"}, "sessionState": {"stage": 1}})),
        ("b", "u", json!({"labels": {"team": "blue"}, "sessionState": {"stage": 2}})),
        ("c", "v", json!({"labels": {"team": "red"}, "sessionState": {"stage": 1}})),
        ("d", "u", json!({"labels": {"team": "red"}, "sessionState": {"stage": "1"}})),
    ];
    for (id, user, mut body) in made {
        body["userId"] = json!(user);
        let (status, answer) = call(&r, "POST", &format!("{E}/sessions?sessionId={id}"), Some(body), &[]).await;
        assert!(status.is_success(), "{answer}");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let vertex = |filter: &str, order: &str| {
        let path = format!("{E}/sessions?filter={}&orderBy={}", q(filter), q(order));
        let r = r.clone();
        async move {
            let (status, body) = call(&r, "GET", &path, None, &[]).await;
            assert!(status.is_success(), "{path}: {body}");
            ids_of_names(&body)
        }
    };
    assert_eq!(vertex(r#"labels.team="red""#, "create_time desc").await, ["d", "c", "a"]);
    assert_eq!(vertex(r#"labels.team="red" AND user_id="u""#, "create_time").await, ["a", "d"]);
    assert_eq!(vertex(r#"state.stage=1"#, "createTime asc").await, ["a", "c"], "1 is not \"1\"");
    assert_eq!(vertex(r#"displayName="Trip""#, "").await, ["a"]);
    assert_eq!(
        vertex(r#"create_time>="2000-01-01T00:00:00Z" AND create_time<"2000-01-02T00:00:00Z""#, "").await,
        Vec::<String>::new()
    );

    let adk = |path: String| {
        let r = r.clone();
        async move {
            let (status, body) = call(&r, "GET", &path, None, &[]).await;
            assert!(status.is_success(), "{path}: {body}");
            body
        }
    };
    let array = adk(format!(
        "/apps/42/users/u/sessions?filter={}&orderBy={}",
        q(r#"labels.team="red""#),
        q("create_time desc")
    ))
    .await;
    assert_eq!(ids(&array), ["d", "a"], "the reference's array, filtered and ordered");
    let page = adk(format!("/apps/42/sessions?orderBy={}&pageSize=2&count=true", q("create_time desc"))).await;
    assert_eq!((ids(&page["sessions"]), page["totalSize"].as_u64()), (vec!["d".into(), "c".into()], Some(4)));
    let token = page["nextPageToken"].as_str().unwrap().to_owned();
    let next = adk(format!("/apps/42/sessions?orderBy={}&pageSize=2&pageToken={token}", q("create_time desc"))).await;
    assert_eq!(ids(&next["sessions"]), ["b", "a"]);
    let filtered = adk(format!("/apps/42/sessions?filter={}&pageSize=1&count=true", q(r#"user_id="v""#))).await;
    assert_eq!((ids(&filtered["sessions"]), filtered["totalSize"].as_u64()), (vec!["c".into()], Some(1)));

    // Refusals: where the filter went wrong, Google-style on its surface, `detail` on ADK's.
    let (status, body) =
        call(&r, "GET", &format!("{E}/sessions?filter={}", q(r#"user_id="u" OR user_id="v""#)), None, &[]).await;
    assert_eq!(status, 400);
    google_error(&body, 400, "INVALID_ARGUMENT");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("OR is not supported") && message.contains("character 13"), "{message}");
    let (status, body) = call(&r, "GET", &format!("{E}/sessions?orderBy={}", q("display_name")), None, &[]).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) =
        call(&r, "GET", &format!("/apps/42/users/u/sessions?filter={}", q(r#"display_name<"a""#)), None, &[]).await;
    assert_eq!(status, 400);
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("character 13"), "{body}");
    let (status, body) =
        call(&r, "GET", &format!("/apps/42/users/u/sessions?filter={}", q(r#"user_id="v""#)), None, &[]).await;
    assert_eq!(status, 400, "a filter naming another user on a user's route: {body}");
    let (status, _) =
        call(&r, "GET", &format!("/apps/42/sessions?orderBy={}&pageToken={token}", q("update_time desc")), None, &[])
            .await;
    assert_eq!(status, 400, "a token of another order");
}

#[tokio::test]
async fn sessions_are_patched_by_update_mask() {
    let r = router();
    let body = json!({"userId": "u", "displayName": "Draft", "labels": {"team": "red"}, "sessionState": {"k": 1}});
    assert!(call(&r, "POST", &format!("{E}/sessions?sessionId=p"), Some(body), &[]).await.0.is_success());
    let before = call(&r, "GET", &format!("{E}/sessions/p"), None, &[]).await.1;

    // The mask names what changes; the rest of the body is ignored for it.
    let patch = json!({"displayName": "Trip to Oslo", "labels": {"team": "blue", "tier": "gold"}});
    let (status, patched) =
        call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=display_name"), Some(patch.clone()), &[]).await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!((patched["displayName"].as_str(), &patched["labels"]), (Some("Trip to Oslo"), &json!({"team": "red"})));
    assert_eq!(patched["updateTime"], before["updateTime"], "not an update of the session's history");
    assert_eq!(patched["sessionState"], json!({"k": 1}));
    let (status, patched) = call(&r, "PATCH", &format!("{E}/sessions/p"), Some(patch), &[]).await;
    assert_eq!(status, 200, "without a mask, what the body has");
    assert_eq!(patched["labels"], json!({"team": "blue", "tier": "gold"}));
    let (_, patched) =
        call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=ttl"), Some(json!({"ttl": "3600s"})), &[]).await;
    assert!(patched["expireTime"].as_str().is_some_and(|t| t.starts_with('2')), "{patched}");
    let listed = call(&r, "GET", &format!("{E}/sessions?filter={}", "labels.tier%3D%22gold%22"), None, &[]).await.1;
    assert_eq!(ids_of_names(&listed), ["p"], "lists filter on what was patched");
    // A masked field the body lacks is cleared.
    let (_, cleared) =
        call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=labels,displayName,expireTime"), Some(json!({})), &[])
            .await;
    assert!(cleared.get("labels").is_none_or(|l| l.as_object().is_some_and(|l| l.is_empty())), "{cleared}");
    assert!(cleared.get("displayName").is_none() && cleared.get("expireTime").is_none(), "{cleared}");

    // A new state travels on one event: named keys set, the session's own keys not named deleted,
    // `user:` keys not named kept.
    let body = json!({"sessionState": {"k": 2, "user:x": 1}});
    let (status, patched) =
        call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=sessionState"), Some(body), &[]).await;
    assert_eq!((status.as_u16(), &patched["sessionState"]), (200, &json!({"k": 2, "user:x": 1})), "{patched}");
    assert_ne!(patched["updateTime"], before["updateTime"], "a state change is in the history");
    let body = json!({"sessionState": {"j": 3}});
    let (_, patched) = call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=session_state"), Some(body), &[]).await;
    assert_eq!(patched["sessionState"], json!({"j": 3, "user:x": 1}));
    let events = call(&r, "GET", &format!("{E}/sessions/p/events"), None, &[]).await.1;
    assert_eq!(events["sessionEvents"].as_array().unwrap().len(), 2, "{events}");
    let body = json!({"sessionState": {"j": 3}});
    call(&r, "PATCH", &format!("{E}/sessions/p?updateMask=session_state"), Some(body), &[]).await;
    let events = call(&r, "GET", &format!("{E}/sessions/p/events"), None, &[]).await.1;
    assert_eq!(events["sessionEvents"].as_array().unwrap().len(), 2, "the same state again writes nothing");

    for (mask, body, status) in [
        ("sessionState", json!({"sessionState": [1]}), "INVALID_ARGUMENT"),
        ("colour", json!({}), "INVALID_ARGUMENT"),
        ("ttl,expireTime", json!({"ttl": "60s", "expireTime": "2100-01-01T00:00:00Z"}), "INVALID_ARGUMENT"),
        ("display_name", json!({"displayName": "x".repeat(300)}), "INVALID_ARGUMENT"),
    ] {
        let (code, answer) = call(&r, "PATCH", &format!("{E}/sessions/p?updateMask={mask}"), Some(body), &[]).await;
        assert_eq!(code, 400, "{mask}: {answer}");
        google_error(&answer, 400, status);
    }
    let (code, answer) = call(&r, "PATCH", &format!("{E}/sessions/nope"), Some(json!({"displayName": "x"})), &[]).await;
    assert_eq!(code, 404, "{answer}");
    assert_eq!(
        call(&r, "GET", &format!("{E}/sessions/p"), None, &[]).await.1["sessionState"],
        json!({"j": 3, "user:x": 1})
    );
}
