//! Test doubles: [`ScriptedModel`], a model that plays back a script (deterministic agent tests
//! and examples without a provider), and [`Gate`], to hold its calls.

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
/// use agentstate_runtime::model::LlmResponse;
/// use agentstate_runtime::testing::ScriptedModel;
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
    gate: Option<Gate>,
}

/// Holds a [`ScriptedModel`]'s calls until released, to see what happens while a model "thinks"
/// (what a client already got, what a concurrent run does).
///
/// ```
/// use agentstate_runtime::model::LlmResponse;
/// use agentstate_runtime::testing::{Gate, ScriptedModel};
///
/// let gate = Gate::new();
/// let model = ScriptedModel::new("slow").reply(LlmResponse::text("done")).gated(gate.clone());
/// // … start a run; then:
/// // gate.called().await;   // the model was called and is waiting
/// // gate.release();        // let it answer
/// # let _ = model;
/// ```
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

#[derive(Debug)]
struct GateInner {
    called: tokio::sync::Semaphore,
    open: tokio::sync::Semaphore,
    calls: std::sync::atomic::AtomicUsize,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        let inner = GateInner {
            called: tokio::sync::Semaphore::new(0),
            open: tokio::sync::Semaphore::new(0),
            calls: std::sync::atomic::AtomicUsize::new(0),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Waits until a call reached the gate (returns at once for each call that already did).
    pub async fn called(&self) {
        if let Ok(permit) = self.inner.called.acquire().await {
            permit.forget();
        }
    }

    /// Lets one waiting (or the next) call through.
    pub fn release(&self) {
        self.inner.open.add_permits(1);
    }

    /// How many calls reached the gate.
    pub fn calls(&self) -> usize {
        self.inner.calls.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn pass(&self) {
        self.inner.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.called.add_permits(1);
        if let Ok(permit) = self.inner.open.acquire().await {
            permit.forget();
        }
    }
}

#[derive(Debug, Default)]
struct Script {
    turns: VecDeque<Vec<LlmResponse>>,
    requests: Vec<LlmRequest>,
}

impl ScriptedModel {
    /// An empty script.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), inner: Arc::default(), gate: None }
    }

    /// Holds every call at `gate` until it is released.
    pub fn gated(mut self, gate: Gate) -> Self {
        self.gate = Some(gate);
        self
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
        if let Some(gate) = &self.gate {
            gate.pass().await;
        }
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

into_dyn!(Model: ScriptedModel);
