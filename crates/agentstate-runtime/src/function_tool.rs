//! [`FunctionTool`]: a tool made of a function.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agentstate::{BoxError, Map, Value};
use async_trait::async_trait;

use crate::context::ToolContext;
use crate::tool::Tool;

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

into_dyn!(Tool: FunctionTool);
