//! `agentstate serve --embeddings`: memory searched by meaning through an embedding provider,
//! here a local mock server that answers deterministic vectors (never the network).

use serde_json::{Value, json};

/// A mock OpenAI-compatible `/embeddings` server: a deterministic vector per text, one dimension
/// per topic (its words counted in the text, synonyms sharing it), and a small constant one.
pub(crate) struct TopicVectors(pub(crate) &'static [&'static [&'static str]]);

impl wiremock::Respond for TopicVectors {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let data: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let text = text.as_str().unwrap().to_lowercase();
                let mut v: Vec<f32> =
                    self.0.iter().map(|ws| ws.iter().filter(|w| text.contains(*w)).count() as f32).collect();
                v.push(0.05);
                json!({"index": i, "embedding": v})
            })
            .collect();
        wiremock::ResponseTemplate::new(200).set_body_json(json!({"data": data}))
    }
}

/// `serve --embeddings`: memories of that app are searched by meaning (mode and similarity floor
/// in the query), other apps by words; vectors never show.
#[tokio::test(flavor = "multi_thread")]
async fn serve_searches_by_meaning_with_an_embedding_provider() {
    let provider = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/v1/embeddings"))
        .and(wiremock::matchers::header("authorization", "Bearer sk-mock"))
        .respond_with(TopicVectors(&[&["car", "automobile", "vehicle"], &["tea", "matcha"]]))
        .mount(&provider)
        .await;
    let spec = format!("cars=openai:topics@{}/v1", provider.uri());
    let (child, addr) = tokio::task::spawn_blocking(move || {
        temp_env_serve(&["--db", "sqlite::memory:", "--addr", "127.0.0.1:0", "--embeddings", &spec])
    })
    .await
    .unwrap();
    let _running = crate::binary::Running(child);
    let client = reqwest::Client::new();
    let base = format!("http://{addr}");
    for app in ["cars", "plain"] {
        let memories = json!({"memories": [{"content": {"parts": [{"text": "I drive an automobile"}]}},
                                           {"content": {"parts": [{"text": "matcha after lunch"}]}}]});
        let url = format!("{base}/apps/{app}/users/u/memories");
        let response = client.post(&url).json(&memories).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let get = |path: String| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let response = client.get(url).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let texts = |body: &Value| -> Vec<String> {
        body["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"]["parts"][0]["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, found) = get("/apps/cars/users/u/memories?query=vehicle&mode=semantic&limit=1".into()).await;
    assert_eq!((status, texts(&found)), (200, vec!["I drive an automobile".to_owned()]));
    assert_eq!(found["memories"][0]["customMetadata"], json!({}), "no vector shows");
    let (_, found) = get("/apps/cars/users/u/memories?query=vehicle&minSimilarity=0.5".into()).await;
    assert_eq!(texts(&found), ["I drive an automobile"], "hybrid by default, floored");
    let (_, found) = get("/apps/cars/users/u/memories?query=vehicle&mode=text".into()).await;
    assert!(texts(&found).is_empty(), "no shared word");
    let (status, body) = get("/apps/plain/users/u/memories?query=vehicle&mode=semantic".into()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("no embedding provider"), "{body}");
    let (status, _) = get("/apps/plain/users/u/memories?mode=fuzzy".into()).await;
    assert_eq!(status, 400, "a bad mode is refused when listing too");
    let (status, body) = get("/apps/cars/users/u/memories?query=vehicle&mode=fuzzy".into()).await;
    assert_eq!(status, 400);
    assert!(body.to_string().contains("not a search mode"), "{body}");
}

/// `serve` with the mock provider's key in the environment (never on the command line).
fn temp_env_serve(options: &[&str]) -> (std::process::Child, String) {
    crate::binary::serve_with_env(options, &[("OPENAI_API_KEY", "sk-mock")])
}
