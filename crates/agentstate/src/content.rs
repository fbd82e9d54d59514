//! Message content in the reference's (Gemini-style) JSON shape: a role and a list of parts.
//!
//! Fields are snake_case, as the reference stores them; camelCase input is accepted too. Fields
//! we do not model are kept in `extra` and written back unchanged.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A message: who said it and its parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// The parts, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    /// `"user"` or `"model"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Content {
    /// Content with one text part.
    ///
    /// ```
    /// use agentstate::Content;
    /// let c = Content::text("user", "Hello");
    /// assert_eq!(c.joined_text(), "Hello");
    /// ```
    pub fn text(role: impl Into<String>, text: impl Into<String>) -> Self {
        Self { parts: Some(vec![Part::text(text)]), role: Some(role.into()), extra: Map::new() }
    }

    /// The parts, empty when there are none.
    pub fn parts(&self) -> &[Part] {
        self.parts.as_deref().unwrap_or_default()
    }

    /// The text of every non-thought text part, concatenated.
    pub fn joined_text(&self) -> String {
        self.parts().iter().filter(|p| p.thought != Some(true)).filter_map(|p| p.text.as_deref()).collect()
    }
}

/// One piece of a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// Plain text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the text is the model's reasoning rather than its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// A call of a tool requested by the model.
    #[serde(default, alias = "functionCall", skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// A tool's answer.
    #[serde(default, alias = "functionResponse", skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Inline bytes (base64 in JSON).
    #[serde(default, alias = "inlineData", skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Call id, pairing the call with its response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Arguments (a JSON object; keys are the tool's, never renamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool's answer to a [`FunctionCall`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    /// The id of the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The result (a JSON object; keys are the tool's, never renamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Map<String, Value>>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Inline binary data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Blob {
    /// MIME type, e.g. `image/png`.
    #[serde(default, alias = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The bytes, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reference_shape_round_trips_with_unknown_fields() {
        let raw = json!({
            "parts": [
                {"text": "hi", "thought_signature": "abc"},
                {"function_call": {"id": "c1", "name": "get", "args": {"city_name": "Paris"}}},
                {"inline_data": {"mime_type": "image/png", "data": "AAEC"}},
                {"video_metadata": {"fps": 2}}
            ],
            "role": "model",
            "future_field": [1, 2]
        });
        let content: Content = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(content.parts()[1].function_call.as_ref().unwrap().name.as_deref(), Some("get"));
        assert_eq!(serde_json::to_value(&content).unwrap(), raw);
    }

    #[test]
    fn camel_case_input_is_accepted() {
        let c: Content = serde_json::from_value(json!({
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"ok": true}}},
                      {"inlineData": {"mimeType": "text/plain", "data": ""}}]
        }))
        .unwrap();
        assert!(c.parts()[0].function_response.is_some());
        assert_eq!(c.parts()[1].inline_data.as_ref().unwrap().mime_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn joined_text_skips_thoughts() {
        let c = Content {
            parts: Some(vec![
                Part { text: Some("thinking".into()), thought: Some(true), ..Part::default() },
                Part::text("Hello "),
                Part::text("there"),
            ]),
            role: Some("model".into()),
            extra: Map::new(),
        };
        assert_eq!(c.joined_text(), "Hello there");
    }
}
