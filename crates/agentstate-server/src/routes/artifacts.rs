//! Artifacts over HTTP: `adk api_server`'s eight artifact routes, answered as it answers them
//! (status codes, `detail` messages, camelCase parts with URL-safe base64 bytes, 422 for a bad
//! version), so `adk web` works against `agentstate serve`. Names may hold `/`: every route past
//! `/artifacts/` is one catch-all, read as `adk api_server` matches its routes, in its order:
//! `NAME/versions/V/metadata`, `NAME/versions/metadata`, `NAME/versions/V`, `NAME/versions`,
//! `NAME`. A save reads its own body limit (`--max-artifact-bytes`, base64 and JSON around it).

use agentstate::artifact::{ArtifactScope, ArtifactService, OpenedArtifact, TOO_LARGE_FIELD};
use agentstate::store::{Payload, PayloadKind};
use agentstate::wire::{part_from_wire, part_to_wire};
use agentstate::{Error, Value};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::header;
use axum::response::{IntoResponse as _, Response};
use bytes::BytesMut;
use futures_util::StreamExt as _;
use serde_json::json;

use super::artifact_body::{self, IN_PLACE_FROM, Taken};
use crate::error::ApiError;
use crate::state::AppState;

type Reply = Result<Json<Value>, ApiError>;
/// A read's answer: JSON, or a streamed part.
type Answer = Result<Response, ApiError>;

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
    let too_large = || {
        ApiError::TooLarge(format!(
            "The request body exceeds the limit of {limit} bytes for an artifact of {} bytes (--max-artifact-bytes)",
            artifacts.max_bytes()
        ))
    };
    let bytes = read_body(request, limit).await?.ok_or_else(too_large)?;
    // A large body's base64 is taken out and decoded where it lies; the rest is read as usual.
    let taken = (bytes.len() >= IN_PLACE_FROM).then(|| artifact_body::take_data(&bytes)).flatten();
    let (filename, part, custom_metadata) = read_save(taken.as_ref().map_or(&bytes[..], |t| &t.rest[..]))?;
    let saved = match taken {
        Some(Taken { span, .. }) => {
            let payload = artifact_body::decode_in_place(bytes, span)
                .ok_or_else(|| ApiError::BadRequest("inline_data.data is not valid base64.".into()))?;
            artifacts.save_inline(scope, &filename, &part, payload, custom_metadata).await
        }
        None => artifacts.save(scope, &filename, &part, custom_metadata).await,
    };
    let saved = saved.map_err(refused)?;
    Ok(Json(version_json(&saved)))
}

/// A save body's file name, part and custom metadata.
type SaveFields = (String, agentstate::Part, Option<agentstate::Map<String, Value>>);

/// A save body's fields, refused as FastAPI refuses them (422 with pydantic's details).
fn read_save(bytes: &[u8]) -> Result<SaveFields, ApiError> {
    let body: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_json(&e))?;
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
    Ok((filename, part, custom_metadata))
}

fn invalid(field: &str, kind: &str, message: &str, input: &Value) -> ApiError {
    ApiError::Unprocessable(json!([{"type": kind, "loc": ["body", field], "msg": message, "input": input}]))
}

/// A request's body in one buffer, read frame by frame into room its `Content-Length` reserves (so
/// it is whole once, never collected and then copied); `None` past `limit` bytes.
async fn read_body(request: Request, limit: usize) -> Result<Option<BytesMut>, ApiError> {
    let announced = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if announced.is_some_and(|n| n > limit) {
        return Ok(None);
    }
    let mut buffer = BytesMut::with_capacity(announced.unwrap_or_default());
    let mut frames = request.into_body().into_data_stream();
    while let Some(frame) = frames.next().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) if is_over_limit(&e) => return Ok(None),
            Err(e) => return Err(ApiError::BadRequest(format!("Could not read the request body: {e}"))),
        };
        if buffer.len() + frame.len() > limit {
            return Ok(None);
        }
        buffer.extend_from_slice(&frame);
    }
    Ok(Some(buffer))
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
    /// agentstate extension: `media` answers the payload's bytes themselves (`json`, the default,
    /// the part).
    alt: Option<String>,
}

/// `GET …/artifacts/{path}`: an artifact (`?version=`), a version of it (`/versions/V`, `latest`
/// too), its version numbers (`/versions`), every version's metadata (`/versions/metadata`) or
/// one version's (`/versions/V/metadata`).
pub(crate) async fn get(
    State(state): State<AppState>,
    Path((app, user, session, rest)): Path<(String, String, String, String)>,
    Query(query): Query<LoadQuery>,
) -> Answer {
    get_in(&state, checked(&app, &user, Some(&session))?, &rest, query).await
}

/// `GET /apps/{app}/users/{user}/artifacts/{path}` (agentstate extension): the reads of
/// [`get`] for `user:` names, without a session.
pub(crate) async fn get_user(
    State(state): State<AppState>,
    Path((app, user, rest)): Path<(String, String, String)>,
    Query(query): Query<LoadQuery>,
) -> Answer {
    get_in(&state, checked(&app, &user, None)?, &rest, query).await
}

async fn get_in(state: &AppState, scope: ArtifactScope<'_>, rest: &str, query: LoadQuery) -> Answer {
    let artifacts: ArtifactService = state.artifacts();
    let media = match query.alt.as_deref() {
        None | Some("json") => false,
        Some("media") => true,
        Some(other) => return Err(ApiError::BadRequest(format!("alt must be json or media, not {other:?}"))),
    };
    let not_found = || ApiError::NotFound("Artifact not found".into());
    match asked(rest) {
        Asked::VersionMetadata(name, version) => {
            let version = version_id(version)?;
            let found = artifacts.get_artifact_version(scope, name, version).await.map_err(refused)?;
            let found = found.ok_or_else(|| ApiError::NotFound("Artifact version not found".into()))?;
            Ok(Json(version_json(&found)).into_response())
        }
        Asked::VersionsMetadata(name) => {
            let versions = artifacts.list_artifact_versions(scope, name).await.map_err(refused)?;
            Ok(Json(Value::Array(versions.iter().map(version_json).collect())).into_response())
        }
        Asked::Version(name, version) => {
            let version = version_id(version)?;
            let opened = artifacts.open(scope, name, version).await.map_err(refused)?.ok_or_else(not_found)?;
            answer(opened, media).await
        }
        Asked::Versions(name) => {
            Ok(Json(json!(artifacts.list_versions(scope, name).await.map_err(refused)?)).into_response())
        }
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
            let opened = artifacts.open(scope, name, version).await.map_err(refused)?.ok_or_else(not_found)?;
            answer(opened, media).await
        }
    }
}

/// A loaded version: the part as JSON, or with `media` its bytes.
async fn answer(opened: OpenedArtifact, media: bool) -> Answer {
    if media { media_answer(opened) } else { part_answer(opened).await }
}

/// A version's payload as it is (`?alt=media`), streamed, typed with its MIME type.
fn media_answer(opened: OpenedArtifact) -> Answer {
    let mime = match opened.kind {
        PayloadKind::Inline => opened.part.inline_data.and_then(|b| b.mime_type),
        PayloadKind::Text => Some("text/plain; charset=utf-8".to_owned()),
        PayloadKind::None => {
            return Err(ApiError::BadRequest(
                "The artifact refers to a file (fileData) and holds no bytes; load it without alt=media".into(),
            ));
        }
    };
    let length = opened.payload.size().to_string();
    let body = match opened.payload {
        Payload::Whole(bytes) => Body::from(bytes),
        Payload::Chunks { stream, .. } => Body::from_stream(stream),
    };
    let mime = mime.unwrap_or_else(|| "application/octet-stream".to_owned());
    Ok(([(header::CONTENT_TYPE, mime), (header::CONTENT_LENGTH, length)], body).into_response())
}

/// The query of a raw upload: the artifact's custom metadata, a JSON object.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct UploadQuery {
    metadata: Option<String>,
}

/// `POST …/sessions/{session}/artifacts/{name}` (agentstate extension): the request's body is
/// the artifact's bytes, its `Content-Type` their MIME type; saved as the next version, streamed
/// to its file with `--artifacts-dir` (never whole in memory). Answers the version's metadata.
pub(crate) async fn upload(
    State(state): State<AppState>,
    Path((app, user, session, name)): Path<(String, String, String, String)>,
    Query(query): Query<UploadQuery>,
    request: Request,
) -> Reply {
    upload_in(&state, checked(&app, &user, Some(&session))?, &name, query, request).await
}

/// `POST /apps/{app}/users/{user}/artifacts/{name}` (agentstate extension): [`upload`] of a
/// `user:` name, without a session.
pub(crate) async fn upload_user(
    State(state): State<AppState>,
    Path((app, user, name)): Path<(String, String, String)>,
    Query(query): Query<UploadQuery>,
    request: Request,
) -> Reply {
    upload_in(&state, checked(&app, &user, None)?, &name, query, request).await
}

async fn upload_in(
    state: &AppState,
    scope: ArtifactScope<'_>,
    name: &str,
    query: UploadQuery,
    request: Request,
) -> Reply {
    let custom_metadata = match query.metadata.as_deref().map(serde_json::from_str::<Value>) {
        None => None,
        Some(Ok(Value::Object(map))) => Some(map),
        Some(_) => return Err(ApiError::BadRequest("metadata must be a JSON object".into())),
    };
    let mime = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let chunks = request.into_body().into_data_stream().map(|frame| {
        frame.map_err(|e| agentstate::Error::invalid("body", format!("Could not read the request body: {e}")))
    });
    let saved = state.artifacts().save_chunks(scope, name, mime.as_deref(), chunks.boxed(), custom_metadata).await;
    Ok(Json(version_json(&saved.map_err(refused)?)))
}

/// A loaded part as `adk api_server` answers it (camelCase, URL-safe base64): inline data
/// streamed, its base64 encoded as the payload is read (from its file, with the filesystem
/// store), so a large one is never whole in the answer; other parts whole.
async fn part_answer(opened: OpenedArtifact) -> Result<Response, ApiError> {
    let OpenedArtifact { mut part, kind, payload } = opened;
    if kind != PayloadKind::Inline {
        if kind == PayloadKind::Text {
            let bytes = payload.into_bytes().await?;
            let text = String::from_utf8(Vec::from(bytes))
                .map_err(|e| ApiError::Internal(format!("a stored text artifact is not UTF-8: {e}")))?;
            part.text = Some(text);
        }
        return Ok(Json(part_to_wire(&part)).into_response());
    }
    // The part's JSON with a marker where the data goes, cut around it.
    let marker = format!("agentstate-payload-{}", uuid::Uuid::new_v4());
    if let Some(blob) = part.inline_data.as_mut() {
        blob.data = Some(marker.clone());
    }
    let text = part_to_wire(&part).to_string();
    let Some((prefix, suffix)) = text.split_once(&marker) else {
        return Err(ApiError::Internal("an inline artifact's answer has no place for its data".into()));
    };
    let length = artifact_body::encoded_len(prefix, &payload, suffix).to_string();
    let body = artifact_body::encoded(prefix.to_owned(), payload, suffix.to_owned());
    let headers = [(header::CONTENT_TYPE, "application/json".to_owned()), (header::CONTENT_LENGTH, length)];
    Ok((headers, Body::from_stream(body)).into_response())
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
