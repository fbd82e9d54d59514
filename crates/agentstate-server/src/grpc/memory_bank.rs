//! `google.cloud.aiplatform.v1beta1.MemoryBankService`: each method writes its request as the
//! REST surface's body, calls the REST handler, and reads its JSON answer as the reply, so both
//! surfaces keep the same memories by the same rules, scopes and tokens.

use axum::Json;
use axum::extract::Query;
use axum::http::HeaderMap;
use bytes::Bytes;
use prost::Message;
use serde_json::{Map, Value};
use tonic::{Request, Response, Status};

use super::convert::{Name, admit, authenticate, from_json, to_json};
use super::proto::google::cloud::aiplatform::v1beta1 as api;
use super::proto::google::longrunning::{Operation, operation};
use super::proto::google::rpc;
use super::sessions::{EMPTY_TYPE, counted};
use crate::limits::Body;
use crate::routes::vertex::memories::{self, CreateQuery, MemoryCall, PatchQuery};
use crate::routes::vertex::{GoogleError, Page};
use crate::state::AppState;

/// The `@type` of a packed memory.
pub(super) const MEMORY_TYPE: &str = "type.googleapis.com/google.cloud.aiplatform.v1beta1.Memory";

/// The service, over the server's state.
#[derive(Clone)]
pub(crate) struct MemoryBank {
    state: AppState,
}

impl MemoryBank {
    pub(crate) fn new(state: AppState) -> Self {
        Self { state }
    }

    /// A call on the engine `name` (the request's `field`) names. Authenticated first: without a
    /// token, a malformed name is still `UNAUTHENTICATED`.
    async fn on_engine(&self, headers: &HeaderMap, name: &str, field: &str) -> Result<MemoryCall, Status> {
        let permit = authenticate(&self.state, headers).await?;
        let engine = Name::engine(name, field)?;
        admit(&permit, &engine)?;
        Ok(MemoryCall::of(self.state.clone(), engine, permit, String::new()))
    }

    /// A call on the memory `name` names; as [`Self::on_engine`].
    async fn on_memory(&self, headers: &HeaderMap, name: &str, field: &str) -> Result<MemoryCall, Status> {
        let permit = authenticate(&self.state, headers).await?;
        let (engine, memory) = Name::memory(name, field)?;
        admit(&permit, &engine)?;
        Ok(MemoryCall::of(self.state.clone(), engine, permit, memory))
    }
}

/// A request's metadata (as headers) and message.
fn open<T>(request: Request<T>) -> (HeaderMap, T) {
    (request.metadata().clone().into_headers(), request.into_inner())
}

/// A REST body of these fields.
fn body(fields: &Map<String, Value>) -> Result<Body, Status> {
    let bytes = serde_json::to_vec(fields).map_err(|e| Status::internal(e.to_string()))?;
    Ok(Body(Bytes::from(bytes)))
}

/// A memory's writable fields as a REST body: the output-only ones left out.
fn memory_body(memory: &api::Memory, field: &str) -> Result<Map<String, Value>, Status> {
    let mut fields = to_json(memory, field)?;
    for output in ["name", "createTime", "updateTime"] {
        fields.remove(output);
    }
    Ok(fields)
}

/// The REST handler's answer.
fn answered(reply: Result<Json<Value>, GoogleError>) -> Result<Value, Status> {
    Ok(reply?.0)
}

/// A REST operation's JSON as the operation message: its response packed as the type it names
/// (a memory, a generation's memories, or nothing), or its error.
pub(super) fn operation_of(mut json: Value) -> Result<Operation, Status> {
    let name = json["name"].as_str().unwrap_or_default().to_owned();
    let done = json["done"].as_bool().unwrap_or(false);
    let result = if let Some(error) = json.get("error") {
        let code = error["code"].as_i64().and_then(|c| i32::try_from(c).ok()).unwrap_or(13);
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        Some(operation::Result::Error(rpc::Status { code, message, details: Vec::new() }))
    } else if let Some(response) = json.get_mut("response").map(Value::take) {
        Some(operation::Result::Response(packed(response)?))
    } else {
        None
    };
    Ok(Operation { name, metadata: None, done, result })
}

/// A REST operation's `response` (its type in `@type`) packed as `google.protobuf.Any`.
fn packed(mut response: Value) -> Result<pbjson_types::Any, Status> {
    let type_url = match response.as_object_mut().and_then(|fields| fields.remove("@type")) {
        Some(Value::String(type_url)) => type_url,
        _ => EMPTY_TYPE.to_owned(),
    };
    let value = if type_url.ends_with(".Memory") {
        from_json::<api::Memory>(response)?.encode_to_vec()
    } else if type_url.ends_with(".GenerateMemoriesResponse") {
        from_json::<api::GenerateMemoriesResponse>(response)?.encode_to_vec()
    } else {
        Vec::new()
    };
    Ok(pbjson_types::Any { type_url, value: value.into() })
}

#[tonic::async_trait]
impl api::memory_bank_service_server::MemoryBankService for MemoryBank {
    async fn create_memory(&self, request: Request<api::CreateMemoryRequest>) -> Result<Response<Operation>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "CreateMemory", async {
            let call = self.on_engine(&headers, &request.parent, "parent").await?;
            let fields = memory_body(&request.memory.unwrap_or_default(), "memory")?;
            let query = CreateQuery { memory_id: Some(request.memory_id).filter(|id| !id.is_empty()) };
            operation_of(answered(memories::create(call, Ok(Query(query)), body(&fields)?).await)?)
        })
        .await
    }

    async fn get_memory(&self, request: Request<api::GetMemoryRequest>) -> Result<Response<api::Memory>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "GetMemory", async {
            let call = self.on_memory(&headers, &request.name, "name").await?;
            from_json(answered(memories::get(call).await)?)
        })
        .await
    }

    async fn update_memory(&self, request: Request<api::UpdateMemoryRequest>) -> Result<Response<Operation>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "UpdateMemory", async {
            let memory = request.memory.unwrap_or_default();
            let call = self.on_memory(&headers, &memory.name, "memory.name").await?;
            let mask = request.update_mask.map(|m| m.paths.join(",")).filter(|m| !m.is_empty());
            let fields = memory_body(&memory, "memory")?;
            let query = PatchQuery { update_mask: mask };
            operation_of(answered(memories::patch(call, Ok(Query(query)), body(&fields)?).await)?)
        })
        .await
    }

    async fn list_memories(
        &self,
        request: Request<api::ListMemoriesRequest>,
    ) -> Result<Response<api::ListMemoriesResponse>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "ListMemories", async {
            let call = self.on_engine(&headers, &request.parent, "parent").await?;
            let page = Page {
                filter: Some(request.filter).filter(|f| !f.trim().is_empty()),
                order_by: None,
                page_size: Some(i64::from(request.page_size)).filter(|n| *n > 0),
                page_token: Some(request.page_token).filter(|t| !t.is_empty()),
            };
            from_json(answered(memories::list(call, Ok(Query(page))).await)?)
        })
        .await
    }

    async fn delete_memory(&self, request: Request<api::DeleteMemoryRequest>) -> Result<Response<Operation>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "DeleteMemory", async {
            let call = self.on_memory(&headers, &request.name, "name").await?;
            operation_of(answered(memories::delete(call).await)?)
        })
        .await
    }

    async fn generate_memories(
        &self,
        request: Request<api::GenerateMemoriesRequest>,
    ) -> Result<Response<Operation>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "GenerateMemories", async {
            let call = self.on_engine(&headers, &request.parent, "parent").await?;
            let mut fields = to_json(&request, "request")?;
            fields.remove("parent");
            operation_of(answered(memories::generate(call, body(&fields)?).await)?)
        })
        .await
    }

    async fn retrieve_memories(
        &self,
        request: Request<api::RetrieveMemoriesRequest>,
    ) -> Result<Response<api::RetrieveMemoriesResponse>, Status> {
        let (headers, request) = open(request);
        counted(&self.state, "RetrieveMemories", async {
            let call = self.on_engine(&headers, &request.parent, "parent").await?;
            let mut fields = to_json(&request, "request")?;
            fields.remove("parent");
            from_json(answered(memories::retrieve(call, body(&fields)?).await)?)
        })
        .await
    }
}
