//! Artifacts over HTTP: `adk api_server`'s eight artifact routes, answered as it answers them
//! (status codes, `detail` messages, camelCase parts with URL-safe base64 bytes, 422 for a bad
//! version), so `adk web` works against `agentstate serve`. Names may hold `/`: every route past
//! `/artifacts/` is one catch-all, read as `adk api_server` matches its routes, in its order:
//! `NAME/versions/V/metadata`, `NAME/versions/metadata`, `NAME/versions/V`, `NAME/versions`,
//! `NAME`. A save reads its own body limit (`--max-artifact-bytes`, base64 and JSON around it).

use agentstate::artifact::{ArtifactScope, ArtifactService, TOO_LARGE_FIELD};
use agentstate::wire::{part_from_wire, part_to_wire};
use agentstate::{Error, Value};
use axum::Json;
use axum::extract::{Path, Query, Request, State};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

type Reply = Result<Json<Value>, ApiError>;

/// JSON around the base64 of an artifact that a save body may carry besides it.
const ENVELOPE_BYTES: usize = 64 << 10;

/// An artifact error as `adk api_server` answers it: its `InputValidationError`s are 400 with
/// the message alone; past the size limit, 413.
fn refused(e: Error) -> ApiError {
    match e {
        Error::InvalidArgument { field, message } if field == TOO_LARGE_FIELD => {
            ApiError::TooLarge(format!("{message} (--max-artifact-bytes)"))
        }
        Error::InvalidArgument { message, .. } => ApiError::BadRequest(message),
        e => e.into(),
    }
}

fn version_json(version: &agentstate::artifact::ArtifactVersion) -> Value {
    version.to_json()
}

/// A version id of the path: `latest` or a number (else FastAPI's 422 `Invalid version ID`).
fn version_id(text: &str) -> Result<Option<i64>, ApiError> {
    if text == "latest" {
        return Ok(None);
    }
    python_int(text).map(Some).ok_or_else(|| ApiError::Unprocessable(Value::String("Invalid version ID".into())))
}

/// Python's `int(text)`: optional surrounding whitespace and sign, digits with single `_`
/// between them.
fn python_int(text: &str) -> Option<i64> {
    let trimmed = text.trim();
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    trimmed.replace('_', "").parse().ok()
}

/// The ids of a route's path, checked as every route checks them (the documented contract: 1–128
/// printable characters, no leading or trailing whitespace).
fn checked<'a>(app: &'a str, user: &'a str, session: Option<&'a str>) -> Result<ArtifactScope<'a>, ApiError> {
    agentstate::validate_id("app_name", app)?;
    agentstate::validate_id("user_id", user)?;
    if let Some(session) = session {
        agentstate::validate_id("session_id", session)?;
    }
    Ok(ArtifactScope::new(app, user, session))
}

/// `POST …/sessions/{session}/artifacts` with `{filename, artifact, customMetadata?}`: the new
/// version's metadata.
pub(crate) async fn save(
    State(state): State<AppState>,
    Path((app, user, session)): Path<(String, String, String)>,
    request: Request,
) -> Reply {
    save_in(&state, checked(&app, &user, Some(&session))?, request).await
}

/// `POST /apps/{app}/users/{user}/artifacts` (agentstate extension): a save without a session,
/// of a `user:` name.
pub(crate) async fn save_user(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    request: Request,
) -> Reply {
    save_in(&state, checked(&app, &user, None)?, request).await
}

async fn save_in(state: &AppState, scope: ArtifactScope<'_>, request: Request) -> Reply {
    let artifacts = state.artifacts();
    let limit = artifacts.max_bytes().saturating_add(artifacts.max_bytes() / 3).saturating_add(ENVELOPE_BYTES);
    let bytes = axum::body::to_bytes(request.into_body(), limit).await.map_err(|e| {
        if is_over_limit(&e) {
            ApiError::TooLarge(format!(
                "The request body exceeds the limit of {limit} bytes for an artifact of {} bytes (--max-artifact-bytes)",
                artifacts.max_bytes()
            ))
        } else {
            ApiError::BadRequest(format!("Could not read the request body: {e}"))
        }
    })?;
    let body: Value = serde_json::from_slice(&bytes).map_err(|e| ApiError::invalid_json(&e))?;
    let Value::Object(mut body) = body else {
        return Err(ApiError::Unprocessable(json!([{
            "type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a valid dictionary or object to extract fields from", "input": body
        }])));
    };
    let whole = Value::Object(body.clone());
    let filename = match body.remove("filename") {
        Some(Value::String(name)) => name,
        None => return Err(ApiError::missing("filename", &whole)),
        Some(other) => return Err(invalid("filename", "string_type", "Input should be a valid string", &other)),
    };
    let part = match body.remove("artifact") {
        Some(raw @ Value::Object(_)) => part_from_wire(raw.clone())
            .map_err(|e| invalid("artifact", "model_type", &format!("Input should be a valid Part: {e}"), &raw))?,
        None => return Err(ApiError::missing("artifact", &whole)),
        Some(other) => {
            return Err(invalid(
                "artifact",
                "model_type",
                "Input should be a valid dictionary or instance of Part",
                &other,
            ));
        }
    };
    let custom_metadata = match body.remove("customMetadata").or_else(|| body.remove("custom_metadata")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(other) => {
            return Err(invalid("customMetadata", "dict_type", "Input should be a valid dictionary", &other));
        }
    };
    let saved = artifacts.save(scope, &filename, &part, custom_metadata).await.map_err(refused)?;
    Ok(Json(version_json(&saved)))
}

fn invalid(field: &str, kind: &str, message: &str, input: &Value) -> ApiError {
    ApiError::Unprocessable(json!([{"type": kind, "loc": ["body", field], "msg": message, "input": input}]))
}

/// Whether reading a body failed on its length limit.
fn is_over_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// `GET …/sessions/{session}/artifacts`: the session's names and the user's `user:` names,
/// sorted.
pub(crate) async fn list(
    State(state): State<AppState>,
    Path((app, user, session)): Path<(String, String, String)>,
) -> Reply {
    list_in(&state, checked(&app, &user, Some(&session))?).await
}

/// `GET /apps/{app}/users/{user}/artifacts` (agentstate extension): the user's `user:` names.
pub(crate) async fn list_user(State(state): State<AppState>, Path((app, user)): Path<(String, String)>) -> Reply {
    list_in(&state, checked(&app, &user, None)?).await
}

async fn list_in(state: &AppState, scope: ArtifactScope<'_>) -> Reply {
    Ok(Json(json!(state.artifacts().list_keys(scope).await.map_err(refused)?)))
}

/// What a path past `/artifacts/` asks for, matched as `adk api_server` orders its routes.
#[derive(Debug, PartialEq, Eq)]
enum Asked<'a> {
    VersionMetadata(&'a str, &'a str),
    VersionsMetadata(&'a str),
    Version(&'a str, &'a str),
    Versions(&'a str),
    Artifact(&'a str),
}

fn asked(rest: &str) -> Asked<'_> {
    // Starlette's `{name:path}` is greedy: the last `/versions/` that fits.
    if let Some(before) = rest.strip_suffix("/metadata")
        && let Some((name, version)) = before.rsplit_once("/versions/")
        && !version.is_empty()
        && !version.contains('/')
    {
        return Asked::VersionMetadata(name, version);
    }
    if let Some(name) = rest.strip_suffix("/versions/metadata") {
        return Asked::VersionsMetadata(name);
    }
    if let Some((name, version)) = rest.rsplit_once("/versions/")
        && !version.is_empty()
        && !version.contains('/')
    {
        return Asked::Version(name, version);
    }
    if let Some(name) = rest.strip_suffix("/versions") {
        return Asked::Versions(name);
    }
    Asked::Artifact(rest)
}

/// The query of `GET …/artifacts/NAME`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct LoadQuery {
    version: Option<String>,
}

/// `GET …/artifacts/{path}`: an artifact (`?version=`), a version of it (`/versions/V`, `latest`
/// too), its version numbers (`/versions`), every version's metadata (`/versions/metadata`) or
/// one version's (`/versions/V/metadata`).
pub(crate) async fn get(
    State(state): State<AppState>,
    Path((app, user, session, rest)): Path<(String, String, String, String)>,
    Query(query): Query<LoadQuery>,
) -> Reply {
    get_in(&state, checked(&app, &user, Some(&session))?, &rest, query).await
}

/// `GET /apps/{app}/users/{user}/artifacts/{path}` (agentstate extension): the reads of
/// [`get`] for `user:` names, without a session.
pub(crate) async fn get_user(
    State(state): State<AppState>,
    Path((app, user, rest)): Path<(String, String, String)>,
    Query(query): Query<LoadQuery>,
) -> Reply {
    get_in(&state, checked(&app, &user, None)?, &rest, query).await
}

async fn get_in(state: &AppState, scope: ArtifactScope<'_>, rest: &str, query: LoadQuery) -> Reply {
    let artifacts: ArtifactService = state.artifacts();
    let not_found = || ApiError::NotFound("Artifact not found".into());
    match asked(rest) {
        Asked::VersionMetadata(name, version) => {
            let version = version_id(version)?;
            let found = artifacts.get_artifact_version(scope, name, version).await.map_err(refused)?;
            let found = found.ok_or_else(|| ApiError::NotFound("Artifact version not found".into()))?;
            Ok(Json(version_json(&found)))
        }
        Asked::VersionsMetadata(name) => {
            let versions = artifacts.list_artifact_versions(scope, name).await.map_err(refused)?;
            Ok(Json(Value::Array(versions.iter().map(version_json).collect())))
        }
        Asked::Version(name, version) => {
            let version = version_id(version)?;
            let part = artifacts.load(scope, name, version).await.map_err(refused)?.ok_or_else(not_found)?;
            Ok(Json(part_to_wire(&part)))
        }
        Asked::Versions(name) => Ok(Json(json!(artifacts.list_versions(scope, name).await.map_err(refused)?))),
        Asked::Artifact(name) => {
            let version = match query.version.as_deref() {
                None => None,
                Some(text) => Some(python_int(text).ok_or_else(|| {
                    ApiError::Unprocessable(json!([{
                        "type": "int_parsing", "loc": ["query", "version"],
                        "msg": "Input should be a valid integer, unable to parse string as an integer", "input": text
                    }]))
                })?),
            };
            let part = artifacts.load(scope, name, version).await.map_err(refused)?.ok_or_else(not_found)?;
            Ok(Json(part_to_wire(&part)))
        }
    }
}

/// `DELETE …/sessions/{session}/artifacts/{name}`: every version (also when there is none);
/// `null`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path((app, user, session, name)): Path<(String, String, String, String)>,
) -> Reply {
    state.artifacts().delete(checked(&app, &user, Some(&session))?, &name).await.map_err(refused)?;
    Ok(Json(Value::Null))
}

/// `DELETE /apps/{app}/users/{user}/artifacts/{name}` (agentstate extension): a `user:` name's
/// versions, without a session.
pub(crate) async fn delete_user(
    State(state): State<AppState>,
    Path((app, user, name)): Path<(String, String, String)>,
) -> Reply {
    state.artifacts().delete(checked(&app, &user, None)?, &name).await.map_err(refused)?;
    Ok(Json(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_matched_in_adk_api_servers_order() {
        assert_eq!(asked("a.txt"), Asked::Artifact("a.txt"));
        assert_eq!(asked("dir/a.txt/versions"), Asked::Versions("dir/a.txt"));
        assert_eq!(asked("a/versions/3"), Asked::Version("a", "3"));
        assert_eq!(asked("a/versions/latest/metadata"), Asked::VersionMetadata("a", "latest"));
        assert_eq!(asked("a/versions/metadata"), Asked::VersionsMetadata("a"));
        assert_eq!(asked("a/versions/b/versions/2"), Asked::Version("a/versions/b", "2"));
        assert_eq!(python_int(" 7 "), Some(7));
        assert_eq!(python_int("1_0"), Some(10));
        assert_eq!(python_int("-1"), Some(-1));
        for bad in ["", "x", "1.0", "_1", "1__0"] {
            assert_eq!(python_int(bad), None, "{bad}");
        }
    }
}
