//! A message's content on the API, outside an event (memories carry one).

use serde_json::Value;

use super::{convert, snake_owned, to_camel};

/// A message's content as the API shows it (camelCase: `functionCall`, `inlineData`, …).
pub fn content_to_wire(content: &crate::Content) -> Value {
    convert(serde_json::to_value(content).unwrap_or(Value::Null), |key| to_camel(&key))
}

/// A message's content from API JSON (camelCase or snake_case).
pub fn content_from_wire(value: Value) -> Result<crate::Content, serde_json::Error> {
    serde_json::from_value(convert(value, snake_owned))
}

/// One part as the API shows it (camelCase: `inlineData`, `fileData`, …), as `adk api_server`
/// answers an artifact.
pub fn part_to_wire(part: &crate::Part) -> Value {
    convert(serde_json::to_value(part).unwrap_or(Value::Null), |key| to_camel(&key))
}

/// One part from API JSON (camelCase or snake_case).
pub fn part_from_wire(value: Value) -> Result<crate::Part, serde_json::Error> {
    serde_json::from_value(convert(value, snake_owned))
}
