//! Tools an [`LlmAgent`](crate::LlmAgent) lets its model call.
//!
//! A tool gets the call's arguments and a [`ToolContext`]; what it writes through
//! `ctx.state_mut()` travels on the function-response event as its `state_delta`. Tools called in
//! the same model turn run concurrently, each with its own context; their deltas are merged in
//! call order (SPEC §5), so no write is lost.
//!
//! A tool's `Err` is given back to the model as `{"error": "<message>"}` so it can recover; it
//! does not end the invocation ★ (the reference raises).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agentstate::{BoxError, Map, Value};
use async_trait::async_trait;

use crate::context::ToolContext;
use crate::model::ToolDeclaration;

/// A tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// A JSON schema of its arguments.
    fn parameters(&self) -> Value;

    /// Runs it. A non-object result reaches the model as `{"result": value}`.
    async fn call(&self, args: Map<String, Value>, ctx: &mut ToolContext) -> Result<Value, BoxError>;

    /// How the model sees it.
    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// The future an async [`FunctionTool`] returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, BoxError>> + Send + 'a>>;

type Handler = dyn for<'a> Fn(Map<String, Value>, &'a mut ToolContext) -> ToolFuture<'a> + Send + Sync;

/// A tool made of a function.
///
/// ```
/// use agentstate_runtime::FunctionTool;
/// use serde_json::json;
///
/// let weather = FunctionTool::new(
///     "get_weather",
///     "Returns the weather of a city.",
///     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
///     |args, ctx| {
///         let city = args.get("city").and_then(|c| c.as_str()).ok_or("city is required")?;
///         ctx.state_mut().set("last_city", json!(city));
///         Ok(json!({"city": city, "forecast": "sunny"}))
///     },
/// );
/// # let _ = weather;
/// ```
#[derive(Clone)]
pub struct FunctionTool {
    name: String,
    description: String,
    parameters: Value,
    handler: Arc<Handler>,
}

impl std::fmt::Debug for FunctionTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionTool").field("name", &self.name).finish_non_exhaustive()
    }
}

impl FunctionTool {
    /// A tool running a plain function.
    pub fn new<F>(name: impl Into<String>, description: impl Into<String>, parameters: Value, f: F) -> Self
    where
        F: Fn(Map<String, Value>, &mut ToolContext) -> Result<Value, BoxError> + Send + Sync + 'static,
    {
        Self::new_async(name, description, parameters, move |args, ctx| {
            let result = f(args, ctx);
            Box::pin(async move { result })
        })
    }

    /// A tool running an async function: `|args, ctx| Box::pin(async move { … })`.
    pub fn new_async<F>(name: impl Into<String>, description: impl Into<String>, parameters: Value, f: F) -> Self
    where
        F: for<'a> Fn(Map<String, Value>, &'a mut ToolContext) -> ToolFuture<'a> + Send + Sync + 'static,
    {
        Self { name: name.into(), description: description.into(), parameters, handler: Arc::new(f) }
    }
}

#[async_trait]
impl Tool for FunctionTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(&self, args: Map<String, Value>, ctx: &mut ToolContext) -> Result<Value, BoxError> {
        (self.handler)(args, ctx).await
    }
}
