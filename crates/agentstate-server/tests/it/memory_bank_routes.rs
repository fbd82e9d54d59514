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

    // Without embeddings, the distance is the share of the query's words a memory lacks.
    let body =
        json!({"scope": {"user_id": "bob"}, "similaritySearchParams": {"searchQuery": "number 3 tea", "topK": 2}});
    let (_, found) = call(&r, "POST", &format!("{E}/memories:retrieve"), Some(body), &[]).await;
    let found = found["retrievedMemories"].as_array().unwrap();
    assert_eq!(found[0]["memory"]["fact"], "fact number 3 about tea");
    assert_eq!(found[0]["distance"], 0.0);
    let second = found[1]["distance"].as_f64().unwrap();
    assert!((second - 1.0 / 3.0).abs() < 1e-9, "{found:?}");
}

#[tokio::test]
async fn every_write_keeps_a_revision_and_a_rollback_restores_one() {
    let r = router();
    let body = json!({"fact": "likes green tea", "scope": {"user_id": "dana"},
                      "revisionLabels": {"author": "user", "timestamp": "2026-11-29T10:00:00"}});
    let id = id_of(&create(&r, body).await);
    let path = format!("{E}/memories/{id}");
    for (fact, label) in [("likes oolong tea", "a"), ("likes black tea", "b"), ("likes mint tea", "a")] {
        let body = json!({"fact": fact, "revision_labels": {"step": label}, "revision_ttl": "3600s"});
        let (status, op) = call(&r, "PATCH", &format!("{path}?updateMask=fact"), Some(body), &[]).await;
        assert_eq!(status, 200, "{op}");
    }
    let (status, page) = call(&r, "GET", &format!("{FULL}/memories/{id}/revisions?pageSize=3"), None, &[]).await;
    assert_eq!(status, 200, "{page}");
    let revisions = page["memoryRevisions"].as_array().unwrap();
    let facts: Vec<&str> = revisions.iter().map(|r| r["fact"].as_str().unwrap()).collect();
    assert_eq!(facts, ["likes mint tea", "likes black tea", "likes oolong tea"], "newest first");
    assert_eq!(revisions[0]["name"], format!("projects/p/locations/l/reasoningEngines/77/memories/{id}/revisions/4"));
    assert_eq!(revisions[0]["labels"], json!({"step": "a"}));
    assert!(revisions[0]["expireTime"].is_string() && revisions[0]["createTime"].is_string());
    let token = page["nextPageToken"].as_str().unwrap();
    let (_, rest) =
        call(&r, "GET", &format!("{E}/memories/{id}/revisions?pageSize=3&pageToken={token}"), None, &[]).await;
    assert_eq!(rest["memoryRevisions"][0]["labels"], json!({"author": "user", "timestamp": "2026-11-29T10:00:00"}));
    assert!(rest.get("nextPageToken").is_none(), "{rest}");
    let filter = "labels.step%3D%22a%22";
    let (_, some) = call(&r, "GET", &format!("{E}/memories/{id}/revisions?filter={filter}"), None, &[]).await;
    let facts: Vec<&str> =
        some["memoryRevisions"].as_array().unwrap().iter().map(|r| r["fact"].as_str().unwrap()).collect();
    assert_eq!(facts, ["likes mint tea", "likes oolong tea"]);

    let (status, one) = call(&r, "GET", &format!("{E}/memories/{id}/revisions/2"), None, &[]).await;
    assert_eq!((status.as_u16(), &one["fact"]), (200, &json!("likes oolong tea")), "{one}");
    let (status, error) = call(&r, "GET", &format!("{E}/memories/{id}/revisions/9"), None, &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (404, &json!("NOT_FOUND")), "{error}");

    let (status, op) =
        call(&r, "POST", &format!("{path}:rollback"), Some(json!({"target_revision_id": "2"})), &[]).await;
    assert_eq!((status.as_u16(), &op["done"]), (200, &json!(true)), "{op}");
    let (_, got) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!(got["fact"], "likes oolong tea");
    let (_, page) = call(&r, "GET", &format!("{E}/memories/{id}/revisions?pageSize=1"), None, &[]).await;
    assert_eq!(page["memoryRevisions"][0]["name"], format!("reasoningEngines/77/memories/{id}/revisions/5"));
    for (body, status) in
        [(json!({"targetRevisionId": "9"}), 404), (json!({}), 400), (json!({"targetRevisionId": "1", "x": 1}), 400)]
    {
        let (got, error) = call(&r, "POST", &format!("{path}:rollback"), Some(body.clone()), &[]).await;
        assert_eq!(got.as_u16(), status, "{body}: {error}");
    }
    let (status, _) = call(&r, "POST", &format!("{path}:undo"), Some(json!({})), &[]).await;
    assert_eq!(status, 404);
    let (status, error) =
        call(&r, "GET", &format!("{E}/memories/{id}/revisions?filter=fact%3D%22x%22"), None, &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{error}");
    let (status, error) = call(&r, "GET", &format!("{E}/memories/{id}/revisions?pageToken=abc"), None, &[]).await;
    assert_eq!(status, 400, "{error}");

    // A write may keep no revision; bad revision options write nothing.
    let body = json!({"fact": "likes no tea", "disableMemoryRevisions": true});
    let (status, _) = call(&r, "PATCH", &format!("{path}?updateMask=fact"), Some(body), &[]).await;
    assert_eq!(status, 200);
    let (_, page) = call(&r, "GET", &format!("{E}/memories/{id}/revisions"), None, &[]).await;
    assert_eq!(page["memoryRevisions"].as_array().unwrap().len(), 5);
    for bad in [
        json!({"fact": "x y", "revisionLabels": {"k": 1}}),
        json!({"fact": "x y", "revisionTtl": "soon"}),
        json!({"fact": "x y", "revisionTtl": "60s", "revisionExpireTime": "2030-01-01T00:00:00Z"}),
        json!({"fact": "x y", "disableMemoryRevisions": "yes"}),
    ] {
        let (status, error) = call(&r, "PATCH", &format!("{path}?updateMask=fact"), Some(bad.clone()), &[]).await;
        assert_eq!(status, 400, "{bad}: {error}");
    }
    let (_, got) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!(got["fact"], "likes no tea", "nothing written");

    // Deleting a memory deletes its revisions.
    call(&r, "DELETE", &path, None, &[]).await;
    let (status, _) = call(&r, "GET", &format!("{E}/memories/{id}/revisions"), None, &[]).await;
    assert_eq!(status, 404);

    // Profiles: this server keeps no structured memory schemas.
    let body = json!({"scope": {"user_id": "dana"}});
    let (status, profiles) = call(&r, "POST", &format!("{E}/memories:retrieveProfiles"), Some(body), &[]).await;
    assert_eq!((status.as_u16(), profiles), (200, json!({"profiles": {}})));
    let (status, _) = call(&r, "POST", &format!("{E}/memories:retrieveProfiles"), Some(json!({})), &[]).await;
    assert_eq!(status, 400);
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
    for (filter, says) in [
        (json!({"filter": "fact=\"x\""}), "filter is not supported"),
        (json!({"filterGroups": [{"filters": [{"key": "author"}]}]}), "filter_groups is not supported"),
    ] {
        let mut body = json!({"scope": scope, "similaritySearchParams": {"searchQuery": "x"}});
        body.as_object_mut().unwrap().extend(filter.as_object().unwrap().clone());
        let (status, error) = call(&r, "POST", &format!("{E}/memories:retrieve"), Some(body), &[]).await;
        assert_eq!(status, 400, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains(says), "{error}");
    }
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

/// A fact model whose consolidation updates the first memory it is given with every new fact
/// (and creates them when it is given none).
struct UpdatesFirst;

#[async_trait::async_trait]
impl FactModel for UpdatesFirst {
    fn name(&self) -> &str {
        "updates-first"
    }

    async fn answer(&self, instruction: &str, input: &str) -> agentstate::Result<String> {
        if instruction.starts_with("You extract memories") {
            return Ok(r#"{"facts": ["The user likes green tea."]}"#.to_owned());
        }
        let given: Value = serde_json::from_str(input).unwrap();
        let fact = &given["new"][0];
        let action = match given["existing"][0]["id"].as_str() {
            Some(id) => json!({"action": "UPDATED", "id": id, "fact": fact}),
            None => json!({"action": "CREATED", "fact": fact}),
        };
        Ok(json!({"actions": [action]}).to_string())
    }
}

/// `metadataMergeStrategy`: how a generation's metadata applies to the memory it updates.
#[tokio::test]
async fn a_generation_merges_overwrites_or_requires_the_metadata() {
    let state = AppState::new(SessionService::in_memory())
        .with_fact_models(FactModels::new().every_app(Arc::new(UpdatesFirst)));
    let r = app(state);
    let scope = json!({"user_id": "una"});
    let memory = create(
        &r,
        json!({"fact": "The user likes tea.", "scope": scope,
               "metadata": {"src": {"stringValue": "a"}, "keep": {"doubleValue": 1}}}),
    )
    .await;
    let path = format!("{E}/memories/{}", id_of(&memory));
    let generate = |strategy: &str, src: &str| {
        json!({"scope": scope, "metadataMergeStrategy": strategy, "metadata": {"src": {"stringValue": src}},
               "directContentsSource": {"events": [{"content": {"role": "user", "parts": [{"text": "green tea"}]}}]}})
    };
    let run = |body: Value| {
        let r = r.clone();
        async move {
            let (status, op) = call(&r, "POST", &format!("{E}/memories:generate"), Some(body), &[]).await;
            assert_eq!(status, 200, "{op}");
            let name = op["name"].as_str().unwrap().to_owned();
            for _ in 0..200 {
                let (_, polled) = call(&r, "GET", &format!("/v1beta1/{name}"), None, &[]).await;
                if polled["done"] == true {
                    return polled["response"]["generatedMemories"][0]["action"].as_str().unwrap().to_owned();
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("{name} not done");
        }
    };
    assert_eq!(run(generate("MERGE", "b")).await, "UPDATED");
    let (_, got) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!(got["metadata"], json!({"src": {"stringValue": "b"}, "keep": {"doubleValue": 1}}), "merged: {got}");
    assert_eq!(run(generate("overwrite", "c")).await, "UPDATED");
    let (_, got) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!(got["metadata"], json!({"src": {"stringValue": "c"}}), "overwritten: {got}");
    assert_eq!(run(generate("REQUIRE_EXACT_MATCH", "z")).await, "CREATED", "another metadata: not eligible");
    let (_, got) = call(&r, "GET", &path, None, &[]).await;
    assert_eq!(got["metadata"], json!({"src": {"stringValue": "c"}}), "left as it was: {got}");
    assert_eq!(run(generate("REQUIRE_EXACT_MATCH", "c")).await, "UPDATED", "the same metadata: eligible");
    let (status, error) = call(&r, "POST", &format!("{E}/memories:generate"), Some(generate("APPEND", "d")), &[]).await;
    assert_eq!((status.as_u16(), &error["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{error}");
}
