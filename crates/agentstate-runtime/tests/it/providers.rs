//! The providers against local mock servers (wiremock): the exact request bodies they send, and
//! how they read plain, streamed, tool-calling and failed responses.

use std::sync::Arc;

use agentstate::{Content, Value};
use agentstate_runtime::model::{LlmRequest, Model, ModelError, ToolDeclaration};
use agentstate_runtime::providers::{Gemini, OpenAiCompatible};
use agentstate_runtime::{FunctionTool, LlmAgent, RunRequest, Runner, RuntimeError};
use futures_util::StreamExt;
use serde_json::json;
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{create, run_ok, runner_of, services, stored};

fn sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn weather_tool() -> FunctionTool {
    FunctionTool::new(
        "get_weather",
        "Weather of a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |args, ctx| {
            ctx.state_mut().set("last_city", args["city"].clone());
            Ok(json!({"forecast": "sunny"}))
        },
    )
}

fn weather_declaration() -> Value {
    json!({"name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

#[tokio::test]
async fn gemini_function_calling_round_trip() {
    let server = MockServer::start().await;
    let url = "/v1beta/models/gemini-test:generateContent";
    let first_request = json!({
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "systemInstruction": {"parts": [{"text": "You help Ann.\n\nYou are an agent. Your internal name is \"weather_agent\"."}]},
        "tools": [{"functionDeclarations": [weather_declaration()]}],
        "generationConfig": {"temperature": 0.5}
    });
    Mock::given(method("POST"))
        .and(path(url))
        .and(header("x-goog-api-key", "test-key"))
        .and(body_json(&first_request))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 15},
            "modelVersion": "gemini-test-001"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let second_request = json!({
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"forecast": "sunny"}}}]}
        ],
        "systemInstruction": {"parts": [{"text": "You help Ann.\n\nYou are an agent. Your internal name is \"weather_agent\"."}]},
        "tools": [{"functionDeclarations": [weather_declaration()]}],
        "generationConfig": {"temperature": 0.5}
    });
    Mock::given(method("POST"))
        .and(path(url))
        .and(body_json(&second_request))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny in Paris."}]}, "finishReason": "STOP"}]
        })))
        .expect(1)
        .mount(&server)
        .await;

    let (_, service) = services().await.remove(1);
    create(&service, "s").await;
    let model = Gemini::new("gemini-test", "test-key").base_url(&server.uri());
    let runner = runner_of(
        &service,
        LlmAgent::builder("weather_agent", model)
            .instruction("You help {user:name}.")
            .temperature(0.5)
            .tool(weather_tool())
            .output_key("answer"),
    );
    let request =
        RunRequest::new("u", "s", Content::text("user", "Weather in Paris?")).state("user:name", json!("Ann"));
    let events: Vec<_> = runner.run_request(request).map(Result::unwrap).collect().await;
    assert_eq!(events.len(), 3);
    assert_eq!(events[0].extra["model_version"], json!("gemini-test-001"));
    assert_eq!(events[0].extra["usage_metadata"]["totalTokenCount"], json!(15));
    let session = stored(&service, "s").await;
    assert_eq!(session.state().get("answer"), Some(&json!("Sunny in Paris.")));
    assert_eq!(session.state().get("last_city"), Some(&json!("Paris")));
    server.verify().await;
}

#[tokio::test]
async fn gemini_streams_partials_then_the_whole_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-test:streamGenerateContent"))
        .and(query_param("alt", "sse"))
        .respond_with(sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Once "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "upon a time."}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
                   "usageMetadata": {"totalTokenCount": 7}}),
        ]))
        .expect(1)
        .mount(&server)
        .await;
    let model = Gemini::new("gemini-test", "k").base_url(&server.uri());
    let request = LlmRequest { contents: vec![Content::text("user", "story")], ..LlmRequest::default() };
    let responses: Vec<_> = model.generate(request, true).await.unwrap().map(Result::unwrap).collect().await;
    let texts: Vec<_> = responses.iter().map(|r| (r.partial, r.content.as_ref().unwrap().joined_text())).collect();
    assert_eq!(
        texts,
        [(true, "Once ".to_owned()), (true, "upon a time.".to_owned()), (false, "Once upon a time.".to_owned())]
    );
    let last = responses.last().unwrap();
    assert_eq!(
        (last.finish_reason.as_deref(), last.usage.clone()),
        (Some("STOP"), Some(json!({"totalTokenCount": 7})))
    );
}

#[tokio::test]
async fn provider_errors_name_the_status_and_the_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_string(r#"{"error": {"message": "Quota exceeded"}}"#))
        .mount(&server)
        .await;
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    for model in [
        Arc::new(Gemini::new("g", "k").base_url(&server.uri()).retries(0)) as Arc<dyn Model>,
        Arc::new(OpenAiCompatible::new("o", &server.uri()).retries(0)),
    ] {
        let agent = LlmAgent::builder("a", model).build().unwrap();
        let runner = Runner::new("app", agent, service.clone());
        let items: Vec<_> = runner.run("u", "s", Content::text("user", "hi")).collect().await;
        let error = items.into_iter().last().unwrap().unwrap_err();
        assert!(matches!(&error, RuntimeError::Model { source: ModelError::Status { status: 429, .. }, .. }));
        assert!(error.to_string().contains("Quota exceeded"), "{error}");
    }
    // Nothing listening: a transport error, not a hang.
    let closed = OpenAiCompatible::new("o", "http://127.0.0.1:9/v1").retries(0);
    let err = closed.generate(LlmRequest::default(), false).await.err().unwrap();
    assert!(matches!(err, ModelError::Transport { .. }), "{err}");
}

#[tokio::test]
async fn openai_function_calling_round_trip() {
    let server = MockServer::start().await;
    let tools = json!([{"type": "function", "function": weather_declaration()}]);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_json(json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be helpful.\n\nYou are an agent. Your internal name is \"assistant\"."},
                {"role": "user", "content": "Weather in Paris?"}
            ],
            "tools": tools,
            "max_tokens": 100
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "model": "gpt-test-2025",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_json(json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be helpful.\n\nYou are an agent. Your internal name is \"assistant\"."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"forecast\":\"sunny\"}"}
            ],
            "tools": tools,
            "max_tokens": 100
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny."}}]
        })))
        .expect(1)
        .mount(&server)
        .await;

    let (_, service) = services().await.remove(1);
    create(&service, "s").await;
    let model = OpenAiCompatible::new("gpt-test", &format!("{}/v1/", server.uri())).api_key("sk-test");
    let runner = runner_of(
        &service,
        LlmAgent::builder("assistant", model)
            .instruction("Be helpful.")
            .max_output_tokens(100)
            .tool(weather_tool())
            .output_key("answer"),
    );
    let events = run_ok(&runner, "s", "Weather in Paris?").await;
    let call = events[0].content.as_ref().unwrap().parts()[0].function_call.clone().unwrap();
    assert_eq!(call.id.as_deref(), Some("call_1"), "the provider's call id is kept");
    assert_eq!(events[0].extra["finish_reason"], json!("tool_calls"));
    let session = stored(&service, "s").await;
    assert_eq!(session.state().get("answer"), Some(&json!("Sunny.")));
    assert_eq!(session.state().get("last_city"), Some(&json!("Paris")));
    server.verify().await;
}

#[tokio::test]
async fn openai_streams_text_and_tool_calls_in_pieces() {
    let server = MockServer::start().await;
    let chunk = |delta: Value, finish: Value| json!({"model": "m-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": "Let me "}), Value::Null),
        chunk(json!({"content": "check."}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        json!({"model": "m-1", "choices": [], "usage": {"total_tokens": 42}}),
    ]
    .into_iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>();
    events.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(wiremock::matchers::body_partial_json(json!({"stream": true, "stream_options": {"include_usage": true}})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(events, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let model = OpenAiCompatible::new("m", &format!("{}/v1", server.uri()));
    let request = LlmRequest {
        contents: vec![Content::text("user", "weather and time in Oslo")],
        tools: vec![ToolDeclaration { name: "get_weather".into(), description: String::new(), parameters: json!({}) }],
        ..LlmRequest::default()
    };
    let responses: Vec<_> = model.generate(request, true).await.unwrap().map(Result::unwrap).collect().await;
    assert_eq!(responses.iter().filter(|r| r.partial).count(), 2);
    let last = responses.last().unwrap();
    assert!(!last.partial);
    assert_eq!(last.content.as_ref().unwrap().joined_text(), "Let me check.");
    let calls: Vec<_> = last
        .function_calls()
        .map(|c| (c.id.clone().unwrap(), c.name.clone().unwrap(), Value::Object(c.args.clone().unwrap())))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a".to_owned(), "get_weather".to_owned(), json!({"city": "Oslo"})),
            ("call_b".to_owned(), "get_time".to_owned(), json!({}))
        ]
    );
    assert_eq!(
        (last.usage.clone(), last.finish_reason.as_deref()),
        (Some(json!({"total_tokens": 42})), Some("tool_calls"))
    );
}

#[tokio::test]
async fn a_failure_inside_a_stream_is_an_error_not_an_empty_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": "Par"}}]}),
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}),
        ]))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/g:streamGenerateContent"))
        .respond_with(sse(&[
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        ]))
        .mount(&server)
        .await;
    let request = LlmRequest { contents: vec![Content::text("user", "hi")], ..LlmRequest::default() };
    let openai = OpenAiCompatible::new("m", &format!("{}/v1", server.uri()));
    let items: Vec<_> = openai.generate(request.clone(), true).await.unwrap().collect().await;
    assert!(items[0].as_ref().unwrap().partial, "the chunk before the failure is shown");
    let error = items.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(error.contains("The server had an error"), "{error}");
    let gemini = Gemini::new("g", "k").base_url(&server.uri());
    let items: Vec<_> = gemini.generate(request, true).await.unwrap().collect().await;
    let error = items.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(error.contains("The model is overloaded."), "{error}");
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_then_reported() {
    let server = MockServer::start().await;
    // Overloaded once, then fine: the caller sees only the answer.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "0").set_body_string("overloaded"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Fine now."}}]
        })))
        .expect(1)
        .mount(&server)
        .await;
    let model = OpenAiCompatible::new("m", &format!("{}/v1", server.uri()));
    let request = LlmRequest { contents: vec![Content::text("user", "hi")], ..LlmRequest::default() };
    let answer: Vec<_> = model.generate(request.clone(), false).await.unwrap().collect().await;
    assert_eq!(answer[0].as_ref().unwrap().content.as_ref().unwrap().joined_text(), "Fine now.");
    server.verify().await;

    // Always rate-limited: tried 1 + retries times, then the status and message are reported.
    let limited = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0").set_body_string("slow down"))
        .expect(3)
        .mount(&limited)
        .await;
    let model = Gemini::new("g", "k").base_url(&limited.uri()).retries(2);
    let err = model.generate(request.clone(), false).await.err().unwrap();
    assert!(matches!(&err, ModelError::Status { status: 429, body, .. } if body == "slow down"), "{err}");
    limited.verify().await;

    // A client error is not retried.
    let refused = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad"))
        .expect(1)
        .mount(&refused)
        .await;
    let model = Gemini::new("g", "k").base_url(&refused.uri());
    assert!(model.generate(request, false).await.is_err());
    refused.verify().await;
}

#[tokio::test]
async fn api_keys_never_show_in_debug_or_errors() {
    const KEY: &str = "sk-very-secret-key-0123456789";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_string(r#"{"error": {"message": "Invalid API key"}}"#))
        .mount(&server)
        .await;
    let gemini = Gemini::new("g", KEY).base_url(&server.uri()).retries(0);
    let openai = OpenAiCompatible::new("o", &server.uri()).api_key(KEY).retries(0);
    let from_env =
        Gemini::from_lookup("g", |name| (name == "GEMINI_API_KEY").then(|| KEY.to_owned())).unwrap().retries(0);
    for shown in [format!("{gemini:?}"), format!("{openai:?}"), format!("{from_env:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    let agent = LlmAgent::builder("a", gemini.clone()).build().unwrap();
    assert!(!format!("{agent:?}").contains(KEY));
    // The keys are sent (the server sees them) but the failures do not repeat them.
    for model in [Arc::new(gemini) as Arc<dyn Model>, Arc::new(openai)] {
        let err = model.generate(LlmRequest::default(), false).await.err().unwrap();
        assert!(matches!(err, ModelError::Status { status: 401, .. }), "{err}");
        assert!(!err.to_string().contains(KEY) && !format!("{err:?}").contains(KEY), "{err:?}");
    }
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers.get("x-goog-api-key").unwrap(), KEY);
    assert_eq!(requests[1].headers.get("authorization").unwrap(), &format!("Bearer {KEY}"));
}
