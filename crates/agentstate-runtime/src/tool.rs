//! Tools an [`LlmAgent`](crate::LlmAgent) lets its model call: implement [`Tool`], or make one
//! of a function with [`FunctionTool`](crate::FunctionTool).
//!
//! A tool gets the call's arguments and a [`ToolContext`]; what it writes through
//! `ctx.state_mut()` travels on the function-response event as its `state_delta`. Tools called in
//! the same model turn run concurrently, each with its own context; the contexts of one turn
//! share their writes (see [`CallbackContext`](crate::CallbackContext)), so no write is lost.
//!
//! A tool's `Err` is given back to the model as `{"error": "<message>"}` so it can recover; unlike
//! in ADK for Python, it does not end the invocation. Arguments that do not fit the tool's schema
//! ([`check_arguments`]) are answered the same way, without running the tool.

use agentstate::{BoxError, Map, Value};
use async_trait::async_trait;

use crate::context::ToolContext;
use crate::model::{LlmRequest, ToolDeclaration};

/// A tool.
///
/// To pass one where an `impl Into<Arc<dyn Tool>>` is asked for (a builder's
/// [`tool`](crate::LlmAgentBuilder::tool)), give it as `Arc::new(tool) as Arc<dyn Tool>`, or add
/// `impl From<MyTool> for Arc<dyn Tool>`.
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

    /// Whether the model is told about it (and may call it). A tool that only prepares requests
    /// ([`prepare_request`](Self::prepare_request), as `preload_memory`) says `false`.
    fn is_declared(&self) -> bool {
        true
    }

    /// Changes each request of its agent before the model gets it, as ADK's
    /// `process_llm_request` does (`preload_memory` adds what memory recalls). By default,
    /// nothing.
    async fn prepare_request(&self, _ctx: &ToolContext, _request: &mut LlmRequest) -> Result<(), BoxError> {
        Ok(())
    }

    /// How the model sees it.
    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// How a JSON object breaks the schema it is checked against.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaViolation {
    /// A required member is missing.
    #[error("missing required {noun} '{name}'")]
    Missing {
        /// What the members are (`argument`, `field`).
        noun: &'static str,
        /// The member.
        name: String,
    },
    /// A member is of another JSON type than declared.
    #[error("{noun} '{name}' must be {expected}, not {found}")]
    WrongType {
        /// What the members are.
        noun: &'static str,
        /// The member.
        name: String,
        /// The declared type(s), joined with "or".
        expected: String,
        /// The JSON type it has.
        found: &'static str,
    },
    /// A member's value is not one of its `enum` values.
    #[error("{noun} '{name}' must be one of {allowed}, not {value}")]
    NotAllowed {
        /// What the members are.
        noun: &'static str,
        /// The member.
        name: String,
        /// The allowed values, as JSON.
        allowed: String,
        /// The value given, as JSON.
        value: String,
    },
}

/// Checks a call's arguments against the tool's JSON schema before it runs: required arguments
/// present, each argument of its declared `type` (and one of its `enum` values, if listed). Models
/// do get arguments wrong; the message goes back to the model so it can call again. Keywords
/// beyond these are not checked.
pub fn check_arguments(schema: &Value, args: &Map<String, Value>) -> Result<(), SchemaViolation> {
    check_object(schema, args, "argument")
}

/// [`check_arguments`] for any object; `noun` names its members in messages.
pub(crate) fn check_object(
    schema: &Value,
    args: &Map<String, Value>,
    noun: &'static str,
) -> Result<(), SchemaViolation> {
    let required = schema.get("required").and_then(Value::as_array).into_iter().flatten();
    for name in required.filter_map(Value::as_str) {
        if !args.contains_key(name) {
            return Err(SchemaViolation::Missing { noun, name: name.to_owned() });
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
            return Err(SchemaViolation::WrongType {
                noun,
                name: name.clone(),
                expected: types.join(" or "),
                found: type_name(value),
            });
        }
        if let Some(allowed) = property.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            return Err(SchemaViolation::NotAllowed {
                noun,
                name: name.clone(),
                allowed: Value::Array(allowed.clone()).to_string(),
                value: value.to_string(),
            });
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
        let problem = |value| check_arguments(&schema, &args(value)).map_err(|e| e.to_string());
        assert_eq!(problem(json!({"days": 3})), Err("missing required argument 'city'".into()));
        assert_eq!(
            problem(json!({"city": "Oslo", "days": "3"})),
            Err("argument 'days' must be integer, not string".into())
        );
        assert_eq!(check_arguments(&schema, &args(json!({"city": "Oslo", "days": 3.0}))), Ok(()));
        assert_eq!(
            problem(json!({"city": "Oslo", "unit": "K"})),
            Err(r#"argument 'unit' must be one of ["C","F"], not "K""#.into())
        );
        // Arguments the schema does not describe pass (models add them; tools ignore them).
        assert_eq!(check_arguments(&schema, &args(json!({"city": "Oslo", "extra": 1}))), Ok(()));
        assert_eq!(check_arguments(&json!({}), &args(json!({"a": 1}))), Ok(()));
    }
}
