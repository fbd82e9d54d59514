//! What an artifact is made of: the checks ADK for Python 2.13 makes on names and ids
//! (`artifact_util.validate_path_segment`), its `artifact://` references, and a part taken apart
//! into the bytes a store keeps apart (inline data, text) and the rest.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::content::Part;
use crate::error::{Error, Result};
use crate::python::repr;
use crate::store::{ArtifactKey, Bytes, PayloadKind, StoredArtifact};

/// How many references a load follows before it refuses (ADK's `_MAX_ARTIFACT_REFERENCE_DEPTH`).
pub const MAX_REFERENCE_DEPTH: usize = 5;

/// The longest artifact name, in characters.
pub const MAX_NAME_CHARS: usize = 256;

/// Segments an id with a `/` may not hold: they would read as a reference's structure.
const RESERVED_SEGMENTS: [&str; 5] = ["apps", "users", "sessions", "artifacts", "versions"];

/// ADK's `InputValidationError`: the message alone, as ADK words it (answered as the `detail` of
/// a 400).
pub(crate) fn refused(message: impl Into<String>) -> Error {
    Error::InvalidArgument { field: "artifact", message: message.into() }
}

/// ADK's `validate_path_segment`: an app, user or session id that cannot change where an
/// artifact goes.
pub fn validate_segment(value: &str, field: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(refused(format!("{field} must not be empty.")));
    }
    let chars = value.chars().count();
    if chars > crate::MAX_ID_CHARS {
        return Err(refused(format!(
            "{field} is {chars} characters long; at most {} are allowed.",
            crate::MAX_ID_CHARS
        )));
    }
    if value.contains('\0') {
        return Err(refused(format!("{field} must not contain null bytes.")));
    }
    if value.starts_with('/') || value.starts_with('\\') {
        return Err(refused(format!("{field} {} must not be an absolute path or start with a slash.", repr(value))));
    }
    let bytes = value.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(refused(format!("{field} {} must not be drive-qualified.", repr(value))));
    }
    let slashed = value.replace('\\', "/");
    if value == "." || slashed.split('/').any(|s| s == "..") {
        return Err(refused(format!("{field} {} must not contain traversal segments.", repr(value))));
    }
    if value.contains(['/', '\\']) && slashed.split('/').any(|s| RESERVED_SEGMENTS.contains(&s.to_lowercase().as_str()))
    {
        return Err(refused(format!("{field} {} must not contain reserved path segments.", repr(value))));
    }
    Ok(())
}

/// A session id of a session-scoped artifact: a segment, and not `user` (ADK's flat stores
/// reserve it for user-scoped artifacts).
pub fn validate_session(session: &str) -> Result<()> {
    validate_segment(session, "session_id")?;
    if session.replace('\\', "/").split('/').next() == Some("user") {
        return Err(refused("session_id must not be or start with the reserved value 'user'."));
    }
    Ok(())
}

/// Whether a name is the user's across sessions.
pub fn is_user_scoped(name: &str) -> bool {
    name.starts_with("user:")
}

/// The key of `name` for the caller `(app, user, session)`: user-scoped for `user:` names,
/// else the session's (which must then be given).
pub fn key_of(app: &str, user: &str, session: Option<&str>, name: &str) -> Result<ArtifactKey> {
    validate_segment(app, "app_name")?;
    validate_segment(user, "user_id")?;
    let session = if is_user_scoped(name) {
        None
    } else {
        let session = session.ok_or_else(|| refused("Session ID must be provided for session-scoped artifacts."))?;
        validate_session(session)?;
        Some(session.to_owned())
    };
    validate_name(name)?;
    Ok(ArtifactKey { app: app.to_owned(), user: user.to_owned(), session, name: name.to_owned() })
}

/// A file name: not empty, relative (ADK's file store's rules: no root, no drive, no `..`
/// segment), no NUL. `/` is allowed: names may be paths.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(refused("filename must not be empty."));
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(refused(format!("filename is {chars} characters long; at most {MAX_NAME_CHARS} are allowed.")));
    }
    if name.contains('\0') {
        return Err(refused("filename must not contain null bytes."));
    }
    let bytes = name.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if name.starts_with(['/', '\\']) || drive {
        return Err(refused(format!(
            "Rooted or drive-qualified artifact filename {} is not permitted; provide a path relative to the \
             storage scope.",
            repr(name)
        )));
    }
    if name.replace('\\', "/").split('/').any(|s| s == "..") {
        return Err(refused(format!("Artifact filename {} must not contain parent traversal.", repr(name))));
    }
    Ok(())
}

/// The `artifact://` URI of a version (ADK's `get_artifact_uri`): where a reference points, and
/// a version's canonical URI here.
pub fn uri_of(key: &ArtifactKey, version: i64) -> String {
    match &key.session {
        Some(session) => format!(
            "artifact://apps/{}/users/{}/sessions/{session}/artifacts/{}/versions/{version}",
            key.app, key.user, key.name
        ),
        None => format!("artifact://apps/{}/users/{}/artifacts/{}/versions/{version}", key.app, key.user, key.name),
    }
}

/// A parsed `artifact://` URI: the artifact and version it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef {
    /// The artifact.
    pub key: ArtifactKey,
    /// The version.
    pub version: i64,
}

/// Parses an `artifact://` URI as ADK does (app, user and session segments hold no `/apps/`,
/// `/users/`… boundary; the file name is what lies between `artifacts/` and the last
/// `/versions/N`); `None` if it is not one.
pub fn parse_uri(uri: &str) -> Option<ArtifactRef> {
    let rest = uri.strip_prefix("artifact://apps/")?;
    let (before, version) = rest.rsplit_once("/versions/")?;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let version = version.parse().ok()?;
    let (app, rest) = segment(before, "/users/")?;
    let (user, session, name) = match segment(rest, "/sessions/") {
        Some((user, rest)) => {
            let (session, name) = segment(rest, "/artifacts/")?;
            (user, Some(session), name)
        }
        None => {
            let (user, name) = segment(rest, "/artifacts/")?;
            (user, None, name)
        }
    };
    if name.is_empty() {
        return None;
    }
    let key = ArtifactKey { app: app.into(), user: user.into(), session: session.map(Into::into), name: name.into() };
    Some(ArtifactRef { key, version })
}

/// `text` split at the first `separator` whose left side is a segment (non-empty, crossing no
/// reserved `/apps/`… boundary).
fn segment<'a>(text: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    let (left, right) = text.split_once(separator)?;
    let crosses = RESERVED_SEGMENTS.iter().any(|r| left.contains(&format!("/{r}/")));
    (!left.is_empty() && !crosses).then_some((left, right))
}

/// A reference's target, checked against the caller's scope (ADK's
/// `validate_artifact_reference_scope`).
pub fn check_scope(target: &ArtifactRef, app: &str, user: &str, session: Option<&str>) -> Result<()> {
    if target.key.app != app || target.key.user != user {
        return Err(refused("Artifact references must stay within the same app and user scope."));
    }
    if target.key.session.is_some() && target.key.session.as_deref() != session {
        return Err(refused("Session-scoped artifact references must stay within the same session scope."));
    }
    Ok(())
}

/// A part split for storage: its payload and the rest, with its MIME type.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPart {
    /// The part without its payload (snake_case JSON).
    pub rest: Map<String, Value>,
    /// Where the payload goes back.
    pub kind: PayloadKind,
    /// The payload.
    pub data: Bytes,
    /// Inline data's type, `text/plain` for text, a file's type; `None` for a reference.
    pub mime_type: Option<String>,
    /// The URI when the part is an `artifact://` reference.
    pub reference: Option<String>,
}

/// The `file_data` of a part, snake_case (`fileData`/`fileUri`/`mimeType` accepted).
fn file_data(part: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    let value = part.remove("file_data").or_else(|| part.remove("fileData"))?;
    let Value::Object(fields) = value else { return None };
    let fields: Map<String, Value> = fields
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "fileUri" => ("file_uri".to_owned(), v),
            "mimeType" => ("mime_type".to_owned(), v),
            "displayName" => ("display_name".to_owned(), v),
            _ => (k, v),
        })
        .collect();
    part.insert("file_data".into(), Value::Object(fields.clone()));
    Some(fields)
}

/// The base64 ADK's clients send, once standard letters are mapped to URL-safe ones (see
/// [`decode_base64`]): URL-safe, padded or not.
pub const ADK_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Decodes base64 as ADK's clients send it: URL-safe or standard, padded or not.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    // Standard base64 read as URL-safe: its two letters mapped, when it has any.
    let standard = |b: &u8| matches!(b, b'+' | b'/');
    let normalized: std::borrow::Cow<'_, [u8]> = match text.as_bytes().iter().any(standard) {
        true => text
            .bytes()
            .map(|b| match b {
                b'+' => b'-',
                b'/' => b'_',
                b => b,
            })
            .collect::<Vec<u8>>()
            .into(),
        false => text.as_bytes().into(),
    };
    ADK_BASE64.decode(&normalized).ok()
}

/// Encodes bytes as ADK for Python answers them: URL-safe base64, padded.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE.encode(bytes)
}

/// Takes `part` apart for storage, refusing what ADK refuses: a part with neither inline data,
/// text nor a file (`"Not supported artifact type."`), inline data that is not base64.
pub fn split(part: &Part) -> Result<SplitPart> {
    let Value::Object(mut rest) = serde_json::to_value(part).map_err(|e| refused(e.to_string()))? else {
        return Err(refused("Not supported artifact type."));
    };
    if let Some(Value::Object(mut blob)) = rest.remove("inline_data") {
        let data = match blob.remove("data") {
            Some(Value::String(text)) => {
                decode_base64(&text).ok_or_else(|| refused("inline_data.data is not valid base64."))?.into()
            }
            _ => Bytes::new(),
        };
        let mime_type = blob.get("mime_type").and_then(Value::as_str).map(str::to_owned);
        rest.insert("inline_data".into(), Value::Object(blob));
        return Ok(SplitPart { rest, kind: PayloadKind::Inline, data, mime_type, reference: None });
    }
    if let Some(Value::String(text)) = rest.remove("text") {
        let mime_type = Some("text/plain".to_owned());
        return Ok(SplitPart {
            rest,
            kind: PayloadKind::Text,
            data: text.into_bytes().into(),
            mime_type,
            reference: None,
        });
    }
    if let Some(file) = file_data(&mut rest) {
        let uri = file.get("file_uri").and_then(Value::as_str);
        let reference = uri.filter(|u| u.starts_with("artifact://")).map(str::to_owned);
        let mime_type = match reference {
            Some(_) => None,
            None => file.get("mime_type").and_then(Value::as_str).map(str::to_owned),
        };
        return Ok(SplitPart { rest, kind: PayloadKind::None, data: Bytes::new(), mime_type, reference });
    }
    Err(refused("Not supported artifact type."))
}

/// Takes apart an inline-data `part` whose bytes were decoded already: `payload` (the part's own
/// `data`, if any, is ignored). Refuses a part without inline data.
pub fn split_inline(part: &Part, payload: Bytes) -> Result<SplitPart> {
    let Some(blob) = &part.inline_data else { return Err(refused("Not supported artifact type.")) };
    let blob = crate::content::Blob { mime_type: blob.mime_type.clone(), data: None, extra: blob.extra.clone() };
    let bare = Part {
        text: part.text.clone(),
        thought: part.thought,
        function_call: part.function_call.clone(),
        function_response: part.function_response.clone(),
        inline_data: Some(blob),
        extra: part.extra.clone(),
    };
    let split = split(&bare)?;
    Ok(SplitPart { data: payload, ..split })
}

/// A stored version put back together as the part that was saved.
pub fn join(stored: StoredArtifact) -> Result<Part> {
    let mut part = stored.part;
    match stored.kind {
        PayloadKind::Inline => {
            let mut blob = match part.remove("inline_data") {
                Some(Value::Object(blob)) => blob,
                _ => Map::new(),
            };
            blob.insert("data".into(), Value::String(encode_base64(&stored.data)));
            part.insert("inline_data".into(), Value::Object(blob));
        }
        PayloadKind::Text => {
            let text = String::from_utf8(stored.data.into()).map_err(|e| Error::Backend {
                message: format!("a stored text artifact is not UTF-8: {e}"),
                retryable: false,
                source: None,
            })?;
            part.insert("text".into(), Value::String(text));
        }
        PayloadKind::None => {}
    }
    serde_json::from_value(Value::Object(part)).map_err(|e| Error::Backend {
        message: format!("a stored artifact does not read as a part: {e}"),
        retryable: false,
        source: None,
    })
}

/// The `artifact://` URI a stored version refers to, if it is a reference.
pub fn reference_of(stored: &StoredArtifact) -> Option<&str> {
    if stored.kind != PayloadKind::None {
        return None;
    }
    stored.part.get("file_data")?.get("file_uri")?.as_str().filter(|u| u.starts_with("artifact://"))
}

/// Whether a stored version is the rewind tombstone (an empty `application/octet-stream` inline
/// part and nothing else), which loads as absent.
pub fn is_tombstone(stored: &StoredArtifact) -> bool {
    if stored.kind != PayloadKind::Inline || stored.meta.size != 0 || stored.part.len() != 1 {
        return false;
    }
    let Some(Value::Object(blob)) = stored.part.get("inline_data") else { return false };
    blob.len() == 1 && blob.get("mime_type").and_then(Value::as_str) == Some("application/octet-stream")
}

/// The part a rewind saves to remove an artifact (ADK's `_new_rewind_tombstone`).
pub fn tombstone() -> Part {
    Part {
        inline_data: Some(crate::content::Blob {
            mime_type: Some("application/octet-stream".into()),
            data: Some(String::new()),
            extra: Map::new(),
        }),
        ..Part::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_checked_as_adk_checks_them() {
        assert!(validate_segment("s-1", "session_id").is_ok());
        assert!(validate_segment("a/b", "session_id").is_ok());
        for (bad, says) in [
            ("", "must not be empty"),
            (" ", "must not be empty"),
            ("../x", "traversal"),
            ("..", "traversal"),
            ("/abs", "absolute path"),
            ("C:x", "drive-qualified"),
            ("a/Users/b", "reserved path segments"),
            ("a\0b", "null bytes"),
        ] {
            let e = validate_segment(bad, "session_id").unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        assert!(validate_session("user").is_err() && validate_session("user/x").is_err());
        assert!(validate_session("users").is_ok());
        let e = validate_segment("../x", "user_id").unwrap_err().to_string();
        assert!(e.ends_with("user_id '../x' must not contain traversal segments."), "{e}");
    }

    #[test]
    fn uris_round_trip_and_names_may_hold_slashes() {
        for session in [Some("s"), None] {
            let key = key_of("app", "u", session, if session.is_some() { "dir/a.txt" } else { "user:x" }).unwrap();
            let uri = uri_of(&key, 3);
            assert_eq!(parse_uri(&uri), Some(ArtifactRef { key, version: 3 }), "{uri}");
        }
        assert_eq!(parse_uri("artifact://apps/a/users/u/artifacts/n/versions/x"), None);
        assert_eq!(parse_uri("gs://b/x"), None);
        assert_eq!(parse_uri("artifact://apps/a/b/users/u/artifacts/n/versions/1").unwrap().key.app, "a/b");
    }

    #[test]
    fn parts_split_and_join_back() {
        let parts = [
            serde_json::json!({"inline_data": {"mime_type": "image/png", "data": "AAEC_w=="}}),
            serde_json::json!({"inlineData": {"mimeType": "image/png", "data": "AAEC/w"}}),
            serde_json::json!({"text": "hello"}),
            serde_json::json!({"file_data": {"file_uri": "gs://b/x", "mime_type": "text/csv"}}),
        ];
        for raw in parts {
            let part: Part = serde_json::from_value(raw.clone()).unwrap();
            let split = split(&part).unwrap();
            let stored = StoredArtifact {
                meta: crate::store::ArtifactMeta {
                    version: 0,
                    mime_type: split.mime_type.clone(),
                    custom_metadata: Map::new(),
                    create_micros: 0,
                    size: split.data.len() as u64,
                },
                part: split.rest,
                kind: split.kind,
                data: split.data,
            };
            let back = serde_json::to_value(join(stored).unwrap()).unwrap();
            if raw.get("inlineData").is_some() {
                assert_eq!(back["inline_data"]["data"], "AAEC_w==");
            } else if raw.get("file_data").is_some() {
                assert_eq!(back["file_data"], raw["file_data"]);
            } else {
                assert_eq!(back, raw);
            }
        }
        assert!(split(&Part::default()).unwrap_err().to_string().contains("Not supported artifact type."));
        let bad: Part = serde_json::from_value(serde_json::json!({"inline_data": {"data": "!!"}})).unwrap();
        assert!(split(&bad).is_err());
    }
}
