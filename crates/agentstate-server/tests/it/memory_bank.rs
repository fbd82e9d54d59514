//! Memory Bank's REST surface against the reference's own client: ADK for Python's
//! `VertexAiMemoryBankService` and the google-cloud-agentplatform client it uses, pointed at this
//! server, on SQLite, PostgreSQL and Redis (`tests/vertex/memory_bank_client.py`).

use std::sync::Arc;

use agentstate::memory::{Embedders, FactModels};
use agentstate_runtime::providers::OpenAiEmbeddings;
use agentstate_server::{AppState, Connections, Tokens, app};
use serde_json::{Value, json};

use crate::vertex::run_script;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vertex/memory_bank_client.py");
pub(crate) const TOKEN: &str = "memory-bank-token-0123456789";

/// The engine beside `engine` whose memories are searched by meaning.
fn meaning_engine(engine: &str) -> String {
    format!("{engine}-meaning")
}

/// Serves the API over the store at `url`, to a token for `engine` (and its
/// [`meaning_engine`]), on a free loopback port, on a thread of its own, for the rest of the test
/// run, with a mock fact model ([`FactRules`]) and, for the meaning engine, a mock embedding
/// provider ([`TopicVectors`](crate::memory_embeddings::TopicVectors)); its base URL.
pub(crate) fn serve_store(url: String, engine: &str) -> String {
    let meaning = meaning_engine(engine);
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["{engine}", "{meaning}"]}}]}}"#);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let (_provider, model_url) = fact_model_server().await;
            let model = agentstate_runtime::providers::OpenAiCompatible::new("mock", &model_url);
            let models = FactModels::new().every_app(agentstate_server::memory_model::fact_model(Arc::new(model)));
            // Held, as the model's mock is, for as long as the server runs.
            let vectors = wiremock::MockServer::start().await;
            wiremock::Mock::given(wiremock::matchers::path("/v1/embeddings"))
                .respond_with(crate::memory_embeddings::TopicVectors(&[
                    &["seat", "aisle", "window"],
                    &["peanut", "nut", "allerg"],
                    &["lisbon", "porto", "flies", "trip"],
                ]))
                .mount(&vectors)
                .await;
            let embedder = OpenAiEmbeddings::new("topics", &format!("{}/v1", vectors.uri()));
            let embedders = Embedders::new().app(&meaning, Arc::new(embedder));
            let store = agentstate_backends::open(&url).await.unwrap();
            let state = AppState::new(agentstate::SessionService::new(store))
                .with_tokens(Tokens::parse(&tokens).unwrap())
                .with_fact_models(models)
                .with_embedders(embedders);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender.send(listener.local_addr().unwrap()).unwrap();
            let forever = std::future::pending();
            agentstate_server::serve(listener, app(state), Connections::default(), forever).await.unwrap();
        });
    });
    format!("http://{}", receiver.recv().unwrap())
}

fn check(run: &Value) {
    // Similarity search: the seat preference first, within Alice's scope only; ADK's entries.
    let alice = run["search_alice"].as_array().unwrap();
    assert_eq!(alice[0]["text"], "Alice prefers window seats on long flights", "{run}");
    assert_eq!((&alice[0]["author"], &alice[0]["has_time"]), (&json!("user"), &json!(true)));
    assert!(alice.len() <= 3, "the managed default top_k is 3: {run}");
    assert_eq!(run["search_bob"], json!(["Bob prefers aisle seats"]), "scopes never leak");
    let peanuts = &run["search_peanuts"][0];
    assert_eq!(peanuts[0], "Alice is allergic to peanuts");
    assert_eq!(peanuts[1], json!({"source": "chat", "confidence": 0.9}), "typed metadata round trip");

    let got = &run["get"];
    assert!(got["name"].as_str().unwrap().ends_with("/memories/seat-pref"), "{got}");
    assert_eq!(got["fact"], "Alice prefers window seats on long flights");
    assert_eq!(got["scope"], json!({"app_name": run_engine(run), "user_id": "alice"}));
    assert_eq!(got["has_times"], true);
    assert_eq!(run["patched"], json!({"done": true, "fact": "Alice prefers aisle seats now"}));
    assert_eq!(
        run["revisions"],
        json!([
            ["2", "Alice prefers aisle seats now", true],
            ["1", "Alice prefers window seats on long flights", true]
        ]),
        "{run}"
    );
    assert_eq!(run["first_revision"], "Alice prefers window seats on long flights");
    assert_eq!(run["rolled_back"], json!({"done": true, "fact": "Alice prefers window seats on long flights"}));
    assert_eq!(run["revisions_after_rollback"], json!(["3", "2", "1"]), "paged one at a time: {run}");
    assert_eq!(
        run["labelled"],
        json!([["Erin keeps a diary", {"why": "she said so"}]]),
        "revision labels, filtered: {run}"
    );
    assert_eq!(run["revision_ttl"], 3600.0, "{run}");
    let distances = run["distances"].as_array().unwrap();
    assert_eq!(distances[0], json!(["Alice is allergic to peanuts", 0.0]), "{run}");
    assert!(distances.iter().all(|d| (0.0..=1.0).contains(&d[1].as_f64().unwrap())), "{run}");
    assert_eq!((&run["profiles"], &run["adk_profiles"]), (&json!({}), &json!([])));
    assert_eq!(
        run["listed"],
        json!([
            "Alice flies to Lisbon every spring",
            "Alice is allergic to peanuts",
            "Alice prefers aisle seats now",
            "Bob prefers aisle seats"
        ]),
        "every memory of the engine, two a page"
    );
    assert_eq!(
        run["simple_alice"],
        json!(["Alice flies to Lisbon every spring", "Alice is allergic to peanuts", "Alice prefers aisle seats now"])
    );
    assert_eq!(run["other_scope"], json!({"user_id": "carol"}));
    assert_eq!(run["exact_scope"], json!([]), "{{user_id}} is not {{app_name, user_id}}");
    assert_eq!(run["ttl_has_expiry"], true);
    assert_eq!(run["deleted_done"], true);
    assert_eq!(run["deleted_get"]["status"], "NOT_FOUND", "{run}");

    let bad = &run["bad"];
    for (case, status) in
        [("empty_fact", "INVALID_ARGUMENT"), ("no_scope", "INVALID_ARGUMENT"), ("long_fact", "INVALID_ARGUMENT")]
    {
        assert_eq!(bad[case]["status"], status, "{case}: {bad}");
        assert_eq!(bad[case]["code"], 400, "{case}: {bad}");
    }
    let malformed = bad["generate_malformed"].as_str().unwrap();
    assert!(malformed.contains("Failed to generate memory") && malformed.contains("not the JSON asked for"), "{bad}");

    // Generated by the engine's model: from a session ADK ingests in the background, and from
    // events through `generate` (ADK waits for its operation).
    assert_eq!(run["ingested"], json!(["The user lives in Lisbon."]), "{run}");
    assert_eq!(run["generated"], json!(["The user is allergic to peanuts."]), "{run}");

    assert_eq!(run["recalled"], json!(["I recall: The user lives in Lisbon."]), "a Runner's load_memory: {run}");

    // agentstate's own memory service sees the app's user's memories.
    assert_eq!(
        run["own_search"],
        json!(["Alice flies to Lisbon every spring", "Alice is in Lisbon this week"]),
        "{run}"
    );

    // By meaning (the meaning engine's embeddings): a query sharing no word with the fact finds
    // it, nearest first, at a cosine distance.
    let meaning = &run["by_meaning"];
    assert_eq!(meaning["found"][0], "Alice is allergic to peanuts", "{meaning}");
    assert_eq!(meaning["by_words_alone"], json!([]), "no word shared: {meaning}");
    let distances = meaning["distances"].as_array().unwrap();
    assert_eq!(distances[0][0], "Alice is allergic to peanuts");
    assert!(distances[0][1].as_f64().unwrap() < 1e-3, "the same topic, nearly the same direction: {meaning}");
    assert!(distances[1][1].as_f64().unwrap() > 0.5, "another topic, far: {meaning}");
}

fn run_engine(run: &Value) -> String {
    run["get"]["name"].as_str().unwrap().split('/').nth(5).unwrap().to_owned()
}

fn reference(url: String, engine: &str) {
    let base = serve_store(url, engine);
    check(&run_script(SCRIPT, &[&base, engine, TOKEN, &meaning_engine(engine)], None));
}

#[test]
fn the_reference_memory_bank_client_on_sqlite() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    reference(format!("sqlite://{}/bank.db", dir.display()), "4004");
}

#[test]
fn the_reference_memory_bank_client_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    reference(runtime.block_on(agentstate_conformance::databases::fresh_postgres()), "5005");
}

#[test]
fn the_reference_memory_bank_client_on_redis() {
    let prefix = agentstate_conformance::unique("bank");
    reference(format!("redis://127.0.0.1:6379/0?prefix={prefix}:"), "6006");
}

/// A mock OpenAI-compatible `/chat/completions` server answering Memory Bank's two calls by rule:
/// extraction keeps a fact per known word of the conversation (and answers no JSON to "break"),
/// consolidation updates a memory of where the user lives with a new one and creates the rest.
pub(crate) struct FactRules;

impl wiremock::Respond for FactRules {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let system = messages[0]["content"].as_str().unwrap();
        let input = messages[1]["content"].as_str().unwrap();
        let answer = if system.starts_with("You extract memories") {
            let said = input.to_lowercase();
            let rules = [
                ("peanut", "The user is allergic to peanuts."),
                ("lisbon", "The user lives in Lisbon."),
                ("porto", "The user lives in Porto."),
                ("jazz", "The user likes jazz."),
            ];
            if said.contains("break") {
                "Sure! Here are the facts: the user likes breaking things.".to_owned()
            } else {
                let facts: Vec<&str> = rules.iter().filter(|(w, _)| said.contains(w)).map(|(_, f)| *f).collect();
                format!("```json\n{}\n```", json!({"facts": facts}))
            }
        } else {
            let given: Value = serde_json::from_str(input).unwrap();
            let existing = given["existing"].as_array().unwrap();
            let mut actions = Vec::new();
            for fact in given["new"].as_array().unwrap() {
                let fact = fact.as_str().unwrap();
                if existing.iter().any(|m| m["fact"] == fact) {
                    continue;
                }
                let moved = existing
                    .iter()
                    .find(|m| fact.contains("lives in") && m["fact"].as_str().unwrap().contains("lives in"));
                actions.push(match moved {
                    Some(old) => json!({"action": "UPDATED", "id": old["id"], "fact": fact}),
                    None => json!({"action": "CREATED", "fact": fact}),
                });
            }
            json!({"actions": actions}).to_string()
        };
        wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        }))
    }
}

/// A mock model server of [`FactRules`]; its `/v1` base URL.
pub(crate) async fn fact_model_server() -> (wiremock::MockServer, String) {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(FactRules)
        .mount(&server)
        .await;
    let url = format!("{}/v1", server.uri());
    (server, url)
}

/// Polls an operation until it is done (at most 30 s); the done operation.
async fn done(client: &reqwest::Client, base: &str, operation: &Value) -> Value {
    let name = operation["name"].as_str().unwrap();
    for _ in 0..300 {
        let polled: Value = client.get(format!("{base}/v1beta1/{name}")).send().await.unwrap().json().await.unwrap();
        if polled["done"] == true {
            return polled;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("operation {name} not done in 30 s");
}

/// `serve --memory-model`: facts extracted from conversations and consolidated in the background,
/// through a mock OpenAI-compatible model; a malformed answer fails the operation and writes
/// nothing; an engine without a model is refused, naming the option.
#[tokio::test(flavor = "multi_thread")]
async fn serve_generates_memories_from_conversations_with_a_model() {
    let (_provider, url) = fact_model_server().await;
    let spec = format!("4242=openai:mock@{url}");
    let (child, addr) = tokio::task::spawn_blocking(move || {
        crate::binary::serve_with_env(
            &["--db", "sqlite::memory:", "--addr", "127.0.0.1:0", "--memory-model", &spec],
            &[("OPENAI_API_KEY", "sk-mock")],
        )
    })
    .await
    .unwrap();
    let _running = crate::binary::Running(child);
    let client = reqwest::Client::new();
    let base = format!("http://{addr}");
    let engine = format!("{base}/v1beta1/reasoningEngines/4242");
    let post = |path: &str, body: Value| {
        let (client, url) = (client.clone(), format!("{engine}/{path}"));
        async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let said = |text: &str| json!({"events": [{"content": {"role": "user", "parts": [{"text": text}]}}]});
    let scope = json!({"app_name": "4242", "user_id": "alice"});
    let facts = |client: reqwest::Client, engine: String| async move {
        let body =
            json!({"scope": {"app_name": "4242", "user_id": "alice"}, "simpleRetrievalParams": {"pageSize": 100}});
        let page: Value =
            client.post(format!("{engine}/memories:retrieve")).json(&body).send().await.unwrap().json().await.unwrap();
        let mut facts: Vec<String> = page["retrievedMemories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["memory"]["fact"].as_str().unwrap().to_owned())
            .collect();
        facts.sort();
        facts
    };

    let (status, operation) = post(
        "memories:generate",
        json!({"scope": scope, "directContentsSource": said("I live in Lisbon and peanuts make me ill")}),
    )
    .await;
    assert_eq!((status, &operation["done"]), (200, &json!(false)), "{operation}");
    let finished = done(&client, &base, &operation).await;
    let actions: Vec<&str> = finished["response"]["generatedMemories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["CREATED", "CREATED"], "{finished}");
    assert_eq!(
        facts(client.clone(), engine.clone()).await,
        ["The user is allergic to peanuts.", "The user lives in Lisbon."]
    );

    // A new fact that changes one: consolidated into it.
    let (_, operation) =
        post("memories:generate", json!({"scope": scope, "directContentsSource": said("We moved to Porto")})).await;
    let finished = done(&client, &base, &operation).await;
    let updated = &finished["response"]["generatedMemories"][0];
    assert_eq!(updated["action"], "UPDATED", "{finished}");
    assert_eq!(
        facts(client.clone(), engine.clone()).await,
        ["The user is allergic to peanuts.", "The user lives in Porto."]
    );
    // Its revisions: what it was, and what it became with the fact extracted; the previous
    // revision named by the generation undoes it.
    let name = updated["memory"]["name"].as_str().unwrap();
    let previous = updated["previousRevision"].as_str().unwrap();
    assert_eq!(previous, format!("{name}/revisions/1"), "{finished}");
    let revisions: Value =
        client.get(format!("{base}/v1beta1/{name}/revisions")).send().await.unwrap().json().await.unwrap();
    let revisions = revisions["memoryRevisions"].as_array().unwrap();
    assert_eq!(revisions[0]["fact"], "The user lives in Porto.");
    assert_eq!(revisions[0]["extractedMemories"], json!([{"fact": "The user lives in Porto."}]), "{revisions:?}");
    assert_eq!(revisions[1]["fact"], "The user lives in Lisbon.");
    let undo = json!({"targetRevisionId": "1"});
    let rolled = client.post(format!("{base}/v1beta1/{name}:rollback")).json(&undo).send().await.unwrap();
    assert_eq!(rolled.status(), 200);
    assert_eq!(
        facts(client.clone(), engine.clone()).await,
        ["The user is allergic to peanuts.", "The user lives in Lisbon."]
    );

    // Direct facts are consolidated too (in the background), unless asked not to be (at once).
    let direct = json!({"directMemories": [{"fact": "The user lives in Braga."}]});
    let (_, operation) = post("memories:generate", json!({"scope": scope, "directMemoriesSource": direct})).await;
    assert_eq!(operation["done"], false, "{operation}");
    let finished = done(&client, &base, &operation).await;
    assert_eq!(finished["response"]["generatedMemories"][0]["action"], "UPDATED", "{finished}");
    assert_eq!(
        facts(client.clone(), engine.clone()).await,
        ["The user is allergic to peanuts.", "The user lives in Braga."]
    );
    let direct = json!({"directMemories": [{"fact": "The user lives in Faro."}]});
    let body = json!({"scope": scope, "directMemoriesSource": direct, "disableConsolidation": true});
    let (status, operation) = post("memories:generate", body).await;
    assert_eq!((status, &operation["done"]), (200, &json!(true)), "{operation}");
    assert_eq!(operation["response"]["generatedMemories"][0]["action"], "CREATED");
    assert_eq!(facts(client.clone(), engine.clone()).await.len(), 3, "created beside the Braga one");
    let faro = operation["response"]["generatedMemories"][0]["memory"]["name"].as_str().unwrap();
    client.delete(format!("{base}/v1beta1/{faro}")).send().await.unwrap();

    // A model answer that is not the JSON asked for: the operation fails, nothing is written.
    let (_, operation) =
        post("memories:generate", json!({"scope": scope, "directContentsSource": said("break it, and I like jazz")}))
            .await;
    let failed = done(&client, &base, &operation).await;
    assert_eq!(failed["error"]["code"], 13, "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("not the JSON asked for"), "{failed}");
    assert_eq!(facts(client.clone(), engine.clone()).await.len(), 2, "nothing written");

    // Events ingested: generated at once, in the background.
    let (status, operation) = post(
        "memories:ingestEvents",
        json!({"scope": scope, "streamId": "", "directContentsSource": said("jazz on sundays")}),
    )
    .await;
    assert_eq!(status, 200, "{operation}");
    done(&client, &base, &operation).await;
    assert!(facts(client.clone(), engine.clone()).await.contains(&"The user likes jazz.".to_owned()));

    // From a session the engine keeps: the session's user is the scope.
    let created: Value = client
        .post(format!("{engine}/sessions?sessionId=trip"))
        .json(&json!({"userId": "bob"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(created["done"], true, "{created}");
    let event = json!({"author": "user", "invocationId": "i1", "timestamp": "2026-11-29T10:00:00Z",
                       "content": {"role": "user", "parts": [{"text": "I am allergic to peanuts"}]}});
    let response = client.post(format!("{engine}/sessions/trip:appendEvent")).json(&event).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // Events before the start time are left out.
    let late = json!({"session": "reasoningEngines/4242/sessions/trip", "startTime": "2100-01-01T00:00:00Z"});
    let (_, operation) = post("memories:generate", json!({"vertexSessionSource": late})).await;
    let finished = done(&client, &base, &operation).await;
    assert_eq!(finished["response"]["generatedMemories"], json!([]), "{finished}");
    let source = json!({"session": "reasoningEngines/4242/sessions/trip"});
    let (status, operation) = post("memories:generate", json!({"vertexSessionSource": source})).await;
    assert_eq!(status, 200, "{operation}");
    let finished = done(&client, &base, &operation).await;
    let name = finished["response"]["generatedMemories"][0]["memory"]["name"].as_str().unwrap().to_owned();
    let bobs: Value = client.get(format!("{base}/v1beta1/{name}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (&bobs["fact"], &bobs["scope"]),
        (&json!("The user is allergic to peanuts."), &json!({"user_id": "bob"}))
    );

    // An engine without a model.
    let body = json!({"scope": {"user_id": "carol"}, "directContentsSource": said("I live in Lisbon")});
    let response =
        client.post(format!("{base}/v1beta1/reasoningEngines/77/memories:generate")).json(&body).send().await.unwrap();
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["error"]["status"], "FAILED_PRECONDITION", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("--memory-model 77="), "{refused}");
}
