//! `GET /openapi.json`: an OpenAPI 3.1 description generated from the same table that registers
//! the routes and decides their authentication, so the three cannot drift apart.

use serde_json::{Map, Value, json};

use crate::auth::Access;

/// One documented route.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// `get`, `post`, …
    pub method: &'static str,
    /// axum path syntax (`/apps/{app_name}/…`), which is OpenAPI's as well.
    pub path: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// What the caller needs when access tokens are configured.
    pub access: Access,
    /// Schema name of the JSON request body, if any.
    pub request: Option<&'static str>,
    /// Status code → (description, schema name of the JSON body).
    pub responses: &'static [(u16, &'static str, &'static str)],
}

fn schemas() -> Value {
    json!({
        "Error": {"type": "object", "required": ["detail"], "properties": {"detail": {
            "description": "A message, or FastAPI's list of validation problems (422)"}}},
        "Event": {"type": "object", "description": "An event in the reference's camelCase JSON; fields not listed are kept as sent.",
            "properties": {"id": {"type": "string"}, "invocationId": {"type": "string"}, "author": {"type": "string"},
                "timestamp": {"type": "number"}, "content": {"type": "object"}, "partial": {"type": "boolean"},
                "branch": {"type": "string"}, "actions": {"type": "object", "properties": {
                    "stateDelta": {"type": "object"}, "artifactDelta": {"type": "object"},
                    "transferToAgent": {"type": "string"}, "escalate": {"type": "boolean"},
                    "skipSummarization": {"type": "boolean"}}}}},
        "Session": {"type": "object", "required": ["id", "appName", "userId", "state", "events", "lastUpdateTime"],
            "properties": {"id": {"type": "string"}, "appName": {"type": "string"}, "userId": {"type": "string"},
                "state": {"type": "object", "description": "Merged state: session keys, then app: and user: keys"},
                "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
                "lastUpdateTime": {"type": "number", "description": "Epoch seconds"}}},
        "SessionList": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}},
        "CreateSessionRequest": {"type": "object", "properties": {
            "sessionId": {"type": "string", "description": "1–128 printable characters; generated (UUIDv4) if absent"},
            "state": {"type": "object"}, "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "options": {"type": "object", "description": "Refused: no session option is supported"}}},
        "State": {"type": "object", "description": "Initial state, keys with their scope prefix"},
        "UpdateSessionRequest": {"type": "object", "required": ["stateDelta"], "properties": {"stateDelta": {"type": "object"}}},
        "EventPage": {"type": "object", "required": ["events"], "properties": {
            "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "nextPageToken": {"type": "string", "description": "Pass as `after` for the next page; absent on the last"}}},
        "AppList": {"type": "array", "items": {"type": "string"}},
        "EventList": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
        "EventStream": {"type": "string", "description": "Server-sent events, one `data: <Event JSON>` per event"},
        "RunAgentRequest": {"type": "object", "required": ["userId", "sessionId"], "properties": {
            "appName": {"type": "string", "description": "Optional when the server serves one app"},
            "userId": {"type": "string"}, "sessionId": {"type": "string"},
            "newMessage": {"type": "object", "description": "Content: {\"role\": \"user\", \"parts\": [{\"text\": …}]}"},
            "streaming": {"type": "boolean", "default": false, "description": "Also send partial (streamed) events"},
            "stateDelta": {"type": "object", "description": "State set on the user's event"}}},
        "Status": {"type": "object", "properties": {"status": {"type": "string"}}},
        "Null": {"type": "null"},
        "Metrics": {"type": "string", "description": "Prometheus text exposition format"},
    })
}

fn parameters(path: &str) -> Vec<Value> {
    let mut params: Vec<Value> = path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 128}}))
        .collect();
    if path.ends_with("/events") {
        params.push(json!({"name": "after", "in": "query", "schema": {"type": "string"}, "description": "nextPageToken of the previous page"}));
        params.push(json!({"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}));
    }
    params
}

fn body(schema: &str) -> Value {
    if schema == "Metrics" {
        return json!({"text/plain": {"schema": {"$ref": "#/components/schemas/Metrics"}}});
    }
    if schema == "EventStream" {
        return json!({"text/event-stream": {"schema": {"$ref": "#/components/schemas/EventStream"}}});
    }
    json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}})
}

/// The document.
pub fn document(operations: &[Operation]) -> Value {
    let mut paths = Map::new();
    for op in operations {
        let mut responses = Map::new();
        for (status, description, schema) in op.responses {
            responses.insert(status.to_string(), json!({"description": description, "content": body(schema)}));
        }
        let denied = |description: &str| json!({"description": description, "content": body("Error")});
        if op.access != Access::Public {
            responses
                .insert("401".into(), denied("Access tokens are configured and none (or an unknown one) was sent"));
        }
        if matches!(op.access, Access::PathAppUser | Access::BodyAppUser) {
            responses.insert("403".into(), denied("The token may not access this app or user"));
        }
        let security = if op.access == Access::Public { json!([]) } else { json!([{"bearer": []}]) };
        let mut operation = json!({
            "summary": op.summary,
            "description": format!("Authentication, when access tokens are configured: {}.", op.access.describe()),
            "security": security,
            "parameters": parameters(op.path),
            "responses": responses,
        });
        if let Some(schema) = op.request {
            operation["requestBody"] = json!({"required": false, "content": body(schema)});
        }
        let entry = paths.entry(op.path.to_owned()).or_insert_with(|| json!({}));
        entry[op.method] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "agentstate", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The session routes and /run, /run_sse of ADK's adk api_server, and agentstate's extensions."},
        "components": {"schemas": schemas(), "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    })
}
