//! The Sessions API over gRPC, on the REST address: Google's own Python client runs ADK for Go's
//! steps over gRPC and over REST and must see the same; a tonic client checks what a Go client
//! relies on (operations, `Struct` numbers and nulls, codes, limits) and that both surfaces keep
//! the same sessions.

use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
use agentstate_server::grpc::proto::google::longrunning as lro;
use api::session_service_client::SessionServiceClient;
use pbjson_types::value::Kind;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/go_scenario.py");
const MEMORY_BANK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/memory_bank_scenario.py");
const TOKEN: &str = "grpc-client-token-0123456789";

/// The server of the managed-service tests (REST and gRPC on one port): its `host:port`.
fn start(tokens: Option<&str>) -> String {
    crate::vertex::serve(tokens).trim_start_matches("http://").to_owned()
}

/// Runs the scenario over `transport` against engine `engine`; its results.
fn scenario(address: &str, transport: &str, engine: &str, token: Option<&str>) -> Value {
    crate::vertex::run_script(SCRIPT, &[address, transport, engine], token)
}

async fn rest(address: &str, path: &str) -> Value {
    reqwest::get(format!("http://{address}{path}")).await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googles_client_sees_the_same_over_grpc_and_rest() {
    let address = start(None);
    let (a, b) = (address.clone(), address.clone());
    let grpc = tokio::task::spawn_blocking(move || scenario(&a, "grpc", "101", None)).await.unwrap();
    let over_rest = tokio::task::spawn_blocking(move || scenario(&b, "rest", "102", None)).await.unwrap();
    for (step, theirs) in over_rest.as_object().unwrap() {
        if !step.starts_with('_') {
            assert_eq!(&grpc[step], theirs, "step {step}: gRPC (left) vs REST");
        }
    }
    // The spot checks the comparison stands on.
    assert_eq!(grpc["create_operation_shape"], true);
    assert_eq!(grpc["events"].as_array().unwrap().len(), 3, "the partial event is not stored");
    assert_eq!(grpc["events_since"], json!(["model/inv-1", "model/inv-2"]), "a local-offset filter, inclusive");
    assert_eq!(grpc["second_state"], json!({"app:flag": true, "user:color": "blue"}));
    assert_eq!(grpc["other_user_state"], json!({"app:flag": true}));
    assert_eq!(grpc["listed_u1"]["count"], 5);
    assert_eq!(grpc["list_pages"], 3);
    assert_eq!(grpc["concurrent_user_keys"].as_array().unwrap().len(), 16, "no user: key lost");
    assert_eq!(grpc["updated"]["displayName"], "Trip");
    assert_eq!(
        grpc["state_replaced"],
        json!({"k": 9.0, "extra": [1.0, "two"], "user:color": "blue", "app:flag": true})
    );
    for (step, code) in [("missing_get", 404), ("missing_append", 404), ("get_deleted", 404), ("unknown_mask", 400)] {
        assert_eq!(grpc[step]["error"], code, "{step}: {}", grpc[step]);
    }
    for step in ["malformed_get", "malformed_parent", "event_without_author"] {
        assert_eq!(grpc[step]["error"], 400, "{step}: {}", grpc[step]);
    }
    assert_eq!(grpc["delete_done"], true);

    // Written over gRPC, read over the ADK routes and REST: whole numbers are integers.
    let name = grpc["_first_session"].as_str().unwrap();
    let id = name.rsplit('/').next().unwrap();
    let adk = rest(&address, &format!("/apps/101/users/u1/sessions/{id}")).await;
    assert_eq!(adk["state"]["k"], json!(9));
    assert!(adk["state"]["k"].is_u64(), "{}", adk["state"]);
    assert_eq!(adk["state"]["extra"], json!([1, "two"]));
    assert_eq!(adk["state"]["user:color"], "blue");
    let first = &adk["events"][0];
    assert_eq!(first["content"]["parts"][1]["inlineData"]["mimeType"], "image/png");
    assert_eq!(
        first["content"]["parts"][3]["functionCall"]["args"],
        json!({"q": "x", "n": 3, "nested": {"a": [1, null, true]}})
    );
    assert_eq!(first["content"]["parts"][5]["executableCode"]["language"], "PYTHON");
    assert_eq!(first["actions"]["artifactDelta"], json!({"report.pdf": 0, "img.png": 3}), "version 0 survives");
    assert_eq!(first["turnComplete"], true);
    assert_eq!(first["branch"], "root.helper");
    let vertex = rest(&address, &format!("/v1beta1/{name}")).await;
    assert_eq!(vertex["sessionState"], adk["state"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googles_client_with_a_token_and_without_one() {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["201"]}}]}}"#);
    let address = start(Some(&tokens));
    let run = tokio::task::spawn_blocking(move || scenario(&address, "grpc", "201", Some(TOKEN))).await.unwrap();
    assert_eq!(run["concurrent_user_keys"].as_array().unwrap().len(), 16);
    assert_eq!(run["no_token"]["error"], 401, "{}", run["no_token"]);
}

async fn client(address: &str) -> SessionServiceClient<Channel> {
    SessionServiceClient::new(Channel::from_shared(format!("http://{address}")).unwrap().connect().await.unwrap())
}

fn number(value: f64) -> pbjson_types::Value {
    pbjson_types::Value { kind: Some(Kind::NumberValue(value)) }
}

fn event(delta: &[(&str, pbjson_types::Value)]) -> api::SessionEvent {
    api::SessionEvent {
        author: "user".into(),
        invocation_id: "i1".into(),
        timestamp: Some(pbjson_types::Timestamp { seconds: 4_000_000_000, nanos: 0 }),
        actions: Some(api::EventActions {
            state_delta: Some(pbjson_types::Struct {
                fields: delta.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tonic_client_and_what_go_relies_on() {
    let address = start(None);
    let mut sessions = client(&address).await;
    let parent = "reasoningEngines/301".to_owned();

    // Create: a done operation named after the session, the session packed as an Any.
    let created = sessions
        .create_session(api::CreateSessionRequest {
            parent: parent.clone(),
            session: Some(api::Session { user_id: "u".into(), ..Default::default() }),
            session_id: "s1".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.name.rsplit_once("/operations/").unwrap().0, "reasoningEngines/301/sessions/s1");
    assert!(created.done);
    let Some(lro::operation::Result::Response(any)) = &created.result else { panic!("{created:?}") };
    assert_eq!(any.type_url, "type.googleapis.com/google.cloud.aiplatform.v1beta1.Session");
    let packed: api::Session = prost::Message::decode(any.value.as_ref()).unwrap();
    assert_eq!((packed.name.as_str(), packed.user_id.as_str()), ("reasoningEngines/301/sessions/s1", "u"));

    // GetOperation answers it again; the same id again is refused.
    let channel = Channel::from_shared(format!("http://{address}")).unwrap().connect().await.unwrap();
    let mut operations = lro::operations_client::OperationsClient::new(channel);
    let again = operations.get_operation(lro::GetOperationRequest { name: created.name.clone() }).await.unwrap();
    assert!(
        matches!(again.into_inner().result, Some(lro::operation::Result::Response(a)) if a.type_url == any.type_url)
    );
    let taken = sessions
        .create_session(api::CreateSessionRequest {
            parent: parent.clone(),
            session: Some(api::Session { user_id: "other".into(), ..Default::default() }),
            session_id: "s1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(taken.code(), Code::InvalidArgument, "as the managed service answers v1beta1: {taken:?}");

    // Numbers and nulls: whole numbers read as integers over REST; integers beyond 2^53 written
    // over REST read as the nearest double; nulls are NULL_VALUE, never a value of no kind.
    let http = reqwest::Client::new();
    let put = http
        .post(format!("http://{address}/apps/301/users/u/sessions/s2"))
        .json(&json!({"big": 9_007_199_254_740_993_u64, "none": null, "deep": {"n": null}}))
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success());
    let name = "reasoningEngines/301/sessions/s2".to_owned();
    let read = sessions.get_session(api::GetSessionRequest { name: name.clone() }).await.unwrap().into_inner();
    let state = read.session_state.unwrap().fields;
    assert_eq!(state["big"].kind, Some(Kind::NumberValue(9_007_199_254_740_992.0)));
    assert_eq!(state["none"].kind, Some(Kind::NullValue(0)));
    let Some(Kind::StructValue(deep)) = &state["deep"].kind else { panic!("{state:?}") };
    assert_eq!(deep.fields["n"].kind, Some(Kind::NullValue(0)));
    let appended = sessions
        .append_event(api::AppendEventRequest {
            name: name.clone(),
            event: Some(event(&[("whole", number(2.0)), ("half", number(2.5)), ("neg", number(-7.0))])),
        })
        .await;
    appended.unwrap();
    let adk = rest(&address, "/apps/301/users/u/sessions/s2").await;
    assert_eq!(adk["state"]["big"], json!(9_007_199_254_740_993_u64), "exact over REST");
    assert!(adk["state"]["whole"].is_i64() && adk["state"]["neg"].is_i64(), "{}", adk["state"]);
    assert_eq!(adk["state"]["half"], json!(2.5));

    // Refusals write nothing: NaN in a Struct, a missing event, an oversized message.
    let nan = sessions
        .append_event(api::AppendEventRequest { name: name.clone(), event: Some(event(&[("x", number(f64::NAN))])) })
        .await
        .unwrap_err();
    assert_eq!(nan.code(), Code::InvalidArgument, "{nan:?}");
    let none = sessions.append_event(api::AppendEventRequest { name: name.clone(), event: None }).await.unwrap_err();
    assert_eq!(none.code(), Code::InvalidArgument);
    // A Struct of the wrong shape: the ADK event in raw_event with content a string.
    let mut wrong = event(&[]);
    wrong.raw_event = Some(pbjson_types::Struct {
        fields: [("content".to_owned(), pbjson_types::Value::from("not a content".to_owned()))].into(),
    });
    let wrong = sessions.append_event(api::AppendEventRequest { name: name.clone(), event: Some(wrong) }).await;
    assert_eq!(wrong.unwrap_err().code(), Code::InvalidArgument);
    let mut huge = event(&[]);
    huge.content = Some(api::Content {
        role: "user".into(),
        parts: vec![api::Part { data: Some(api::part::Data::Text("x".repeat(2 << 20))), ..Default::default() }],
    });
    let oversized =
        sessions.append_event(api::AppendEventRequest { name: name.clone(), event: Some(huge) }).await.unwrap_err();
    assert_eq!(oversized.code(), Code::ResourceExhausted, "{oversized:?}");
    let events = sessions
        .list_events(api::ListEventsRequest { parent: name.clone(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(events.session_events.len(), 1, "only the accepted append is stored");

    // Update under a mask; an unknown mask field is refused.
    let updated = sessions
        .update_session(api::UpdateSessionRequest {
            session: Some(api::Session {
                name: name.clone(),
                display_name: "Named".into(),
                labels: [("k".to_owned(), "v".to_owned())].into(),
                ..Default::default()
            }),
            update_mask: Some(pbjson_types::FieldMask { paths: vec!["display_name".into(), "labels".into()] }),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((updated.display_name.as_str(), updated.labels["k"].as_str()), ("Named", "v"));
    let unknown = sessions
        .update_session(api::UpdateSessionRequest {
            session: Some(api::Session { name: name.clone(), ..Default::default() }),
            update_mask: Some(pbjson_types::FieldMask { paths: vec!["user_id_typo".into()] }),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::InvalidArgument);

    // Delete: a done operation holding Empty, which GetOperation answers too; then NOT_FOUND.
    let deleted = sessions.delete_session(api::DeleteSessionRequest { name: name.clone() }).await.unwrap().into_inner();
    let Some(lro::operation::Result::Response(empty)) = &deleted.result else { panic!("{deleted:?}") };
    assert_eq!(empty.type_url, "type.googleapis.com/google.protobuf.Empty");
    let asked = operations.get_operation(lro::GetOperationRequest { name: deleted.name.clone() }).await.unwrap();
    assert!(asked.into_inner().done);
    let gone = sessions.get_session(api::GetSessionRequest { name }).await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);

    // REST is still served on the same address, and counts calls apart.
    let metrics = http.get(format!("http://{address}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"agentstate_grpc_requests_total{method="GetSession",code="Ok"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"agentstate_grpc_requests_total{method="AppendEvent",code="InvalidArgument"} 3"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_metadata_a_call_is_unauthenticated_and_a_grant_is_kept() {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["401"], "users": ["u"]}}]}}"#);
    let address = start(Some(&tokens));
    let mut sessions = client(&address).await;
    let get = |name: &str, token: Option<&str>, key: &'static str| {
        let mut request = tonic::Request::new(api::GetSessionRequest { name: name.into() });
        if let Some(token) = token {
            request.metadata_mut().insert(key, token.parse().unwrap());
        }
        request
    };
    let status = sessions.get_session(get("reasoningEngines/401/sessions/x", None, "")).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    let status = sessions
        .get_session(get("reasoningEngines/401/sessions/x", Some("Bearer wrong-token-000000000"), "authorization"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let status =
        sessions.get_session(get("reasoningEngines/999/sessions/x", Some(TOKEN), "x-goog-api-key")).await.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "another engine: {status:?}");
    let mut create = tonic::Request::new(api::CreateSessionRequest {
        parent: "reasoningEngines/401".into(),
        session: Some(api::Session { user_id: "someone-else".into(), ..Default::default() }),
        session_id: String::new(),
    });
    create.metadata_mut().insert("x-goog-api-key", TOKEN.parse().unwrap());
    assert_eq!(sessions.create_session(create).await.unwrap_err().code(), Code::PermissionDenied, "another user");
    let status =
        sessions.get_session(get("reasoningEngines/401/sessions/x", Some(TOKEN), "x-goog-api-key")).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "the token is good; the session is missing");
}

/// `ListEvents` without a page size answers Google's default page of 100 over gRPC (a gRPC client
/// follows page tokens; a whole long history in one reply would pass the 4 MB gRPC clients accept
/// by default), while REST answers the whole history in one page (ADK for TypeScript's and ADK for
/// Java's clients read one page).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_size_left_out_is_googles_default_over_grpc_and_the_whole_history_over_rest() {
    let address = start(None);
    let mut sessions = client(&address).await;
    let parent = "reasoningEngines/302".to_owned();
    sessions
        .create_session(api::CreateSessionRequest {
            parent: parent.clone(),
            session: Some(api::Session { user_id: "u".into(), ..Default::default() }),
            session_id: "long".into(),
        })
        .await
        .unwrap();
    let name = format!("{parent}/sessions/long");
    for _ in 0..130 {
        sessions.append_event(api::AppendEventRequest { name: name.clone(), event: Some(event(&[])) }).await.unwrap();
    }
    let first =
        sessions.list_events(api::ListEventsRequest { parent: name.clone(), ..Default::default() }).await.unwrap();
    let first = first.into_inner();
    assert_eq!(first.session_events.len(), 100);
    assert!(!first.next_page_token.is_empty());
    let second = sessions
        .list_events(api::ListEventsRequest {
            parent: name.clone(),
            page_token: first.next_page_token,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((second.session_events.len(), second.next_page_token.as_str()), (30, ""));
    let over_rest = rest(&address, &format!("/v1beta1/{name}/events")).await;
    assert_eq!(over_rest["sessionEvents"].as_array().map(Vec::len), Some(130));
    assert!(over_rest.get("nextPageToken").is_none(), "{over_rest}");
}

/// Memory Bank over gRPC: Google's own client runs the same calls over gRPC and over REST and
/// must see the same (operations polled through `google.longrunning.Operations` on the one,
/// the REST operation route on the other); with tokens, a call without one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googles_memory_bank_client_sees_the_same_over_grpc_and_rest() {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["201", "202"]}}]}}"#);
    let address = start(Some(&tokens));
    let (a, b) = (address.clone(), address.clone());
    let run = |address: String, transport: &'static str, engine: &'static str| {
        tokio::task::spawn_blocking(move || {
            crate::vertex::run_script(MEMORY_BANK, &[&address, transport, engine], Some(TOKEN))
        })
    };
    let grpc = run(a, "grpc", "201").await.unwrap();
    let over_rest = run(b, "rest", "202").await.unwrap();
    for (step, theirs) in over_rest.as_object().unwrap() {
        assert_eq!(&grpc[step], theirs, "step {step}: gRPC (left) vs REST");
    }
    assert_eq!(grpc.as_object().unwrap().len(), over_rest.as_object().unwrap().len() + 1, "and no_token over gRPC");
    // The spot checks the comparison stands on.
    assert_eq!((&grpc["create_operation_shape"], &grpc["generated_id"]), (&json!(true), &json!(true)), "{grpc}");
    let created = &grpc["created"];
    assert_eq!(
        created["name"], "projects/demo/locations/us-central1/reasoningEngines/ENGINE/memories/tea",
        "{created}"
    );
    assert_eq!(created["scope"], json!({"app_name": "ENGINE", "user_id": "alice"}));
    assert_eq!(created["topics"], json!([{"managedMemoryTopic": "USER_PREFERENCES"}]));
    assert_eq!(created["metadata"]["n"], json!({"doubleValue": 2.5}));
    assert_eq!(created["expireTime"], "T", "a time to live sets the expiry: {created}");
    assert_eq!(
        (&grpc["updated"]["fact"], &grpc["updated"]["displayName"]),
        (&json!("Alice likes oolong tea"), &json!("tea"))
    );
    let generated = grpc["generated"]["generatedMemories"].as_array().unwrap();
    assert_eq!(generated.iter().map(|g| g["action"].as_str().unwrap()).collect::<Vec<_>>(), ["CREATED", "CREATED"]);
    assert_eq!(
        grpc["listed"],
        json!(["Alice flies to Lisbon", "Alice has a cat", "Alice likes oolong tea", "Bob likes coffee"])
    );
    assert_eq!(grpc["near"][0], json!(["Alice likes oolong tea", 0.0]), "{grpc}");
    assert_eq!(grpc["simple"], json!(["Alice flies to Lisbon", "Alice has a cat", "Alice likes oolong tea"]));
    assert_eq!(grpc["bob_only"], json!(["Bob likes coffee"]));
    assert_eq!(grpc["deleted"], true);
    for (step, code) in [
        ("get_deleted", 404),
        ("empty_fact", 400),
        ("no_scope", 400),
        ("taken_id", 409),
        ("deleted_id", 400),
        ("malformed_name", 400),
        ("no_model", 400),
        ("no_token", 401),
    ] {
        assert_eq!(grpc[step]["error"], code, "{step}: {}", grpc[step]);
    }
    assert!(grpc["no_model"]["message"].as_str().unwrap().contains("--memory-model"), "{grpc}");
}

/// A generation from conversations over gRPC: a running operation, polled through
/// `google.longrunning.Operations` until done with the memories the engine's model extracted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generation_runs_behind_an_operation_polled_over_grpc() {
    use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1::memory_bank_service_client::MemoryBankServiceClient;
    use prost::Message;
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let base = crate::memory_bank::serve_store(format!("sqlite://{}/bank.db", dir.display()), "303");
    let channel = Channel::from_shared(base).unwrap().connect().await.unwrap();
    let authorized = |mut request: tonic::metadata::MetadataMap| {
        request.insert("authorization", format!("Bearer {}", crate::memory_bank::TOKEN).parse().unwrap());
        request
    };
    let parent = "projects/p/locations/l/reasoningEngines/303";
    let said = api::Content {
        role: "user".into(),
        parts: vec![api::Part { data: Some(api::part::Data::Text("I live in Lisbon".into())), ..Default::default() }],
    };
    let source = api::generate_memories_request::DirectContentsSource {
        events: vec![api::generate_memories_request::direct_contents_source::Event { content: Some(said) }],
    };
    let mut request = tonic::Request::new(api::GenerateMemoriesRequest {
        parent: parent.into(),
        source: Some(api::generate_memories_request::Source::DirectContentsSource(source)),
        scope: [("app_name".to_owned(), "303".to_owned()), ("user_id".to_owned(), "ana".to_owned())].into(),
        ..Default::default()
    });
    *request.metadata_mut() = authorized(request.metadata().clone());
    let started = MemoryBankServiceClient::new(channel.clone()).generate_memories(request).await.unwrap().into_inner();
    assert!(started.name.starts_with("projects/p/locations/l/operations/"), "{started:?}");
    let mut operations = lro::operations_client::OperationsClient::new(channel);
    let mut done = None;
    for _ in 0..300 {
        let mut poll = tonic::Request::new(lro::GetOperationRequest { name: started.name.clone() });
        *poll.metadata_mut() = authorized(poll.metadata().clone());
        let operation = operations.get_operation(poll).await.unwrap().into_inner();
        if operation.done {
            done = Some(operation);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let Some(lro::operation::Result::Response(any)) = done.expect("done in 30 s").result else { panic!("no response") };
    assert_eq!(any.type_url, "type.googleapis.com/google.cloud.aiplatform.v1beta1.GenerateMemoriesResponse");
    let generated = api::GenerateMemoriesResponse::decode(any.value).unwrap();
    let memory = generated.generated_memories[0].memory.clone().unwrap();
    assert!(memory.name.starts_with(&format!("{parent}/memories/")), "{generated:?}");
    assert_eq!(
        generated.generated_memories[0].action(),
        api::generate_memories_response::generated_memory::Action::Created
    );
    // Without the token, the operation is not answered.
    let refused = operations.get_operation(lro::GetOperationRequest { name: started.name }).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
}
