//! The schemas of the artifact routes in `/openapi.json` (a leaf: the document asks it, the
//! routes do not).

use serde_json::{Value, json};

/// The schemas of the artifact routes, for `/openapi.json`.
pub(crate) fn schemas() -> Value {
    json!({
        "Part": {"type": "object", "description": "A google.genai Part: `inlineData` (`mimeType`, `data` as base64), `text` or `fileData` (`fileUri`, `mimeType`; an `artifact://` URI refers to another artifact's version)",
            "properties": {"text": {"type": "string"}, "inlineData": {"type": "object"}, "fileData": {"type": "object"}}},
        "SaveArtifactRequest": {"type": "object", "required": ["filename", "artifact"], "properties": {
            "filename": {"type": "string", "description": "The artifact's name (may hold /; `user:` names are the user's in every session)"},
            "artifact": {"$ref": "#/components/schemas/Part"},
            "customMetadata": {"type": ["object", "null"], "description": "Kept with the version"}}},
        "ArtifactVersion": {"type": "object", "required": ["version", "canonicalUri", "customMetadata", "createTime"], "properties": {
            "version": {"type": "integer", "description": "From 0"},
            "canonicalUri": {"type": "string", "description": "artifact://apps/…/versions/N: a fileData part with this URI refers to this version"},
            "customMetadata": {"type": "object"}, "createTime": {"type": "number", "description": "Unix seconds"},
            "mimeType": {"type": "string", "description": "Absent for a reference"}}},
        "Names": {"type": "array", "items": {"type": "string"}},
        "ArtifactRead": {"oneOf": [{"$ref": "#/components/schemas/Part"}, {"type": "array", "items": {"type": "integer"}},
            {"type": "array", "items": {"$ref": "#/components/schemas/ArtifactVersion"}}, {"$ref": "#/components/schemas/ArtifactVersion"}]}
    })
}

/// The query parameters of the artifact routes past `/artifacts/`.
pub(crate) fn query(method: &str) -> Vec<Value> {
    let params: Vec<(&str, Value, &str)> = match method {
        "get" => vec![
            ("version", json!({"type": "string"}), "`NAME` only: this version, an integer (the latest by default)"),
            (
                "alt",
                json!({"type": "string"}),
                "agentstate extension: `media` answers a version's bytes themselves, typed with its MIME type and streamed (`json`, the default: the part)",
            ),
        ],
        "post" => vec![("metadata", json!({"type": "string"}), "The version's custom metadata, a JSON object")],
        _ => Vec::new(),
    };
    params
        .into_iter()
        .map(|(name, schema, what)| json!({"name": name, "in": "query", "schema": schema, "description": what}))
        .collect()
}
