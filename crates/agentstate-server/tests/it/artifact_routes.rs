//! `adk api_server`'s artifact routes, the same requests against it (google-adk 2.13.0, in-memory
//! artifacts) and against `agentstate serve` (SQLite, and SQLite with payloads in files): the answers must be equal but for the
//! version's create time and its canonical URI's scheme (each service names its own storage).
//! Then what the reference does not show: names with `..`, the body limit, tokens.

use serde_json::{Value, json};

use crate::binary::{Running, serve};
use crate::differential::{call, rewrite, start_reference};

/// What differs by design: the clock, and where the canonical URI points.
fn normalize((status, value): (u16, Value)) -> (u16, Value) {
    let value = rewrite(value, &|k, v| match (k, v) {
        ("createTime", Value::Number(_)) => Some(Some(json!("<time>"))),
        ("canonicalUri", Value::String(uri)) => Some(Some(Value::String(
            uri.split_once("://").map_or(uri.clone(), |(_, rest)| format!("<scheme>://{rest}")),
        ))),
        _ => None,
    });
    (status, value)
}

enum Expect {
    Same,
    SameStatusAndKind,
    Differs(u16, u16, &'static str),
}

#[test]
fn artifact_routes_match_adk_api_server() {
    let (_reference, theirs) = start_reference();
    // Twice: payloads in the database, and every payload a file under --artifacts-dir.
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    let dir = dir.to_string_lossy().into_owned();
    let (child, in_db) = serve("sqlite::memory:");
    let _in_db = Running(child);
    let files = ["--db", "sqlite::memory:", "--addr", "127.0.0.1:0", "--artifacts-dir", &dir];
    let (child, in_files) = crate::binary::serve_with(&[&files[..], &["--artifacts-inline-below", "0"]].concat());
    let _in_files = Running(child);
    for (ours, user) in [(in_db, "u1"), (in_files, "u3")] {
        compare_artifact_routes(&theirs, &ours, user);
    }
    assert!(std::fs::read_dir(&dir).unwrap().next().is_some(), "payloads went to {dir}");
}

/// The differential's requests, sent to `theirs` and to `ours` as `user` (the reference keeps
/// what an earlier run saved: each run is another user's; `u2` is the other user of the
/// requests).
fn compare_artifact_routes(theirs: &str, ours: &str, user: &str) {
    let to_user = |text: &str| text.replace("/users/u1/", &format!("/users/{user}/"));
    let call = |addr: &str, method: &str, path: &str, body: &str| call(addr, method, &to_user(path), &to_user(body));
    let a = "/apps/trivial/users/u1/sessions/s1/artifacts";
    let other = "/apps/trivial/users/u1/sessions/s2/artifacts";
    // Over 64 KiB of body: its base64 is decoded where it lies, and the answer streamed.
    let big: Vec<u8> = (0..96 << 10).map(|i: u32| (i * 37 % 256) as u8).collect();
    let big = json!({"filename": "big.bin", "artifact": {"inlineData": {"mimeType": "application/x-big",
        "data": agentstate::artifact::model::encode_base64(&big)}}, "customMetadata": {"n": 1}});
    let steps: Vec<(&str, String, String, Expect)> = vec![
        ("POST", a.into(), r#"{"filename": "notes.txt", "artifact": {"text": "hello"}}"#.into(), Expect::Same),
        (
            "POST",
            a.into(),
            r#"{"filename": "img.png", "artifact": {"inlineData": {"mimeType": "image/png", "data": "AAECA_-_"}}, "customMetadata": {"k": "v"}}"#.into(),
            Expect::Same,
        ),
        ("POST", a.into(), big.to_string(), Expect::Same),
        ("GET", format!("{a}/big.bin"), String::new(), Expect::Same),
        ("GET", format!("{a}/big.bin/versions/latest"), String::new(), Expect::Same),
        ("GET", format!("{a}/big.bin/versions/metadata"), String::new(), Expect::Same),
        ("POST", a.into(), r#"{"filename": "notes.txt", "artifact": {"text": "v2"}}"#.into(), Expect::Same),
        ("POST", a.into(), r#"{"filename": "user:profile", "artifact": {"text": "{}"}}"#.into(), Expect::Same),
        ("POST", a.into(), r#"{"filename": "dir/a.txt", "artifact": {"text": "nested"}}"#.into(), Expect::Same),
        (
            "POST",
            a.into(),
            r#"{"filename": "video", "artifact": {"fileData": {"fileUri": "gs://b/v.mp4", "mimeType": "video/mp4"}}}"#.into(),
            Expect::Same,
        ),
        (
            "POST",
            a.into(),
            r#"{"filename": "link", "artifact": {"fileData": {"fileUri": "artifact://apps/trivial/users/u1/sessions/s1/artifacts/notes.txt/versions/0"}}}"#.into(),
            Expect::Same,
        ),
        ("GET", a.into(), String::new(), Expect::Same),
        ("GET", other.into(), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt?version=0"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt?version=9"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt?version=x"), String::new(), Expect::SameStatusAndKind),
        ("GET", format!("{a}/img.png"), String::new(), Expect::Same),
        ("GET", format!("{a}/link"), String::new(), Expect::Same),
        ("GET", format!("{a}/video"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/0"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/latest"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/5"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/x"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/img.png/versions/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/link/versions/0/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/latest/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/7/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions/x/metadata"), String::new(), Expect::Same),
        ("GET", format!("{a}/dir/a.txt"), String::new(), Expect::Same),
        ("GET", format!("{a}/dir/a.txt/versions"), String::new(), Expect::Same),
        ("GET", format!("{other}/user:profile"), String::new(), Expect::Same),
        ("GET", format!("{a}/missing"), String::new(), Expect::Same),
        ("GET", format!("{a}/missing/versions"), String::new(), Expect::Same),
        ("GET", format!("{a}/missing/versions/metadata"), String::new(), Expect::Same),
        ("POST", a.into(), r#"{"filename": "empty", "artifact": {}}"#.into(), Expect::Same),
        ("POST", a.into(), r#"{"artifact": {"text": "x"}}"#.into(), Expect::SameStatusAndKind),
        ("POST", a.into(), r#"{"filename": "x"}"#.into(), Expect::SameStatusAndKind),
        ("POST", a.into(), "{not json".into(), Expect::SameStatusAndKind),
        (
            "POST",
            "/apps/trivial/users/u1/sessions/user/artifacts".into(),
            r#"{"filename": "x", "artifact": {"text": "x"}}"#.into(),
            Expect::Same,
        ),
        (
            "POST",
            a.into(),
            r#"{"filename": "bad-link", "artifact": {"fileData": {"fileUri": "artifact://apps/trivial/users/u2/artifacts/user:x/versions/0"}}}"#.into(),
            Expect::Same,
        ),
        (
            "POST",
            a.into(),
            r#"{"filename": "bad-link", "artifact": {"fileData": {"fileUri": "artifact://apps/trivial/users/u1/sessions/s2/artifacts/x/versions/0"}}}"#.into(),
            Expect::Same,
        ),
        ("GET", format!("{a}/bad-link/versions"), String::new(), Expect::Same),
        ("DELETE", format!("{a}/notes.txt"), String::new(), Expect::Same),
        ("DELETE", format!("{a}/notes.txt"), String::new(), Expect::Same),
        ("GET", format!("{a}/notes.txt/versions"), String::new(), Expect::Same),
        ("GET", format!("{a}/link"), String::new(), Expect::Same),
        ("POST", a.into(), r#"{"filename": "notes.txt", "artifact": {"text": "again"}}"#.into(), Expect::Same),
        ("DELETE", format!("{a}/dir/a.txt"), String::new(), Expect::Same),
        ("GET", a.into(), String::new(), Expect::Same),
        (
            "POST",
            a.into(),
            r#"{"filename": "../escape", "artifact": {"text": "x"}}"#.into(),
            Expect::Differs(200, 400, "names with a .. segment are refused (ADK's file store refuses them; its in-memory one does not)"),
        ),
    ];
    for (i, (method, path, body, expect)) in steps.iter().enumerate() {
        let reference = normalize(call(theirs, method, path, body));
        let mine = normalize(call(ours, method, path, body));
        let step = format!("step {i}: {method} {path} {body}");
        match expect {
            Expect::Same => assert_eq!(mine, reference, "{step}"),
            Expect::SameStatusAndKind => {
                assert_eq!(mine.0, reference.0, "{step}: {mine:?} vs {reference:?}");
                assert_eq!(mine.1["detail"][0]["type"], reference.1["detail"][0]["type"], "{step}");
            }
            Expect::Differs(their_status, our_status, why) => {
                assert_eq!((reference.0, mine.0), (*their_status, *our_status), "{step}: {why}: {mine:?}");
            }
        }
    }
    // What both answered, spelled out.
    assert_eq!(
        call(ours, "GET", &format!("{a}/img.png"), ""),
        (200, json!({"inlineData": {"mimeType": "image/png", "data": "AAECA_-_"}}))
    );
    // The link points at notes.txt version 0, which is "again" since the delete.
    assert_eq!(call(ours, "GET", &format!("{a}/link"), ""), (200, json!({"text": "again"})));
    assert_eq!(
        call(ours, "GET", a, ""),
        (200, json!(["big.bin", "img.png", "link", "notes.txt", "user:profile", "video"]))
    );
    let (status, versions) = normalize(call(ours, "GET", &format!("{a}/img.png/versions/metadata"), ""));
    assert_eq!(status, 200);
    assert_eq!(
        versions,
        json!([{"version": 0, "canonicalUri": "<scheme>://apps/trivial/users/u1/sessions/s1/artifacts/img.png/versions/0",
                "customMetadata": {"k": "v"}, "createTime": "<time>", "mimeType": "image/png"}])
            .to_string()
            .replace("/users/u1/", &format!("/users/{user}/"))
            .parse::<Value>()
            .unwrap()
    );
}

mod router {
    use agentstate::SessionService;
    use agentstate_server::{AppState, Limits, app};
    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use crate::support::{call, call_as, router, with_tokens};

    const A: &str = "/apps/myapp/users/u1/sessions/s1/artifacts";

    fn save_body(name: &str, bytes: &[u8]) -> String {
        let data = agentstate::artifact::model::encode_base64(bytes);
        json!({"filename": name, "artifact": {"inlineData": {"mimeType": "application/octet-stream", "data": data}}})
            .to_string()
    }

    #[tokio::test]
    async fn artifacts_of_a_few_mib_work_by_default_and_past_the_limit_are_413() {
        let r = router();
        // 3 MiB of bytes: about 4 MiB of base64, over the 1 MiB limit of other bodies.
        let bytes: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        let (status, saved) = call(&r, Method::POST, A, Some(&save_body("big.bin", &bytes))).await;
        assert_eq!((status, saved["version"].clone()), (StatusCode::OK, json!(0)), "{saved}");
        let (status, loaded) = call(&r, Method::GET, &format!("{A}/big.bin"), None).await;
        assert_eq!(status, StatusCode::OK);
        let data = loaded["inlineData"]["data"].as_str().unwrap();
        assert_eq!(agentstate::artifact::model::decode_base64(data).unwrap(), bytes, "every byte back");
        // Other routes keep their own limit.
        let big_patch = json!({"stateDelta": {"k": "x".repeat(2 << 20)}}).to_string();
        assert_eq!(
            call(&r, Method::PATCH, "/apps/myapp/users/u1/sessions/s1", Some(&big_patch)).await.0,
            StatusCode::PAYLOAD_TOO_LARGE
        );

        let small = app(AppState::new(SessionService::in_memory())
            .with_limits(Limits { max_artifact_bytes: 1000, ..Limits::default() }));
        let (status, body) = call(&small, Method::POST, A, Some(&save_body("x", &[1; 1001]))).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(
            body["detail"].as_str().unwrap().contains("over the limit of 1000 bytes (--max-artifact-bytes)"),
            "{body}"
        );
        let (status, body) = call(&small, Method::POST, A, Some(&save_body("x", &[1; 100_000]))).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(body["detail"].as_str().unwrap().contains("--max-artifact-bytes"), "{body}");
        assert_eq!(call(&small, Method::GET, A, None).await, (StatusCode::OK, json!([])), "nothing written");
        assert_eq!(call(&small, Method::POST, A, Some(&save_body("x", &[1; 900]))).await.0, StatusCode::OK);
    }

    /// A request with a raw body; the answer's status, content type and bytes.
    async fn raw(
        r: &axum::Router,
        method: Method,
        path: &str,
        mime: Option<&str>,
        body: Vec<u8>,
    ) -> (u16, String, Vec<u8>) {
        use tower::ServiceExt as _;
        let mut request = axum::http::Request::builder().method(method).uri(path);
        if let Some(mime) = mime {
            request = request.header("content-type", mime);
        }
        let response = r.clone().oneshot(request.body(axum::body::Body::from(body)).unwrap()).await.unwrap();
        let status = response.status().as_u16();
        let mime = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let length = response.headers().get("content-length").map(|v| v.to_str().unwrap().parse::<usize>().unwrap());
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec();
        assert_eq!(length.unwrap_or(bytes.len()), bytes.len(), "Content-Length is what the body holds");
        (status, mime, bytes)
    }

    #[tokio::test]
    async fn raw_uploads_and_media_downloads_carry_bytes_as_they_are() {
        let r = router();
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 256) as u8).collect();
        let path = format!("{A}/photos/cat.png?metadata=%7B%22k%22%3A1%7D");
        let (status, _, answer) = raw(&r, Method::POST, &path, Some("image/png"), bytes.clone()).await;
        let saved: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(status, 200, "{saved}");
        assert_eq!((saved["version"].clone(), saved["mimeType"].clone()), (json!(0), json!("image/png")));
        assert_eq!(saved["customMetadata"], json!({"k": 1}));
        // The bytes back as they are, or as the part ADK's routes answer.
        let media = raw(&r, Method::GET, &format!("{A}/photos/cat.png?alt=media"), None, Vec::new()).await;
        assert_eq!(media, (200, "image/png".to_owned(), bytes.clone()));
        let (status, part) = call(&r, Method::GET, &format!("{A}/photos/cat.png/versions/0"), None).await;
        assert_eq!((status, part["inlineData"]["mimeType"].clone()), (StatusCode::OK, json!("image/png")));
        assert_eq!(
            agentstate::artifact::model::decode_base64(part["inlineData"]["data"].as_str().unwrap()).unwrap(),
            bytes
        );
        // Without a type, octet-stream; a user: name through the user's own route.
        let (status, ..) = raw(&r, Method::POST, "/apps/myapp/users/u1/artifacts/user:blob", None, vec![1, 2]).await;
        assert_eq!(status, 200);
        let got = raw(&r, Method::GET, &format!("{A}/user:blob?alt=media"), None, Vec::new()).await;
        assert_eq!(got, (200, "application/octet-stream".to_owned(), vec![1, 2]));
        // Text answers as text; a file reference has no bytes; alt is json or media.
        call(&r, Method::POST, A, Some(r#"{"filename": "t", "artifact": {"text": "héllo"}}"#)).await;
        let text = raw(&r, Method::GET, &format!("{A}/t?alt=media"), None, Vec::new()).await;
        assert_eq!(text, (200, "text/plain; charset=utf-8".to_owned(), "héllo".as_bytes().to_vec()));
        let link = r#"{"filename": "v", "artifact": {"fileData": {"fileUri": "gs://b/v", "mimeType": "video/mp4"}}}"#;
        call(&r, Method::POST, A, Some(link)).await;
        assert_eq!(raw(&r, Method::GET, &format!("{A}/v?alt=media"), None, Vec::new()).await.0, 400);
        assert_eq!(raw(&r, Method::GET, &format!("{A}/t?alt=xml"), None, Vec::new()).await.0, 400);
        assert_eq!(raw(&r, Method::GET, &format!("{A}/gone?alt=media"), None, Vec::new()).await.0, 404);
        // Refusals write nothing: bad metadata, a bad name, over the limit.
        let before = call(&r, Method::GET, A, None).await;
        let bad_meta = format!("{A}/x?metadata=%5B1%5D");
        assert_eq!(raw(&r, Method::POST, &bad_meta, None, vec![1]).await.0, 400);
        assert_eq!(raw(&r, Method::POST, &format!("{A}/a/../x"), None, vec![1]).await.0, 400);
        let small = app(AppState::new(SessionService::in_memory())
            .with_limits(Limits { max_artifact_bytes: 1000, ..Limits::default() }));
        let (status, _, answer) = raw(&small, Method::POST, &format!("{A}/x"), None, vec![0; 1001]).await;
        assert_eq!(status, 413, "{}", String::from_utf8_lossy(&answer));
        assert!(String::from_utf8_lossy(&answer).contains("--max-artifact-bytes"));
        assert_eq!(call(&small, Method::GET, A, None).await, (StatusCode::OK, json!([])));
        assert_eq!(
            raw(&small, Method::POST, &format!("{A}/x"), None, vec![0; 998]).await.0,
            200,
            "998 bytes and `{{}}`"
        );
        assert_eq!(call(&r, Method::GET, A, None).await, before);
    }

    #[tokio::test]
    async fn large_bodies_read_in_place_as_small_ones_are_read() {
        let r = router();
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 37 % 256) as u8).collect();
        let standard = base64_standard(&bytes);
        assert!(standard.contains(['+', '/']), "the standard alphabet's own letters");
        for (i, body) in [
            json!({"filename": "a", "artifact": {"inlineData": {"data": standard.trim_end_matches('=')}}}).to_string(),
            json!({"filename": "a", "artifact": {"inline_data": {"data": standard, "mimeType": "x/y"}}}).to_string(),
            // Escaped slashes: not the plain string the in-place path reads; read as usual.
            json!({"filename": "a", "artifact": {"inlineData": {"data": standard}}}).to_string().replace('/', "\\/"),
        ]
        .into_iter()
        .enumerate()
        {
            let (status, saved) = call(&r, Method::POST, A, Some(&body)).await;
            assert_eq!((status, saved["version"].clone()), (StatusCode::OK, json!(i)), "{saved}");
            let (_, loaded) = call(&r, Method::GET, &format!("{A}/a/versions/{i}"), None).await;
            let data = loaded["inlineData"]["data"].as_str().unwrap();
            assert_eq!(agentstate::artifact::model::decode_base64(data).unwrap(), bytes, "body {i}");
        }
        let bad = json!({"filename": "b", "artifact": {"inlineData": {"data": standard.replace('A', "*")}}});
        let (status, answer) = call(&r, Method::POST, A, Some(&bad.to_string())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer["detail"].as_str().unwrap().contains("base64"), "{answer}");
        let missing = json!({"artifact": {"inlineData": {"data": standard}}});
        let (status, answer) = call(&r, Method::POST, A, Some(&missing.to_string())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(call(&r, Method::GET, A, None).await, (StatusCode::OK, json!(["a"])), "nothing else written");
    }

    fn base64_standard(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[tokio::test]
    async fn bad_artifact_requests_answer_4xx_and_write_nothing() {
        let r = router();
        for (body, status, says) in [
            (r#"{"filename": "../x", "artifact": {"text": "x"}}"#, 400, "parent traversal"),
            (r#"{"filename": "/etc/x", "artifact": {"text": "x"}}"#, 400, "Rooted"),
            (r#"{"filename": "x", "artifact": {"inlineData": {"data": "***"}}}"#, 400, "base64"),
            (r#"{"filename": "x", "artifact": {}}"#, 400, "Not supported artifact type."),
            (r#"{"filename": 3, "artifact": {"text": "x"}}"#, 422, "string"),
            (r#"{"filename": "x", "artifact": "text"}"#, 422, "Part"),
            (r#"{"filename": "x", "artifact": {"text": "x"}, "customMetadata": 3}"#, 422, "dictionary"),
            (r#"[1]"#, 422, "dictionary"),
        ] {
            let (got, answer) = call(&r, Method::POST, A, Some(body)).await;
            assert_eq!(got.as_u16(), status, "{body}: {answer}");
            assert!(answer.to_string().contains(says), "{body}: {answer}");
        }
        assert_eq!(call(&r, Method::GET, A, None).await, (StatusCode::OK, json!([])), "nothing written");
        let (status, answer) = call(&r, Method::GET, "/apps/myapp/users/u1/sessions/../x/artifacts", None).await;
        assert_ne!(status, StatusCode::OK, "{answer}");
    }

    #[tokio::test]
    async fn a_users_token_reaches_only_that_users_artifacts_and_deleting_the_session_deletes_them() {
        let r = with_tokens(
            r#"{"tokens": [{"token": "whole-app-token-0123", "apps": ["myapp"]},
                           {"token": "one-user-token-01234", "apps": ["myapp"], "users": ["u1"]}]}"#,
        );
        let body = r#"{"filename": "f", "artifact": {"text": "secret"}}"#;
        let theirs = "/apps/myapp/users/u2/sessions/s1/artifacts";
        assert_eq!(call_as(&r, "one-user-token-01234", Method::POST, theirs, body).await.0, StatusCode::FORBIDDEN);
        assert_eq!(call_as(&r, "whole-app-token-0123", Method::POST, theirs, body).await.0, StatusCode::OK);
        for path in [format!("{theirs}/f"), format!("{theirs}/f/versions"), theirs.to_owned()] {
            assert_eq!(
                call_as(&r, "one-user-token-01234", Method::GET, &path, "").await.0,
                StatusCode::FORBIDDEN,
                "{path}"
            );
        }
        assert_eq!(
            call_as(&r, "one-user-token-01234", Method::DELETE, &format!("{theirs}/f"), "").await.0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(call(&r, Method::GET, theirs, None).await.0, StatusCode::UNAUTHORIZED);
        let (status, names) = call_as(&r, "whole-app-token-0123", Method::GET, theirs, "").await;
        assert_eq!((status, names), (StatusCode::OK, json!(["f"])));
        // Deleting the session (even one never created here) deletes its artifacts.
        let session = "/apps/myapp/users/u2/sessions/s1";
        assert_eq!(call_as(&r, "whole-app-token-0123", Method::DELETE, session, "").await.0, StatusCode::OK);
        assert_eq!(call_as(&r, "whole-app-token-0123", Method::GET, theirs, "").await, (StatusCode::OK, json!([])));
    }
}
