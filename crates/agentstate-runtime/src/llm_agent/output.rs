//! The answer saved under `output_key`: the text, or with an `output_schema` the JSON it holds,
//! checked against the schema.

use agentstate::{Event, Value};

use super::builder::LlmAgent;
use crate::error::RuntimeError;
use crate::tool::{SchemaViolation, check_object};

impl LlmAgent {
    /// (final answers only; a blank one is not saved).
    pub(super) fn save_output(&self, event: &mut Event, text: &str) -> Result<(), RuntimeError> {
        let Some(key) = &self.output_key else { return Ok(()) };
        let value = match &self.output_schema {
            None => Value::String(text.to_owned()),
            Some(schema) => {
                let calls = event.content.iter().flat_map(|c| c.parts()).any(|p| p.function_call.is_some());
                if calls || text.trim().is_empty() {
                    return Ok(());
                }
                parse_output(schema, text)
                    .map_err(|e| RuntimeError::Output { agent: self.name.clone(), message: e.to_string() })?
            }
        };
        event.actions.state_delta.insert(key.clone(), value);
        Ok(())
    }
}

/// Why an answer does not fit the output schema.
#[derive(Debug, thiserror::Error)]
enum OutputError {
    #[error("not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("expected an object, got {0}")]
    NotAnObject(String),
    #[error(transparent)]
    Schema(#[from] SchemaViolation),
}

/// The JSON in an answer (inside a ```` ```json ```` fence or not), checked against `schema`.
fn parse_output(schema: &Value, text: &str) -> Result<Value, OutputError> {
    let mut body = text.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        let fenced = fenced.strip_prefix("json").unwrap_or(fenced);
        body = fenced.strip_suffix("```").unwrap_or(fenced).trim();
    }
    let value: Value = serde_json::from_str(body).map_err(OutputError::NotJson)?;
    match (&value, schema.get("type").and_then(Value::as_str)) {
        (Value::Object(map), _) => check_object(schema, map, "field")?,
        (_, Some("object")) => return Err(OutputError::NotAnObject(value.to_string())),
        _ => {}
    }
    Ok(value)
}
