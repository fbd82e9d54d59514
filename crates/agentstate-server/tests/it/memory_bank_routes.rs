//! Memory Bank's routes through the router: both path forms, paging, scopes and tokens, bad input
//! refused as Google refuses it with nothing written, and erasure.

use std::sync::Arc;

use agentstate::SessionService;
use agentstate::memory::{FactModel, FactModels};
use agentstate_server::{AppState, Tokens, app};
use axum::Router;
use serde_json::{Value, json};

use crate::vertex_routes::call;

const E: &str = "/v1beta1/reasoningEngines/77";
const FULL: &str = "/v1/projects/p/locations/l/reasoningEngines/77";

fn router() -> Router {
    app(AppState::new(SessionService::in_memory()))
}

async fn create(r: &Router, body: Value) -> Value {
    let (status, op) = call(r, "POST", &format!("{E}/memories"), Some(body), &[]).await;
    assert_eq!(status, 200, "{op}");
    assert_eq!(op["done"], true);
    op["response"].clone()
}

fn id_of(memory: &Value) -> String {
    memory["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
}

#[tokio::test]
async fn memories_are_named_in_the_form_asked_and_read_back() {
    let r = router();
    let memory = create(
        &r,
        json!({"fact": "likes green tea", "scope": {"app_name": "77", "user_id": "alice"}, "display_name": "tea",
               "metadata": {"n": {"double_value": 2}, "ok": {"boolValue": true},
                            "at": {"timestamp_value": "2026-11-29T10:00:00.5+01:00"}},
               "topics": [{"managedMemoryTopic": "USER_PREFERENCES"}]}),
    )
    .await;
    let id = id_of(&memory);
    assert_eq!(id.len(), 19, "ids as the managed service makes them: {memory}");
    assert_eq!(memory["@type"], "type.googleapis.com/google.cloud.aiplatform.v1beta1.Memory");
    assert_eq!(memory["name"], format!("reasoningEngines/77/memories/{id}"));

    let (status, got) = call(&r, "GET", &format!("{FULL}/memories/{id}"), None, &[]).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["name"], format!("projects/p/locations/l/reasoningEngines/77/memories/{id}"));
    assert_eq!(got["displayName"], "tea");
    assert_eq!(
        got["metadata"],
        json!({"n": {"doubleValue": 2}, "ok": {"boolValue": true}, "at": {"timestampValue": "2026-11-29T09:00:00.500000Z"}})
    );
    assert_eq!(got["topics"], json!([{"managedMemoryTopic": "USER_PREFERENCES"}]));
    assert_eq!(got["createTime"], got["updateTime"]);

    // The operation on it answers it while it exists.
    let (status, op) = call(&r, "GET", &format!("{E}/memories/{id}/operations/5"), None, &[]).await;
    assert_eq!((status.as_u16(), &op["response"]["fact"]), (200, &json!("likes green tea")), "{op}");

    // A patch without a mask sets what the body has; with one, what the mask names.
    let path = format!("{E}/memories/{id}");
    let (status, op) = call(&r, "PATCH", &path, Some(json!({"description": "drinks"})), &[]).await;
    assert_eq!((status.as_u16(), &op["response"]["description"]), (200, &json!("drinks")), "{op}");
    let (status, op) =
        call(&r, "PATCH", &format!("{path}?updateMask=display_name"), Some(json!({"fact": "ignored"})), &[]).await;
    assert_eq!(status, 200, "{op}");
    assert_eq!((&op["response"]["fact"], op["response"].get("displayName")), (&json!("likes green tea"), None));
    let (status, error) =
        call(&r, "PATCH", &format!("{path}?updateMask=scope"), Some(json!({"scope": {"user_id": "x"}})), &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{error}");

    let (status, _) = call(&r, "DELETE", &path, None, &[]).await;
    assert_eq!(status, 200);
    let (status, error) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (404, &json!("NOT_FOUND")));
    let (status, op) = call(&r, "GET", &format!("{E}/memories/{id}/operations/5"), None, &[]).await;
    assert_eq!((status.as_u16(), op.get("response")), (200, None), "{op}");
}

#[tokio::test]
async fn simple_retrieval_pages_and_similarity_answers_one_page() {
    let r = router();
    for i in 0..5 {
        create(&r, json!({"fact": format!("fact number {i} about tea"), "scope": {"user_id": "bob"}})).await;
    }
    create(&r, json!({"fact": "fact about tea of someone else", "scope": {"user_id": "carol"}})).await;
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = json!({"page_size": 2});
        if let Some(token) = &token {
            params["page_token"] = json!(token);
        }
        let body = json!({"scope": {"user_id": "bob"}, "simple_retrieval_params": params});
        let (status, page) = call(&r, "POST", &format!("{E}/memories:retrieve"), Some(body), &[]).await;
        assert_eq!(status, 200, "{page}");
        let facts = page["retrievedMemories"].as_array().unwrap();
        assert!(!facts.is_empty(), "no empty page behind a token");
        seen.extend(facts.iter().map(|m| m["memory"]["fact"].as_str().unwrap().to_owned()));
        match page["nextPageToken"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, (0..5).map(|i| format!("fact number {i} about tea")).collect::<Vec<_>>());

    let body = json!({"scope": {"user_id": "bob"}, "similaritySearchParams": {"searchQuery": "tea", "topK": 4}});
    let (status, found) = call(&r, "POST", &format!("{E}/memories:retrieve"), Some(body), &[]).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["retrievedMemories"].as_array().unwrap().len(), 4);
    assert!(found.get("nextPageToken").is_none(), "a similarity search is one page");
    let body = json!({"scope": {"user_id": "bob"}, "similarity_search_params": {"search_query": "tea"}});
    let (_, found) = call(&r, "POST", &format!("{E}/memories:retrieve"), Some(body), &[]).await;
    assert_eq!(found["retrievedMemories"].as_array().unwrap().len(), 3, "top_k is 3 by default");
}

#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    let r = router();
    let scope = json!({"user_id": "alice"});
    for (body, says) in [
        (json!({"fact": "x y", "scope": {"user_id": 7}}), "scope.user_id must be a string"),
        (json!({"fact": "x y"}), "scope is required"),
        (json!({"fact": "", "scope": scope}), "fact is required"),
        (json!({"fact": "x y", "scope": scope, "colour": "red"}), "Unknown name \"colour\""),
        (json!({"fact": "x y", "scope": scope, "metadata": {"k": {"int_value": 3}}}), "metadata.k must have one of"),
        (json!({"fact": "x y", "scope": scope, "metadata": {"k": {"double_value": "3"}}}), "must be a number"),
        (json!({"fact": "x y", "scope": scope, "ttl": "soon"}), "is not a duration"),
        (json!({"fact": "x y", "scope": scope, "ttl": "60s", "expireTime": "2030-01-01T00:00:00Z"}), "not both"),
    ] {
        let (status, error) = call(&r, "POST", &format!("{E}/memories"), Some(body.clone()), &[]).await;
        assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{body}: {error}");
        assert!(error["error"]["message"].as_str().unwrap().contains(says), "{body}: {error}");
    }
    let (status, error) = call(&r, "GET", &format!("{E}/memories/bad%0Aname"), None, &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{error}");
    let facts: Vec<Value> = (0..6).map(|i| json!({"fact": format!("fact {i}")})).collect();
    let body = json!({"scope": scope, "directMemoriesSource": {"directMemories": facts}});
    let (status, error) = call(&r, "POST", &format!("{E}/memories:generate"), Some(body), &[]).await;
    assert_eq!(status, 400, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("give 1 to 5"), "{error}");
    let body =
        json!({"scope": scope, "direct_memories_source": {"direct_memories": [{"fact": "good one"}, {"fact": ""}]}});
    let (status, error) = call(&r, "POST", &format!("{E}/memories:generate"), Some(body), &[]).await;
    assert_eq!(status, 400, "one bad fact fails them all: {error}");
    for path in ["memories:ingestEvents", "memories:generate"] {
        let body =
            json!({"scope": scope, "directContentsSource": {"events": [{"content": {"parts": [{"text": "hi"}]}}]}});
        let (status, error) = call(&r, "POST", &format!("{E}/{path}"), Some(body), &[]).await;
        assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("FAILED_PRECONDITION")), "{error}");
    }
    let (status, listed) = call(&r, "GET", &format!("{E}/memories"), None, &[]).await;
    assert_eq!((status.as_u16(), &listed["memories"]), (200, &json!([])), "nothing written: {listed}");

    let body = json!({"scope": scope, "directMemoriesSource": {"directMemories": [{"fact": "one"}, {"fact": "two"}]}});
    let (status, op) = call(&r, "POST", &format!("{E}/memories:generate"), Some(body), &[]).await;
    assert_eq!(status, 200, "{op}");
    let generated = op["response"]["generatedMemories"].as_array().unwrap();
    assert_eq!(generated.len(), 2);
    assert!(generated.iter().all(|g| g["action"] == "CREATED"), "{op}");
}

/// A fact model that finds one fact in any conversation.
struct OneFact;

#[async_trait::async_trait]
impl FactModel for OneFact {
    fn name(&self) -> &str {
        "one-fact"
    }

    async fn answer(&self, _instruction: &str, _input: &str) -> agentstate::Result<String> {
        Ok(r#"{"facts": ["The user likes tea."]}"#.to_owned())
    }
}

#[tokio::test]
async fn tokens_reach_the_scopes_of_their_users_only() {
    let tokens = r#"{"tokens": [
        {"token": "alice-token-0123456789", "apps": ["77"], "users": ["alice"]},
        {"token": "bob-token-0123456789", "apps": ["77"], "users": ["bob"]},
        {"token": "admin-token-0123456789", "apps": ["77"]}]}"#;
    let state = AppState::new(SessionService::in_memory())
        .with_tokens(Tokens::parse(tokens).unwrap())
        .with_fact_models(FactModels::new().every_app(Arc::new(OneFact)));
    let r = app(state);
    let alice = [("authorization", "Bearer alice-token-0123456789")];
    let admin = [("authorization", "Bearer admin-token-0123456789")];
    let mine = json!({"fact": "alice fact", "scope": {"app_name": "77", "user_id": "alice"}});
    let (status, op) = call(&r, "POST", &format!("{E}/memories"), Some(mine), &alice).await;
    assert_eq!(status, 200, "{op}");
    let theirs = json!({"fact": "bob fact", "scope": {"user_id": "bob"}});
    let (status, _) = call(&r, "POST", &format!("{E}/memories"), Some(theirs.clone()), &alice).await;
    assert_eq!(status, 403);
    let (status, op) = call(&r, "POST", &format!("{E}/memories"), Some(theirs), &admin).await;
    assert_eq!(status, 200);
    let bobs = id_of(&op["response"]);
    let (status, _) = call(&r, "GET", &format!("{E}/memories/{bobs}"), None, &alice).await;
    assert_eq!(status, 403, "a name does not reach past the scope");
    let (status, _) = call(&r, "GET", &format!("{E}/memories"), None, &alice).await;
    assert_eq!(status, 403, "listing the engine needs every user");
    let (status, listed) = call(&r, "GET", &format!("{E}/memories"), None, &admin).await;
    assert_eq!((status.as_u16(), listed["memories"].as_array().unwrap().len()), (200, 2));
    let (status, _) = call(&r, "GET", "/v1beta1/reasoningEngines/78/memories", None, &admin).await;
    assert_eq!(status, 403, "another engine");

    // A generation's operation answers its scope's user only.
    let said = json!({"events": [{"content": {"role": "user", "parts": [{"text": "I like tea"}]}}]});
    let body = json!({"scope": {"user_id": "alice"}, "directContentsSource": said});
    let (status, op) = call(&r, "POST", &format!("{E}/memories:generate"), Some(body), &alice).await;
    assert_eq!(status, 200, "{op}");
    let path = format!("/v1beta1/{}", op["name"].as_str().unwrap());
    let (status, _) = call(&r, "GET", &path, None, &[("authorization", "Bearer bob-token-0123456789")]).await;
    assert_eq!(status, 403, "another user's generation");
    for _ in 0..100 {
        let (status, polled) = call(&r, "GET", &path, None, &alice).await;
        assert_eq!(status, 200);
        if polled["done"] == true {
            assert_eq!(polled["response"]["generatedMemories"][0]["action"], "CREATED", "{polled}");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the generation did not finish");
}

#[tokio::test]
async fn erasing_a_user_removes_their_memory_bank_memories() {
    let r = router();
    create(&r, json!({"fact": "alice in adk form", "scope": {"app_name": "77", "user_id": "alice"}})).await;
    create(&r, json!({"fact": "alice alone", "scope": {"user_id": "alice"}})).await;
    create(&r, json!({"fact": "bob stays", "scope": {"user_id": "bob"}})).await;
    let (status, erased) = call(&r, "DELETE", "/apps/77/users/alice", None, &[]).await;
    assert_eq!(status, 200, "{erased}");
    assert_eq!(erased["memories"], 2, "{erased}");
    let (_, listed) = call(&r, "GET", &format!("{E}/memories"), None, &[]).await;
    let facts: Vec<&str> = listed["memories"].as_array().unwrap().iter().map(|m| m["fact"].as_str().unwrap()).collect();
    assert_eq!(facts, ["bob stays"]);
}
