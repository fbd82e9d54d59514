//! Event compaction, as ADK for Python 2.13 does it: now and then a model summarises a stretch of
//! the conversation, the summary is stored as a compaction event, and the model is shown the
//! summary instead of what it covers.
//!
//! Two triggers, configured as in ADK's `EventsCompactionConfig` (either or both):
//! - **a sliding window**: after an invocation, once `interval` new invocations have ended since
//!   the newest summary, they are summarised together with the `overlap` invocations before
//!   them;
//! - **a token threshold**: after an invocation and before each model call, once the prompt
//!   reached `threshold` tokens (the newest model answer's `prompt_token_count`, else the request's
//!   characters / 4), everything after the newest summary is summarised, but the `retention`
//!   newest events, the newest summary heading the window so the new one takes its place.
//!
//! A window never ends with a call left open (a tool call, a confirmation or credential request
//! without its response), unless nothing can answer it any more. A summary written earlier is
//! not written again when summarising the window cannot shrink the request more than that
//! summary weighs.
//!
//! Compaction events are ADK for Python's (`actions.compaction = {start_timestamp,
//! end_timestamp, compacted_content}`, by `user`, in an invocation of their own): ADK for Python
//! reads sessions this runtime compacted, and this runtime reads sessions ADK compacted. The
//! [`Runner`](crate::Runner) of an app that compacts loads only what the model will be shown (the
//! store's compacted view, [`agentstate::compaction`]), so a long conversation costs what its
//! summaries and recent turns cost.
//!
//! ```
//! use std::sync::Arc;
//! use agentstate::SessionService;
//! use agentstate_runtime::compaction::{EventsCompactionConfig, LlmEventSummarizer};
//! use agentstate_runtime::testing::ScriptedModel;
//! use agentstate_runtime::{LlmAgent, Runner};
//!
//! # fn main() -> anyhow::Result<()> {
//! let model = ScriptedModel::new("scripted");
//! let agent = LlmAgent::builder("assistant", model.clone()).build()?;
//! // Every 2 invocations, the window starting 1 invocation before the new ones.
//! let compaction = EventsCompactionConfig::sliding_window(2, 1)?.summarizer(LlmEventSummarizer::new(Arc::new(model)));
//! let runner = Runner::new("app", agent, SessionService::in_memory()).compaction(compaction);
//! # Ok(()) }
//! ```

pub(crate) mod python;
pub(crate) mod select;
mod summarizer;

use std::sync::Arc;

use agentstate::Event;

pub use summarizer::{DEFAULT_PROMPT_TEMPLATE, EventsSummarizer, LlmEventSummarizer};

use crate::error::RuntimeError;
use crate::model::Model;

/// What compaction needs of a run (the invocation's context gives it): the session's events as
/// they stand, a place to store a summary, the root agent's model, and what a request of an agent
/// would carry.
pub(crate) trait Compacting: Sync {
    /// The session's events, loaded and appended since.
    async fn session_events(&self) -> Vec<Arc<Event>>;
    /// Stores a summary as it is (no invocation id or branch filled in), not passed to the
    /// caller.
    async fn store_summary(&self, summary: Event) -> Result<Event, RuntimeError>;
    /// The root agent's model, the summariser when none is configured.
    fn root_model(&self) -> Option<Arc<dyn Model>>;
    /// The contents a request of `agent` would carry over `events` (`""`: as no agent's).
    fn request_contents(&self, events: &[Arc<Event>], agent: &str) -> Vec<agentstate::Content>;
}

/// When a compaction config cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionConfigError {
    /// The sliding window's interval is 0.
    #[error("compaction_interval must be at least 1")]
    Interval,
    /// The token threshold is 0.
    #[error("token_threshold must be at least 1")]
    Threshold,
}

/// When and how an app's conversations are compacted (ADK's `EventsCompactionConfig`).
#[derive(Clone)]
pub struct EventsCompactionConfig {
    sliding: Option<(usize, usize)>,
    token: Option<(u64, usize)>,
    summarizer: Option<Arc<dyn EventsSummarizer>>,
}

impl std::fmt::Debug for EventsCompactionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsCompactionConfig")
            .field("sliding_window", &self.sliding)
            .field("token_threshold", &self.token)
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

impl EventsCompactionConfig {
    /// Summarise every `interval` new invocations, the window starting `overlap` invocations
    /// before the first new one (ADK's `compaction_interval` and `overlap_size`).
    ///
    /// # Errors
    /// An `interval` of 0.
    pub fn sliding_window(interval: usize, overlap: usize) -> Result<Self, CompactionConfigError> {
        Self { sliding: None, token: None, summarizer: None }.and_sliding_window(interval, overlap)
    }

    /// Summarise once a prompt reaches `threshold` tokens, keeping the `retention` newest events
    /// as they are (ADK's `token_threshold` and `event_retention_size`).
    ///
    /// # Errors
    /// A `threshold` of 0.
    pub fn token_threshold(threshold: u64, retention: usize) -> Result<Self, CompactionConfigError> {
        Self { sliding: None, token: None, summarizer: None }.and_token_threshold(threshold, retention)
    }

    /// Adds the sliding window to a config.
    ///
    /// # Errors
    /// An `interval` of 0.
    pub fn and_sliding_window(mut self, interval: usize, overlap: usize) -> Result<Self, CompactionConfigError> {
        if interval == 0 {
            return Err(CompactionConfigError::Interval);
        }
        self.sliding = Some((interval, overlap));
        Ok(self)
    }

    /// Adds the token threshold to a config.
    ///
    /// # Errors
    /// A `threshold` of 0.
    pub fn and_token_threshold(mut self, threshold: u64, retention: usize) -> Result<Self, CompactionConfigError> {
        if threshold == 0 {
            return Err(CompactionConfigError::Threshold);
        }
        self.token = Some((threshold, retention));
        Ok(self)
    }

    /// Summarises with `summarizer`; without one, with the root agent's model, as ADK does.
    #[must_use]
    pub fn summarizer(mut self, summarizer: impl EventsSummarizer + 'static) -> Self {
        self.summarizer = Some(Arc::new(summarizer));
        self
    }

    /// The overlap the store's compacted view keeps for the next window (0 without a window).
    pub fn overlap(&self) -> usize {
        self.sliding.map_or(0, |(_, overlap)| overlap)
    }

    fn summarizer_for(&self, ctx: &impl Compacting) -> Option<Arc<dyn EventsSummarizer>> {
        self.summarizer.clone().or_else(|| {
            let model = ctx.root_model()?;
            Some(Arc::new(LlmEventSummarizer::new(model)) as Arc<dyn EventsSummarizer>)
        })
    }
}

/// After an invocation: the token trigger, then (if it wrote nothing) the sliding window.
pub(crate) async fn after_invocation(
    ctx: &impl Compacting,
    config: &EventsCompactionConfig,
) -> Result<(), RuntimeError> {
    if by_tokens(ctx, config, "").await? {
        return Ok(());
    }
    let Some((interval, overlap)) = config.sliding else { return Ok(()) };
    let events = unscoped_live(ctx).await;
    let window = select::sliding_window(&events, interval, overlap);
    if window.is_empty() || !select::worth_compacting(&events, &window) {
        return Ok(());
    }
    summarize_and_store(ctx, config, &window, "sliding_window").await.map(|_| ())
}

/// Before `agent`'s model call: the token trigger, measured on what `agent` is shown. True when
/// it wrote a summary.
pub(crate) async fn before_model(
    ctx: &impl Compacting,
    config: &EventsCompactionConfig,
    agent: &str,
) -> Result<bool, RuntimeError> {
    by_tokens(ctx, config, agent).await
}

/// The session's events as they stand after rewinds, those of task scopes left out.
async fn unscoped_live(ctx: &impl Compacting) -> Vec<Arc<Event>> {
    let events = ctx.session_events().await;
    agentstate::history::live_events(&events).into_iter().filter(|e| select::scope_of(e).is_none()).cloned().collect()
}

/// The token trigger (`_run_compaction_for_token_threshold_config`): `agent` empty after an
/// invocation, else the agent about to call its model.
async fn by_tokens(ctx: &impl Compacting, config: &EventsCompactionConfig, agent: &str) -> Result<bool, RuntimeError> {
    let Some((threshold, retention)) = config.token else { return Ok(false) };
    let events = unscoped_live(ctx).await;
    let estimate = || {
        let contents = ctx.request_contents(&events, agent);
        let chars: usize = contents.iter().map(python_chars).sum();
        (chars > 0).then_some(chars as u64 / 4)
    };
    if select::latest_prompt_tokens(&events, agent, estimate).is_none_or(|tokens| tokens < threshold) {
        return Ok(false);
    }
    let window = select::token_window(&events, retention);
    if window.is_empty() || !select::worth_compacting(&events, &window) {
        return Ok(false);
    }
    summarize_and_store(ctx, config, &window, "token_threshold").await
}

/// Summarises `window` and stores the summary (not passed to the run's caller). A summariser
/// that fails leaves the history as it is, as does a session another writer changed meanwhile.
async fn summarize_and_store(
    ctx: &impl Compacting,
    config: &EventsCompactionConfig,
    window: &[Arc<Event>],
    trigger: &'static str,
) -> Result<bool, RuntimeError> {
    let Some(summarizer) = config.summarizer_for(ctx) else { return Ok(false) };
    let span = tracing::info_span!("compact_events", trigger, events = window.len());
    let summary = match tracing::Instrument::instrument(summarizer.summarize(window), span).await {
        Ok(Some(summary)) => summary,
        Ok(None) => return Ok(false),
        Err(error) => {
            tracing::warn!(%error, trigger, "event compaction failed; the history stays as it is");
            return Ok(false);
        }
    };
    match ctx.store_summary(summary).await {
        Ok(_) => Ok(true),
        Err(RuntimeError::Session(conflict @ agentstate::Error::Conflict { .. })) => {
            tracing::info!(%conflict, "a newer write changed the session while summarising; the summary is dropped");
            Ok(false)
        }
        Err(other) => Err(other),
    }
}

/// The characters of a content as ADK's token estimate counts them (`_count_chars_in_content`).
fn python_chars(content: &agentstate::Content) -> usize {
    content
        .parts()
        .iter()
        .map(|part| {
            let text = part.text.as_deref().map_or(0, |t| t.chars().count());
            let call = part.function_call.as_ref().map_or(0, |c| {
                c.name.as_deref().map_or(0, str::len)
                    + c.args.as_ref().filter(|a| !a.is_empty()).map_or(0, |a| python::dumps_len(&a.clone().into()))
            });
            let response = part.function_response.as_ref().map_or(0, |r| {
                r.name.as_deref().map_or(0, str::len)
                    + r.response.as_ref().filter(|a| !a.is_empty()).map_or(0, |a| python::dumps_len(&a.clone().into()))
            });
            text + call + response
        })
        .sum()
}
