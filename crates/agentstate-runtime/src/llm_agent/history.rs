//! What the model sees of the session's history: the events of its branch and above, its own and
//! the user's messages as they are, other agents' retold as context.

use std::sync::Arc;

use agentstate::{Content, Event, Map, Part, Value};

use super::builder::LlmAgent;
use crate::agent::InvocationContext;
use crate::compaction::{Compacting, select};
use crate::error::RuntimeError;
use crate::model::Model;

impl LlmAgent {
    /// The contents of a model request: the history it reads (all of it, its `history_limit`
    /// most recent events, or with `include_contents(false)` only this invocation's), without
    /// the events a rewind took back.
    pub(super) async fn contents(&self, ctx: &InvocationContext) -> Vec<Content> {
        let loaded = ctx.events().await;
        if self.include_contents {
            let events = shown_events(&loaded, &self.name, ctx.branch());
            let window = self.history_limit.map_or(0, |n| events.len().saturating_sub(n));
            history_contents(&events[window..], &self.name, ctx.branch())
        } else {
            let events: Vec<Arc<Event>> = agentstate::history::live_events(&loaded).into_iter().cloned().collect();
            let turn: Vec<_> = events.iter().filter(|e| e.invocation_id == ctx.invocation_id()).cloned().collect();
            history_contents(&turn, &self.name, ctx.branch())
        }
    }
}

/// What compaction reads of an invocation: its session's events, the root agent's model, and
/// the contents a request would carry here, as this module builds them.
impl Compacting for InvocationContext {
    async fn session_events(&self) -> Vec<Arc<Event>> {
        self.events().await
    }

    async fn store_summary(&self, summary: Event) -> Result<Event, RuntimeError> {
        self.append_as_is(summary).await
    }

    fn root_model(&self) -> Option<Arc<dyn Model>> {
        self.root_agent().model()
    }

    fn request_contents(&self, events: &[Arc<Event>], agent: &str) -> Vec<Content> {
        history_contents(&shown_events(events, agent, self.branch()), agent, self.branch())
    }
}

/// The events `agent` on `branch` is shown: those a rewind left, of its branch and above, with
/// the summaries ADK uses in place of what they cover and the calls of responses still shown
/// put back (as ADK for Python builds a request over a compacted history).
fn shown_events(events: &[Arc<Event>], agent: &str, branch: Option<&str>) -> Vec<Arc<Event>> {
    let visible: Vec<Arc<Event>> = agentstate::history::live_events(events)
        .into_iter()
        .filter(|e| visible_on(branch, e.branch.as_deref()))
        .cloned()
        .collect();
    if !visible.iter().any(|e| select::is_compaction(e)) {
        return visible;
    }
    let summarised = select::apply_summaries(&visible, agent);
    select::recover_calls(summarised, &visible)
}

/// Whether an event of `event_branch` is visible on `branch`: events of the branch itself and of
/// its ancestors are; those of sibling branches are not.
fn visible_on(branch: Option<&str>, event_branch: Option<&str>) -> bool {
    match (event_branch, branch) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(event), Some(current)) => {
            current == event || current.strip_prefix(event).is_some_and(|rest| rest.starts_with('.'))
        }
    }
}

/// The conversation as `agent` sees it: the user's and its own messages as they are, other
/// agents' messages retold as user-side context (the reference's "For context:" form).
fn history_contents(events: &[Arc<Event>], agent: &str, branch: Option<&str>) -> Vec<Content> {
    let mut contents = Vec::new();
    for event in events {
        if event.is_partial() || !visible_on(branch, event.branch.as_deref()) {
            continue;
        }
        let Some(content) = &event.content else { continue };
        if content.parts().is_empty() {
            continue;
        }
        if event.author == "user" || event.author == agent {
            let mut content = content.clone();
            content.role.get_or_insert_with(|| if event.author == "user" { "user" } else { "model" }.into());
            contents.push(content);
        } else if let Some(retold) = retell(&event.author, content) {
            contents.push(retold);
        }
    }
    contents
}

fn retell(author: &str, content: &Content) -> Option<Content> {
    let mut parts = vec![Part::text("For context:")];
    for part in content.parts() {
        if part.thought == Some(true) {
            continue;
        }
        if let Some(text) = part.text.as_deref().filter(|t| !t.is_empty()) {
            parts.push(Part::text(format!("[{author}] said: {text}")));
        } else if let Some(call) = &part.function_call {
            let args = Value::Object(call.args.clone().unwrap_or_default());
            let name = call.name.as_deref().unwrap_or_default();
            parts.push(Part::text(format!("[{author}] called tool `{name}` with parameters: {args}")));
        } else if let Some(response) = &part.function_response {
            let result = Value::Object(response.response.clone().unwrap_or_default());
            let name = response.name.as_deref().unwrap_or_default();
            parts.push(Part::text(format!("[{author}] `{name}` tool returned result: {result}")));
        }
    }
    (parts.len() > 1).then(|| Content { parts: Some(parts), role: Some("user".into()), extra: Map::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_see_their_ancestors_only() {
        assert!(visible_on(None, None));
        assert!(visible_on(Some("p.a"), None));
        assert!(!visible_on(None, Some("p.a")));
        assert!(visible_on(Some("p.a"), Some("p.a")));
        assert!(visible_on(Some("p.a.x"), Some("p.a")));
        assert!(!visible_on(Some("p.ab"), Some("p.a")));
        assert!(!visible_on(Some("p.b"), Some("p.a")));
    }

    #[test]
    fn other_agents_are_retold_as_context() {
        let events = vec![
            Arc::new(Event::new("i").author("user").content(Content::text("user", "hi"))),
            Arc::new(Event::new("i").author("writer").content(Content::text("model", "a draft"))),
            Arc::new(Event::new("i").author("reader").content(Content::text("model", "mine"))),
        ];
        let contents = history_contents(&events, "reader", None);
        assert_eq!(contents.len(), 3);
        assert_eq!(contents[1].role.as_deref(), Some("user"));
        assert_eq!(contents[1].joined_text(), "For context:[writer] said: a draft");
        assert_eq!(contents[2].role.as_deref(), Some("model"));
    }
}
