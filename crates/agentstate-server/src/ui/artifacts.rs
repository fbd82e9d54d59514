//! The inspector's artifacts panel on a session page: the session's artifacts and the user's
//! `user:` ones, each with its versions (type, size, time), the latest shown inline when it is
//! text (the start of it) or a small image.

use agentstate::artifact::{ArtifactScope, ArtifactVersion};
use agentstate::{Part, SessionKey};
use maud::{Markup, html};

use crate::state::AppState;

/// The most text shown of an artifact.
const TEXT_CHARS: usize = 2000;
/// The largest image shown inline (bytes of base64).
const IMAGE_BYTES: usize = 512 << 10;

fn preview(part: &Part) -> Markup {
    if let Some(text) = &part.text {
        let shown: String = text.chars().take(TEXT_CHARS).collect();
        return html! { pre.artifact-text { (shown) @if shown.len() < text.len() { "…" } } };
    }
    let Some(blob) = &part.inline_data else { return html! {} };
    let mime = blob.mime_type.as_deref().unwrap_or_default();
    let data = blob.data.as_deref().unwrap_or_default();
    if mime.starts_with("image/") && !mime.contains("svg") && data.len() <= IMAGE_BYTES {
        // Standard base64 for the data: URI (the wire's is URL-safe).
        let standard = data.replace('-', "+").replace('_', "/");
        return html! { img.artifact-image src={ "data:" (mime) ";base64," (standard) } alt="artifact preview"; };
    }
    if mime.starts_with("text/") || mime == "application/json" {
        let bytes = agentstate::artifact::model::decode_base64(data).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let shown: String = text.chars().take(TEXT_CHARS).collect();
        return html! { pre.artifact-text { (shown) @if shown.len() < text.len() { "…" } } };
    }
    html! {}
}

fn version_line(v: &ArtifactVersion) -> Markup {
    let time = agentstate::Timestamp::from_secs(v.create_time).map(|t| t.rfc3339()).unwrap_or_default();
    html! {
        li { "v" (v.version) " · " (v.mime_type.as_deref().unwrap_or("reference")) " · " (v.size) " bytes · " time { (time) } }
    }
}

/// The panel, or nothing when the store keeps no artifacts or the session has none.
pub(super) async fn panel(state: &AppState, key: &SessionKey) -> Markup {
    let artifacts = state.artifacts();
    if !artifacts.is_supported() {
        return html! {};
    }
    let scope = ArtifactScope::new(key.app_name(), key.user_id(), Some(key.session_id()));
    let Ok(names) = artifacts.list_keys(scope).await else {
        return html! { section.artifacts { h2 { "Artifacts" } p.problem { "The artifacts could not be read." } } };
    };
    if names.is_empty() {
        return html! {};
    }
    let mut shown = Vec::with_capacity(names.len());
    for name in names {
        let versions = artifacts.list_artifact_versions(scope, &name).await.unwrap_or_default();
        let latest = artifacts.load(scope, &name, None).await.ok().flatten();
        shown.push((name, versions, latest));
    }
    html! {
        section.artifacts {
            h2 { "Artifacts" }
            @for (name, versions, latest) in &shown {
                details.artifact {
                    summary { code { (name) } " · " (versions.len()) @if versions.len() == 1 { " version" } @else { " versions" } }
                    ol.versions { @for v in versions { (version_line(v)) } }
                    @if let Some(part) = latest { (preview(part)) } @else { p.empty { "The latest version is a rewind's tombstone (none)." } }
                }
            }
        }
    }
}
