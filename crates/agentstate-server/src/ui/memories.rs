//! The inspector's memory page: a user's long-term memories, oldest first a page at a time, or
//! those a search finds (as `load_memory` would); in the listing, each with its Memory Bank
//! revisions.

use agentstate::Timestamp;
use agentstate::memory::{Memory, MemoryOwner, Revision};
use agentstate::store::MemoryCursor;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{layout, seg};
use super::{LIST_PAGE, Page, backend};
use crate::state::AppState;

#[derive(Deserialize, Default)]
pub(crate) struct MemoryQuery {
    q: Option<String>,
    after: Option<String>,
}

fn rows(memories: &[Memory], revisions: &[Vec<Revision>]) -> Markup {
    html! {
        table.memories {
            thead { tr { th { "memory" } th { "author" } th { "said" } th { "session" } th { "text" } th { "revisions" } } }
            tbody {
                @for (i, m) in memories.iter().enumerate() {
                    tr {
                        td { code { (m.id) } }
                        td { (m.author.as_deref().unwrap_or("")) }
                        td { time { (m.timestamp.as_deref().unwrap_or("")) } }
                        td { (m.session_id.as_deref().unwrap_or("—")) }
                        td.preview { (m.text()) }
                        td { (revision_list(revisions.get(i).map_or(&[][..], Vec::as_slice))) }
                    }
                }
            }
        }
    }
}

/// A memory's revisions, newest first, folded.
fn revision_list(revisions: &[Revision]) -> Markup {
    html! {
        @if revisions.is_empty() { "—" }
        @else {
            details.revisions {
                summary { (revisions.len()) @if revisions.len() == 1 { " revision" } @else { " revisions" } }
                ol reversed {
                    @for r in revisions.iter().rev() {
                        li {
                            code { (r.id) } " "
                            time { (Timestamp::from_micros(r.create_micros).rfc3339()) } " "
                            span.preview { (r.fact) }
                            @for (key, value) in &r.labels { " " span.label { (key) "=" (value) } }
                            @if !r.extracted.is_empty() { " — extracted: " (r.extracted.join("; ")) }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /ui/apps/{app}/users/{user}/memories`: the user's memories (`?after=` pages on), or with
/// `?q=` those a search finds, best first.
pub(crate) async fn memories(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    Query(query): Query<MemoryQuery>,
) -> Page {
    let owner = MemoryOwner::new(&app, &user).map_err(|e| backend(&state, &e))?;
    let memory = state.memory().clone();
    let here = format!("/ui/apps/{}/users/{}/memories", seg(&app), seg(&user));
    let search = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let listing = if !memory.is_supported() {
        html! { p.empty { "This backend keeps no memories." } }
    } else if let Some(q) = search {
        let found = memory.search(&owner, q, Some(50)).await.map_err(|e| backend(&state, &e))?;
        html! {
            p { (found.len()) " found, those sharing the most words first." }
            (rows(&found, &[]))
        }
    } else {
        let after = query.after.as_deref().map(MemoryCursor::from_page_token).transpose();
        let listed = memory.list_with_revisions(&owner, after.map_err(|e| backend(&state, &e))?, LIST_PAGE).await;
        let (page, revisions) = listed.map_err(|e| backend(&state, &e))?;
        html! {
            @if page.memories.is_empty() { p.empty { "No memories." } }
            @else { (rows(&page.memories, &revisions)) }
            @if let Some(next) = &page.next {
                p.pager { a href=(format!("{here}?after={}", next.to_page_token())) { "next page →" } }
            }
        }
    };
    let crumbs = [
        ("apps".to_owned(), Some("/ui".to_owned())),
        (app.clone(), Some(format!("/ui/apps/{}", seg(&app)))),
        (user.clone(), Some(format!("/ui/apps/{}/users/{}", seg(&app), seg(&user)))),
        ("memories".to_owned(), None),
    ];
    let body = html! {
        h1 { "Memories of " (user) }
        form.search method="get" action=(here) {
            input type="search" name="q" value=(search.unwrap_or("")) placeholder="search memories";
            button type="submit" { "Search" }
        }
        (listing)
    };
    Ok(Html(layout(&user, &crumbs, state.ui_secret(), &body).into_string()))
}
