//! `GET /openapi.json`: an OpenAPI 3.1 description generated from the same table that registers
//! the routes and decides their authentication, so the three cannot drift apart.

use serde_json::{Map, Value, json};

use crate::auth::Access;

mod schemas;

use schemas::schemas;

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

/// What an id may be (`agentstate::validate_id`, plus the server's path-safety check): printable
/// (no C0 or C1 control character), no leading or trailing whitespace, no `/` or `\`, not `.`
/// or `..`.
const ID_PATTERN: &str = r"^(?!\.{1,2}$)(?!\s)(?!.*\s$)[^\u0000-\u001F\u007F-\u009F/\\]+$";

/// The sessions filter, as `agentstate::filter` reads it.
const SESSION_FILTER: &str = "Terms joined by AND: user_id=\"…\", display_name=\"…\", labels.KEY=\"…\", state.KEY=<JSON scalar> (session keys), update_time and create_time compared (=, <, <=, >, >=) with a quoted RFC 3339 time; a bad filter is a 400 naming the character where it went wrong";

/// The sessions `orderBy`.
const SESSION_ORDER: &str = "By last update (the default, also when empty) or creation, oldest first (asc, the default) or newest first (desc); pages keep the order; camelCase names too";

fn session_order_schema() -> Value {
    json!({"type": "string", "enum": ["", "update_time", "update_time asc", "update_time desc", "create_time", "create_time asc", "create_time desc"]})
}

fn parameters(op: &Operation) -> Vec<Value> {
    let path = op.path;
    let mut params: Vec<Value> = path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            if let Some(name) = name.strip_prefix('*') {
                let description = "The rest of the path: an artifact name (it may hold /), then what to read of it";
                let schema = json!({"type": "string", "minLength": 1});
                return json!({"name": name, "in": "path", "required": true, "schema": schema, "description": description});
            }
            let schema = if name == "file" {
                json!({"type": "string", "enum": ["inspector.css", "inspector.js"]})
            } else if name == "version" {
                json!({"type": "string", "enum": crate::engine_api::VERSIONS})
            } else if matches!(name, "project" | "location" | "operation") || path.contains("/operations/") {
                // Part of the managed service's resource names; agentstate does not use them.
                json!({"type": "string", "minLength": 1})
            } else {
                json!({"type": "string", "minLength": 1, "maxLength": 128, "pattern": ID_PATTERN})
            };
            let description = if name == "version" {
                "The Agent Engine API version; the same surface under each"
            } else {
                "1–128 printable characters, no leading or trailing whitespace, no / or \\, not . or .."
            };
            json!({"name": name, "in": "path", "required": true, "schema": schema, "description": description})
        })
        .collect();
    let query = |name: &str, schema: Value, description: &str| json!({"name": name, "in": "query", "schema": schema, "description": description});
    if path.starts_with("/ui") {
        // The inspector's own query parameters are described in each route's summary.
        return params;
    }
    let vertex = path.starts_with("/{version}/");
    if vertex && (path.ends_with("/events") || (path.ends_with("/sessions") && op.method == "get")) {
        let what =
            if path.ends_with("/events") { "timestamp>=\"<RFC 3339>\" (also >, <=, <; AND)" } else { SESSION_FILTER };
        params.push(query("filter", json!({"type": "string"}), what));
        if path.ends_with("/events") {
            params.push(query(
                "orderBy",
                json!({"type": "string", "enum": ["", "timestamp", "timestamp asc", "timestamp desc"]}),
                "Oldest first (the default, also when empty) or newest first; pages keep the order",
            ));
        } else {
            params.push(query("orderBy", session_order_schema(), SESSION_ORDER));
        }
        if path.ends_with("/events") {
            params.push(query(
                "pageSize",
                json!({"type": "integer"}),
                "Page size, clamped to 1–100; without it, every event in one page (clients that read one page only get the whole history)",
            ));
        } else {
            params.push(query("pageSize", json!({"type": "integer", "default": 100}), "Page size, clamped to 1–100"));
        }
        params.push(query("pageToken", json!({"type": "string"}), "nextPageToken of the previous page"));
    } else if vertex && path.ends_with("/sessions") {
        params.push(query("sessionId", json!({"type": "string"}), "The id; generated (19 digits) if absent"));
    } else if vertex && path.ends_with("/memories") && op.method == "get" {
        params.push(query("filter", json!({"type": "string"}), "Not supported: must be empty"));
        params.push(query("orderBy", json!({"type": "string"}), "Not supported: must be empty"));
        params.push(query("pageSize", json!({"type": "integer", "default": 100}), "Page size, clamped to 1–100"));
        params.push(query("pageToken", json!({"type": "string"}), "nextPageToken of the previous page"));
    } else if vertex && path.ends_with("/revisions") {
        params.push(query(
            "filter",
            json!({"type": "string"}),
            "labels.KEY=\"VALUE\" terms joined by AND; empty: every revision",
        ));
        params.push(query("orderBy", json!({"type": "string"}), "Not supported: must be empty (newest first)"));
        params.push(query("pageSize", json!({"type": "integer", "default": 100}), "Page size, clamped to 1–100"));
        params.push(query("pageToken", json!({"type": "string"}), "nextPageToken of the previous page"));
    } else if vertex && path.ends_with("/memories") {
        params.push(query("memoryId", json!({"type": "string"}), "The id; generated (19 digits) if absent"));
    } else if vertex && path.ends_with("{memory}") && op.method == "patch" {
        params.push(query(
            "updateMask",
            json!({"type": "string"}),
            "Comma-separated: fact, display_name, description, topics, metadata, expire_time, ttl; a masked field the body lacks is cleared; without a mask, the fields the body has",
        ));
    } else if vertex && path.ends_with("{session}") && op.method == "patch" {
        params.push(query(
            "updateMask",
            json!({"type": "string"}),
            "Comma-separated: display_name, labels, expire_time, ttl, session_state; a masked field the body lacks is cleared; without a mask, the fields the body has",
        ));
    } else if path.ends_with("/sessions") && op.method == "get" {
        params.push(query("filter", json!({"type": "string"}), SESSION_FILTER));
        params.push(query("orderBy", session_order_schema(), SESSION_ORDER));
        params.push(query(
            "pageSize",
            json!({"type": "integer"}),
            "agentstate extension: answer a page of this many sessions (clamped to 1–1000)",
        ));
        params.push(query("pageToken", json!({"type": "string"}), "nextPageToken of the previous page"));
        params.push(query(
            "order",
            json!({"type": "string", "enum": ["asc", "desc"]}),
            "agentstate extension: by last update, oldest first (the default) or newest first; a page token keeps its order",
        ));
        params.push(query(
            "offset",
            json!({"type": "integer", "minimum": 0}),
            "agentstate extension: skip this many sessions first",
        ));
        params.push(query(
            "count",
            json!({"type": "boolean"}),
            "agentstate extension: answer totalSize, the sessions of every page together",
        ));
    } else if path.ends_with("{session_id}") && op.method == "get" {
        params.push(query(
            "numRecentEvents",
            json!({"type": "integer", "minimum": 0}),
            "agentstate extension: only the newest n events",
        ));
        params.push(query(
            "afterTimestamp",
            json!({"type": "number"}),
            "agentstate extension: only events at or after this time (epoch seconds)",
        ));
        params.push(query(
            "view",
            json!({"type": "string", "enum": ["whole", "compacted"], "default": "whole"}),
            "agentstate extension: every event, or only those ADK reads of a history it compacts (summaries, what they do not cover, the next summary's window); the window above applies to the view",
        ));
        params.push(query(
            "overlap",
            json!({"type": "integer", "minimum": 0, "default": 1}),
            "agentstate extension, with view=compacted: the app's overlap_size",
        ));
    } else if path.ends_with("/sessions/{session_id}/state") {
        params.push(query("atEvent", json!({"type": "string"}), "After this event"));
        params.push(query("beforeEvent", json!({"type": "string"}), "Before this event"));
        params.push(query(
            "atTime",
            json!({"type": "number"}),
            "After the last event at or before this time (epoch seconds)",
        ));
        params.push(query("atCreation", json!({"type": "boolean"}), "As created"));
    } else if path.ends_with("/memories") && op.method == "get" {
        params.push(query("query", json!({"type": "string"}), "Search for this (without it: list)"));
        params.push(query(
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 10}),
            "Search: at most this many",
        ));
        params.push(query(
            "mode",
            json!({"type": "string", "enum": ["auto", "text", "semantic", "hybrid"], "default": "auto"}),
            "Search: by words (text), by meaning (semantic), both fused (hybrid); auto is hybrid when the app has an embedding provider (serve --embeddings), text otherwise",
        ));
        params.push(query(
            "minSimilarity",
            json!({"type": "number", "minimum": -1, "maximum": 1}),
            "Search by meaning: leave out memories less similar than this (cosine)",
        ));
        params.push(query(
            "pageSize",
            json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 100}),
            "List: page size",
        ));
        params.push(query("pageToken", json!({"type": "string"}), "List: nextPageToken of the previous page"));
    } else if path.ends_with("/artifacts/{*artifact_path}") {
        params.extend(crate::artifact_schemas::query(op.method));
    } else if path.ends_with("/events") && op.method == "get" {
        params.push(query("after", json!({"type": "string"}), "nextPageToken of the previous page"));
        params.push(query(
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
            "Page size",
        ));
    }
    if vertex && path.ends_with("/sessions/{session}") && op.method == "get" {
        params.push(query(
            "agentstateEvents",
            json!({"type": "boolean", "default": false}),
            "agentstate extension: also answer the session's events (agentstateEvents), read with the session in one snapshot",
        ));
        params.push(query(
            "agentstateNumRecentEvents",
            json!({"type": "integer", "minimum": 0}),
            "agentstate extension: with agentstateEvents, only the newest n",
        ));
        params.push(query(
            "agentstateAfter",
            json!({"type": "string"}),
            "agentstate extension: with agentstateEvents, only events at or after this RFC 3339 time",
        ));
    }
    if vertex && path.contains("{session}") {
        params.push(json!({"name": "x-agentstate-user-id", "in": "header", "schema": {"type": "string"},
            "description": "agentstate extension: the session's user (spares a lookup)"}));
    }
    if vertex && path.ends_with("{session}") && op.method == "post" {
        params.push(json!({"name": "x-agentstate-last-update", "in": "header", "schema": {"type": "integer"},
            "description": "agentstate extension: the storage marker the caller's view was loaded at (epoch µs); 409 ABORTED if the session changed since"}));
    }
    params
}

fn body(schema: &str) -> Value {
    let typed = |media: &str, schema: Value| json!({media: {"schema": schema}});
    let named = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let text = json!({"type": "string"});
    match schema {
        "Asset" => json!({"text/css": {"schema": text}, "text/javascript": {"schema": text}}),
        "Html" => typed("text/html", text),
        "ArtifactBytes" => typed("application/octet-stream", json!({"type": "string", "format": "binary"})),
        "Metrics" => typed("text/plain", named(schema)),
        "EventStream" => typed("text/event-stream", named(schema)),
        _ => typed("application/json", named(schema)),
    }
}

/// The document.
pub fn document(operations: &[Operation]) -> Value {
    let mut paths = Map::new();
    for op in operations {
        let mut responses = Map::new();
        for (status, description, schema) in op.responses {
            // A redirect has no body.
            let response = if *status == 303 {
                json!({"description": description})
            } else {
                json!({"description": description, "content": body(schema)})
            };
            responses.insert(status.to_string(), response);
        }
        let error_schema = if op.path.starts_with("/{version}/") { "GoogleError" } else { "Error" };
        let denied = |description: &str| json!({"description": description, "content": body(error_schema)});
        // Every id, parameter and body is checked: a malformed one is a 400 (422 for an ADK body,
        // as FastAPI answers), whatever the route.
        let checked_schema = if op.access == Access::Ui && !op.path.ends_with("/live") { "Html" } else { error_schema };
        if op.path.starts_with("/ui") && op.method == "post" && op.path != "/ui/logout" {
            responses.entry("415").or_insert_with(
                || json!({"description": "Not a form (application/x-www-form-urlencoded)", "content": body("Error")}),
            );
        }
        if !parameters(op).is_empty() || op.request.is_some() {
            responses.entry("400").or_insert_with(
                || json!({"description": "A malformed id, parameter or body", "content": body(checked_schema)}),
            );
        }
        if op.path.starts_with("/{version}/") {
            responses.entry("404").or_insert_with(
                || json!({"description": "No such API version (or, where it applies, session)", "content": body("GoogleError")}),
            );
        }
        if op.request.is_some() && !op.path.starts_with("/{version}/") {
            responses
                .entry("422")
                .or_insert_with(|| json!({"description": "A body of the wrong shape", "content": body("Error")}));
        }
        if op.access == Access::Ui {
            responses.insert(
                "303".into(),
                json!({"description": "Access tokens are configured and none (or an unknown one) was sent: to /ui/login"}),
            );
            responses.insert(
                "403".into(),
                json!({"description": "The token may not read this app or user", "content": body("Html")}),
            );
        } else if op.access != Access::Public {
            responses
                .insert("401".into(), denied("Access tokens are configured and none (or an unknown one) was sent"));
        }
        if matches!(op.access, Access::PathAppUser | Access::BodyAppUser | Access::PathApp) {
            responses.insert("403".into(), denied("The token may not access this app or user"));
        }
        if op.access == Access::Admin {
            responses.insert("403".into(), denied("The token is not an admin token for this app"));
        }
        // The inspector's pages take the login cookie (or a bearer token) and send a browser
        // without one to the sign-in page: no bearer token is required of them.
        let security = match op.access {
            Access::Public => json!([]),
            Access::Ui => json!([{}, {"bearer": []}]),
            _ => json!([{"bearer": []}]),
        };
        let mut operation = json!({
            "summary": op.summary,
            "description": format!("Authentication, when access tokens are configured: {}.", op.access.describe()),
            "security": security,
            "parameters": parameters(op),
            "responses": responses,
        });
        if let Some(schema) = op.request {
            operation["requestBody"] = json!({"required": false, "content": body(schema)});
        }
        if let Some(links) = links(op.method, op.path) {
            operation["responses"]["200"]["links"] = links;
        }
        // A catch-all (`{*name}`, which may hold `/`) is an ordinary parameter in OpenAPI.
        let entry = paths.entry(op.path.replace("{*", "{")).or_insert_with(|| json!({}));
        entry[op.method] = operation;
    }
    grpc_methods(json!({
        "openapi": "3.1.0",
        "info": {"title": "agentstate", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The session routes and /run, /run_sse of ADK's adk api_server, and agentstate's extensions."},
        "components": {"schemas": schemas(), "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }))
}

/// A reference to the operation `method` of `path` in this document (`/` escaped as `~1`).
fn operation_ref(path: &str, method: &str) -> String {
    format!("#/paths/{}/{method}", path.replace('~', "~0").replace('/', "~1"))
}

/// The links from a create's answer to the routes that use the session it made, so that a
/// stateful client of the document (a contract tester) can call them on a session that exists:
/// the ADK create (its `id`) to get, patch, delete, the history, append, rewind and fork; the
/// Agent Engine create (the `sessionId` it asked for) to get, patch, delete and the events.
fn links(method: &str, path: &str) -> Option<Value> {
    if method != "post" {
        return None;
    }
    let (session, targets, parameters): (&str, &[(&str, &str, &str)], Value) = match path {
        "/apps/{app_name}/users/{user_id}/sessions" => (
            "/apps/{app_name}/users/{user_id}/sessions/{session_id}",
            &[
                ("GetSession", "get", ""),
                ("PatchSession", "patch", ""),
                ("DeleteSession", "delete", ""),
                ("ListEvents", "get", "/events"),
                ("AppendEvent", "post", "/events"),
                ("Rewind", "post", "/rewind"),
                ("Fork", "post", "/fork"),
            ],
            json!({"app_name": "$request.path.app_name", "user_id": "$request.path.user_id",
                   "session_id": "$response.body#/id"}),
        ),
        "/{version}/reasoningEngines/{engine}/sessions"
        | "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions" => {
            let mut parameters = json!({"version": "$request.path.version", "engine": "$request.path.engine",
                                        "session": "$request.query.sessionId"});
            if path.contains("{project}") {
                parameters["project"] = json!("$request.path.project");
                parameters["location"] = json!("$request.path.location");
            }
            let session: &str = if path.contains("{project}") {
                "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}"
            } else {
                "/{version}/reasoningEngines/{engine}/sessions/{session}"
            };
            (
                session,
                &[
                    ("GetSession", "get", ""),
                    ("PatchSession", "patch", ""),
                    ("DeleteSession", "delete", ""),
                    ("ListEvents", "get", "/events"),
                ],
                parameters,
            )
        }
        _ => return None,
    };
    let mut links: Map<String, Value> = targets
        .iter()
        .map(|(name, method, tail)| {
            let target = format!("{session}{tail}");
            let link = json!({"operationRef": operation_ref(&target, method), "parameters": parameters});
            ((*name).to_owned(), link)
        })
        .collect();
    // An ADK session is the Agent Engine session of the engine named like its app.
    if path == "/apps/{app_name}/users/{user_id}/sessions" {
        let engine_session = "/{version}/reasoningEngines/{engine}/sessions/{session}";
        let parameters =
            |session: &str| json!({"version": "v1beta1", "engine": "$request.path.app_name", "session": session});
        for (name, method, tail, session) in [
            ("EngineGetSession", "get", "", "$response.body#/id"),
            ("EngineListEvents", "get", "/events", "$response.body#/id"),
            ("EngineAppendEvent", "post", "", "{$response.body#/id}:appendEvent"),
        ] {
            let target = format!("{engine_session}{tail}");
            let link = json!({"operationRef": operation_ref(&target, method), "parameters": parameters(session)});
            links.insert(name.to_owned(), link);
        }
    }
    Some(Value::Object(links))
}

/// The document with the gRPC methods served beside the routes, and who may call them.
#[cfg(feature = "grpc")]
fn grpc_methods(mut document: Value) -> Value {
    document["info"]["description"] = json!(
        "The session routes and /run, /run_sse of ADK's adk api_server, and agentstate's extensions. \
         The same address serves the Agent Engine Sessions API over gRPC (HTTP/2, content type \
         application/grpc): its methods and who may call them are in x-grpc."
    );
    document["x-grpc"] =
        crate::grpc::METHODS.iter().map(|(method, access)| json!({"method": method, "access": access})).collect();
    document
}

/// The document (no gRPC in this build).
#[cfg(not(feature = "grpc"))]
fn grpc_methods(document: Value) -> Value {
    document
}
