//! Artifacts as instruction text (`{artifact.name}`), as ADK for Python renders them: a text
//! part is its text; inline data of a text-like type (or a `.csv`, `.txt`, `.json`, `.xml` name) is
//! its bytes as UTF-8; other inline data is a line naming the artifact, its type and size. (ADK
//! shows Gemini-supported binary types such as images as Python's `repr` of the part; agentstate
//! describes them as it does other binaries.)

use agentstate::Part;

use crate::context::ArtifactAccess;
use crate::template::{ArtifactTexts, Template};

/// MIME types ADK treats as text besides `text/*`.
const TEXT_LIKE: [&str; 7] = [
    "application/csv",
    "application/json",
    "application/svg+xml",
    "application/xml",
    "image/svg",
    "image/svg+xml",
    "image/xml",
];

/// The text of an artifact in an instruction.
pub(crate) fn artifact_text(part: &Part, name: &str) -> String {
    if let Some(text) = &part.text {
        return text.clone();
    }
    if let Some(blob) = &part.inline_data {
        let mime = blob.mime_type.as_deref().unwrap_or("application/octet-stream").to_ascii_lowercase();
        let mime = mime.split(';').next().unwrap_or_default().trim().to_owned();
        let Some(data) = blob.data.as_deref() else {
            return format!("[Artifact: {name}, type: {mime}. No inline data was provided.]");
        };
        let bytes = agentstate::artifact::model::decode_base64(data).unwrap_or_else(|| data.as_bytes().to_vec());
        let lower = name.to_ascii_lowercase();
        let named_as_text = [".csv", ".txt", ".json", ".xml"].iter().any(|ext| lower.ends_with(ext));
        if mime.starts_with("text/") || TEXT_LIKE.contains(&mime.as_str()) || named_as_text {
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        #[allow(clippy::cast_precision_loss)] // a size shown to one decimal
        let kb = bytes.len() as f64 / 1024.0;
        return format!(
            "[Binary artifact: {name}, type: {mime}, size: {kb:.1} KB. Content cannot be displayed inline.]"
        );
    }
    serde_json::to_string(part).unwrap_or_default()
}

/// The texts of the artifacts `template` names, loaded in the session's scope.
pub(crate) async fn load_texts(access: &ArtifactAccess, template: &Template) -> agentstate::Result<ArtifactTexts> {
    let mut texts = ArtifactTexts::new();
    for placeholder in template.placeholders().filter(|p| p.artifact) {
        if texts.contains_key(&placeholder.name) {
            continue;
        }
        let part = access.service.load(access.scope(), &placeholder.name, None).await?;
        texts.insert(placeholder.name.clone(), part.map(|p| artifact_text(&p, &placeholder.name)));
    }
    Ok(texts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn part(raw: serde_json::Value) -> Part {
        serde_json::from_value(raw).unwrap()
    }

    #[test]
    fn artifacts_read_as_adk_reads_them() {
        assert_eq!(artifact_text(&Part::text("hi"), "a"), "hi");
        let csv = part(json!({"inline_data": {"mime_type": "text/csv", "data": "YSxi"}}));
        assert_eq!(artifact_text(&csv, "t"), "a,b");
        let json_named = part(json!({"inline_data": {"mime_type": "application/octet-stream", "data": "e30="}}));
        assert_eq!(artifact_text(&json_named, "x.json"), "{}");
        let png = part(json!({"inline_data": {"mime_type": "image/png", "data": "AAAA"}}));
        assert_eq!(
            artifact_text(&png, "p.png"),
            "[Binary artifact: p.png, type: image/png, size: 0.0 KB. Content cannot be displayed inline.]"
        );
    }
}
