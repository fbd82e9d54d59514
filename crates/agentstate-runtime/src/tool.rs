//! Tools an [`LlmAgent`](crate::LlmAgent) lets its model call.
//!
//! A tool gets the call's arguments and a [`ToolContext`]; what it writes through
//! `ctx.state_mut()` travels on the function-response event as its `state_delta`. Tools called in
//! the same model turn run concurrently, each with its own context; their deltas are merged in
//! call order (SPEC §5), so no write is lost.
//!
//! A tool's `Err` is given back to the model as `{"error": "<message>"}` so it can recover; it
//! does not end the invocation ★ (the reference raises). Arguments that do not fit the tool's
//! schema ([`check_arguments`]) are answered the same way, without running the tool.

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

/// Checks a call's arguments against the tool's JSON schema before it runs: required arguments
/// present, each argument of its declared `type` (and one of its `enum` values, if listed). Models
/// do get arguments wrong; the message goes back to the model so it can call again. Keywords
/// beyond these are not checked.
pub fn check_arguments(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    check_object(schema, args, "argument")
}

/// [`check_arguments`] for any object; `noun` names its members in messages.
pub(crate) fn check_object(schema: &Value, args: &Map<String, Value>, noun: &str) -> Result<(), String> {
    let required = schema.get("required").and_then(Value::as_array).into_iter().flatten();
    for name in required.filter_map(Value::as_str) {
        if !args.contains_key(name) {
            return Err(format!("missing required {noun} '{name}'"));
        }
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (name, value) in args {
        let Some(property) = properties.get(name) else { continue };
        let types: Vec<&str> = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
            return Err(format!("{noun} '{name}' must be {}, not {}", types.join(" or "), type_name(value)));
        }
        if let Some(allowed) = property.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            return Err(format!("{noun} '{name}' must be one of {}, not {value}", Value::Array(allowed.clone())));
        }
    }
    Ok(())
}

fn has_type(value: &Value, json_type: &str) -> bool {
    match json_type.to_ascii_lowercase().as_str() {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["C", "F"]},
            "note": {"type": ["string", "null"]}, "free": {}}});
        assert_eq!(
            check_arguments(&schema, &args(json!({"city": "Oslo", "days": 3, "unit": "C", "note": null, "free": [1]}))),
            Ok(())
        );
        assert_eq!(check_arguments(&schema, &args(json!({"days": 3}))), Err("missing required argument 'city'".into()));
        assert_eq!(
            check_arguments(&schema, &args(json!({"city": "Oslo", "days": "3"}))),
            Err("argument 'days' must be integer, not string".into())
        );
        assert_eq!(check_arguments(&schema, &args(json!({"city": "Oslo", "days": 3.0}))), Ok(()));
        assert_eq!(
            check_arguments(&schema, &args(json!({"city": "Oslo", "unit": "K"}))),
            Err(r#"argument 'unit' must be one of ["C","F"], not "K""#.into())
        );
        // Arguments the schema does not describe pass (models add them; tools ignore them).
        assert_eq!(check_arguments(&schema, &args(json!({"city": "Oslo", "extra": 1}))), Ok(()));
        assert_eq!(check_arguments(&json!({}), &args(json!({"a": 1}))), Ok(()));
    }
}
