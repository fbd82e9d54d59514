//! A memory's revisions (list, get, roll back to one) and `memories:retrieveProfiles`.

use std::collections::BTreeMap;

use agentstate::Value;
use agentstate::memory::Revision;
use axum::Json;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde_json::json;

use super::{MemoryCall, Reply, page_size, refuse_unknown, scope_of};
use crate::limits::Body;
use crate::routes::vertex::error::GoogleError;
use crate::routes::vertex::request::{self, string, take};
use crate::routes::vertex::{Page, query};

/// A revision filter: labels that must all be there with these values.
fn labels_filter(filter: &str) -> Result<BTreeMap<String, String>, GoogleError> {
    let bad = || {
        GoogleError::invalid(format!(
            "filter {filter:?} is not supported; revisions are filtered by labels: labels.KEY=\"VALUE\", \
             terms joined by AND"
        ))
    };
    let mut wanted = BTreeMap::new();
    for term in filter.split(" AND ").map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term.split_once('=').ok_or_else(bad)?;
        let key = key.trim().strip_prefix("labels.").filter(|k| !k.is_empty()).ok_or_else(bad)?;
        let value = value.trim();
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).ok_or_else(bad)?;
        wanted.insert(key.to_owned(), value.to_owned());
    }
    Ok(wanted)
}

/// The revision number a page token (the number of the last revision of the page before)
/// starts before.
fn revision_after(token: &str) -> Result<u64, GoogleError> {
    token.parse().map_err(|_| GoogleError::invalid("page_token is not a revision page token this service issued"))
}

fn number(revision: &Revision) -> u64 {
    revision.id.parse().unwrap_or(0)
}

/// `GET …/memories/{id}/revisions[?pageSize][&pageToken][&filter=labels.K="V"]`: the memory's
/// revisions, newest first.
pub(crate) async fn revisions(call: MemoryCall, page_query: Result<Query<Page>, QueryRejection>) -> Reply {
    let page = query(page_query)?;
    let memory = call.named().await?;
    let wanted = labels_filter(page.filter.as_deref().unwrap_or_default())?;
    if page.order_by.as_deref().is_some_and(|o| !o.trim().is_empty()) {
        return Err(GoogleError::invalid("orderBy is not supported on revisions; they are listed newest first"));
    }
    let before = page.page_token.as_deref().filter(|t| !t.is_empty()).map(revision_after).transpose()?;
    let size = page_size(page.page_size);
    let mut matching = memory
        .revisions()
        .iter()
        .rev()
        .filter(|r| before.is_none_or(|b| number(r) < b))
        .filter(|r| wanted.iter().all(|(k, v)| r.labels.get(k) == Some(v)));
    let listed: Vec<&Revision> = matching.by_ref().take(size).collect();
    let shown: Vec<Value> = listed.iter().map(|r| call.revision_json(&memory, r)).collect();
    let mut out = json!({"memoryRevisions": shown});
    if matching.next().is_some()
        && let Some(last) = listed.last()
    {
        out["nextPageToken"] = json!(last.id);
    }
    Ok(Json(out))
}

/// `GET …/memories/{id}/revisions/{revision}`.
pub(crate) async fn revision(mut call: MemoryCall) -> Reply {
    let id = call.revision.take().unwrap_or_default();
    let memory = call.named().await?;
    match memory.revision(&id) {
        Some(revision) => Ok(Json(call.revision_json(&memory, revision))),
        None => Err(GoogleError::not_found(format!(
            "Memory revision {}/revisions/{id} not found.",
            call.engine.memory_name(&memory.id)
        ))),
    }
}

/// `POST …/memories/{id}:rollback {targetRevisionId}`: the memory's fact set back to that of
/// the revision (a new revision); a done operation.
pub(crate) async fn rollback(mut call: MemoryCall, Body(bytes): Body) -> Reply {
    let Some(id) = call.memory.strip_suffix(":rollback").map(str::to_owned) else {
        let segment = &call.memory;
        return Err(GoogleError::not_found(format!("no method {segment:?}; memories answer :rollback")));
    };
    call.memory = id;
    let mut body = request::body(&bytes)?;
    let target = take(&mut body, "targetRevisionId").map(|v| string(v, "target_revision_id")).transpose()?;
    let target =
        target.filter(|t| !t.is_empty()).ok_or_else(|| GoogleError::invalid("target_revision_id is required"))?;
    refuse_unknown(&body, "rollback")?;
    let memory = call.named().await?;
    if memory.revision(&target).is_none() {
        return Err(GoogleError::not_found(format!(
            "Memory revision {}/revisions/{target} not found.",
            call.engine.memory_name(&memory.id)
        )));
    }
    let Some(rolled) = call.service().bank_rollback(&call.engine.app, &memory, &target).await? else {
        return Err(call.not_found());
    };
    let mut operation = call.memory_operation(&rolled);
    operation["response"] = json!({"@type": "type.googleapis.com/google.protobuf.Empty"});
    Ok(Json(operation))
}

/// `POST …/memories:retrieveProfiles {scope}`: the scope's structured profiles, one per schema
/// of the engine's structured memory configuration. This server keeps no such configuration,
/// so every scope has none: `{"profiles": {}}`.
pub(crate) async fn retrieve_profiles(call: MemoryCall, Body(bytes): Body) -> Reply {
    let mut body = request::body(&bytes)?;
    let scope = scope_of(&mut body)?;
    call.check_scope(&scope)?;
    refuse_unknown(&body, "retrieve_profiles")?;
    Ok(Json(json!({"profiles": {}})))
}
