//! A model that plays back a script: deterministic agent tests and examples without a provider.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use crate::model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream};

/// Answers each call with the next scripted turn and records every request it was sent.
///
/// A turn is a list of responses: one complete response, or partial chunks followed by the
/// complete one (sent as they are when the call streams; only the last one otherwise).
///
/// ```
/// use agentstate_runtime::{LlmResponse, ScriptedModel};
///
/// let model = ScriptedModel::new("scripted")
///     .reply(LlmResponse::call("get_weather", serde_json::json!({"city": "Paris"})))
///     .reply(LlmResponse::text("Sunny in Paris."));
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    inner: Arc<Mutex<Script>>,
}

#[derive(Debug, Default)]
struct Script {
    turns: VecDeque<Vec<LlmResponse>>,
    requests: Vec<LlmRequest>,
}

impl ScriptedModel {
    /// An empty script.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), inner: Arc::default() }
    }

    /// Adds a turn of one complete response.
    pub fn reply(self, response: LlmResponse) -> Self {
        self.turn(vec![response])
    }

    /// Adds a turn streamed as `chunks` (partial) and then their concatenation (complete).
    pub fn streamed_text(self, chunks: &[&str]) -> Self {
        let mut turn: Vec<LlmResponse> = chunks.iter().map(|c| LlmResponse::text(*c).partial()).collect();
        turn.push(LlmResponse::text(chunks.concat()));
        self.turn(turn)
    }

    /// Adds a turn of several responses.
    pub fn turn(self, responses: Vec<LlmResponse>) -> Self {
        self.lock().turns.push_back(responses);
        self
    }

    /// Turns not played yet.
    pub fn remaining(&self) -> usize {
        self.lock().turns.len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, request: LlmRequest, stream: bool) -> Result<ResponseStream, ModelError> {
        let mut script = self.lock();
        script.requests.push(request);
        let call = script.requests.len();
        let mut turn = script.turns.pop_front().ok_or(ModelError::ScriptExhausted(call))?;
        if !stream {
            turn.retain(|r| !r.partial);
        }
        Ok(Box::pin(futures_util::stream::iter(turn.into_iter().map(Ok))))
    }
}
