//! `google.longrunning.Operations`: agentstate's operations are done when they are answered, but
//! a Memory Bank generation, which runs in the background (running, then done with the memories
//! or an error); so asking about one answers it again: a session's with the session (while it
//! exists), a memory's with the memory (while it exists), any other with
//! `google.protobuf.Empty`. Never done without a result, which clients' waits refuse.

use tonic::{Request, Response, Status};

use super::convert::{Name, admit, authenticate};
use super::memory_bank::operation_of;
use super::proto::google::longrunning as lro;
use super::sessions::{counted, empty_operation, session_message, session_operation};
use crate::routes::vertex::memories::{self, MemoryCall};
use crate::routes::vertex::{Caller, GoogleError};
use crate::state::AppState;

/// The service, over the server's state.
#[derive(Clone)]
pub(crate) struct Operations {
    state: AppState,
}

impl Operations {
    pub(crate) fn new(state: AppState) -> Self {
        Self { state }
    }

    /// A call about operations agentstate does not keep (it keeps none): authenticated, and
    /// answered with nothing.
    async fn nothing_kept<R, T: Default>(&self, method: &str, request: &Request<R>) -> Result<Response<T>, Status> {
        counted(&self.state, method, async {
            authenticate(&self.state, &request.metadata().clone().into_headers()).await?;
            Ok(T::default())
        })
        .await
    }

    /// The operation `name`, done.
    async fn answer(&self, request: Request<String>) -> Result<lro::Operation, Status> {
        let headers = request.metadata().clone().into_headers();
        let name = request.into_inner();
        let permit = authenticate(&self.state, &headers).await?;
        let parsed = Name::parse(&name, "name")?;
        if parsed.operation.is_none() {
            return Err(Status::invalid_argument(format!("name {name:?} is not an operation")));
        }
        if let Some(running) = self.state.running().get(&name) {
            match &running.user {
                Some(user) => permit.check(&running.app, user),
                None => permit.check_every_user(&running.app),
            }
            .map_err(GoogleError::from)?;
            let Some(done) = running.done else {
                return Ok(lro::Operation { name, metadata: None, done: false, result: None });
            };
            return operation_of(done);
        }
        if let (Some(engine), Some(id)) = (&parsed.engine, &parsed.memory) {
            admit(&permit, engine)?;
            let call = MemoryCall::of(self.state.clone(), engine.clone(), permit, id.clone());
            if let Ok(memory) = memories::get(call).await {
                let mut memory = memory.0;
                memory["@type"] = serde_json::json!(super::memory_bank::MEMORY_TYPE);
                return operation_of(serde_json::json!({"name": name, "done": true, "response": memory}));
            }
        } else if let (Some(engine), Some(id)) = (&parsed.engine, &parsed.session) {
            admit(&permit, engine)?;
            let caller = Caller { state: &self.state, engine, permit: &permit, headers: &headers };
            if let Some(session) = caller.operation_session(id).await? {
                return Ok(session_operation(name, &session_message(engine, &session)?));
            }
        } else if let Some(engine) = &parsed.engine {
            admit(&permit, engine)?;
        }
        Ok(empty_operation(name))
    }
}

#[tonic::async_trait]
impl lro::operations_server::Operations for Operations {
    async fn list_operations(
        &self,
        request: Request<lro::ListOperationsRequest>,
    ) -> Result<Response<lro::ListOperationsResponse>, Status> {
        self.nothing_kept("ListOperations", &request).await
    }

    async fn get_operation(
        &self,
        request: Request<lro::GetOperationRequest>,
    ) -> Result<Response<lro::Operation>, Status> {
        counted(&self.state, "GetOperation", self.answer(request.map(|r| r.name))).await
    }

    async fn wait_operation(
        &self,
        request: Request<lro::WaitOperationRequest>,
    ) -> Result<Response<lro::Operation>, Status> {
        counted(&self.state, "WaitOperation", self.answer(request.map(|r| r.name))).await
    }

    async fn delete_operation(
        &self,
        request: Request<lro::DeleteOperationRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        self.nothing_kept("DeleteOperation", &request).await
    }

    async fn cancel_operation(
        &self,
        request: Request<lro::CancelOperationRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        self.nothing_kept("CancelOperation", &request).await
    }
}
