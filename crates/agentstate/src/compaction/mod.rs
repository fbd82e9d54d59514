//! Compaction, as ADK for Python 2.13 writes it, and the compacted view of a session.
//!
//! An app with `App(events_compaction_config=EventsCompactionConfig(...))` appends, now and then,
//! an event whose `actions.compaction = {start_timestamp, end_timestamp, compacted_content}`
//! summarises every event whose time lies in that range (epoch seconds, both ends included). ADK
//! keeps loading the whole history and drops what a summary covers when it builds the model's
//! request. The **compacted view** ([`view`]) answers only the events ADK reads from a loaded
//! session, so a long conversation loads in time that grows with what the model is shown:
//!
//! - the summaries ADK keeps (those no other range contains) and the last compaction event;
//! - every event no kept summary covers;
//! - everything from the start of the next summary's window: the invocations with an event
//!   after the last summary's end, from `overlap` invocations earlier (the app's
//!   `overlap_size`), and every event after the newest summary's end;
//! - covered events that started a long-running call no user has answered yet (a resumed call
//!   is looked up in the loaded session), and covered calls whose responses are shown, with
//!   their sibling responses (ADK re-injects them);
//! - the rewind events that take effect and the first event of each invocation they rewind,
//!   the summaries' coverage computed over the events that survive rewinds;
//! - every event that saved artifacts (a rewind replays their versions);
//! - the first event of every invocation the view shows, so invocations keep their order.
//!
//! Measured with ADK for Python 2.13's `Runner` on a scripted model, both triggers (an interval
//! with an overlap, a token threshold): the model is sent the same requests over the view as over
//! the whole history.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::event::Event;

mod facts;
mod view;

use facts::range_of;
pub use facts::{Facts, KeptFacts, from_kept};
pub use view::{Coverage, Summary, summaries, surviving, view};

/// Where a compaction lives: `actions.compaction`.
pub const COMPACTION_KEY: &str = "compaction";

/// Where an encrypted store's event carries what the view needs of it ([`Facts`], compact JSON
/// with call ids as digests), since its content, which the facts come from, is sealed.
pub const FACTS_KEY: &str = "agentstate_facts";

/// Where an encrypted store's event carries its sealed parts.
pub(crate) const SEALED_KEY: &str = "agentstate_sealed";

/// The overlap ADK's interval trigger is most often configured with, and the view's default.
pub const DEFAULT_OVERLAP: usize = 1;

/// Which of a session's events a read answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventView {
    /// Every event.
    #[default]
    Whole,
    /// Only what ADK reads from a loaded session of an app that compacts its history with this
    /// overlap (see the [module docs](self)).
    Compacted {
        /// The app's `overlap_size`: how many invocations before the first new one the next
        /// summary starts at.
        overlap: usize,
    },
}

/// The time range a compaction event summarises, epoch seconds, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The first covered time.
    pub start: f64,
    /// The last covered time.
    pub end: f64,
}

impl Range {
    /// The range `event` summarises, when it is a compaction ADK uses (numbers for both ends,
    /// and a content).
    pub fn of(event: &Event) -> Option<Range> {
        event.actions.extra.get(COMPACTION_KEY).filter(|v| !v.is_null()).and_then(range_of)
    }

    /// Whether `time` lies in the range.
    pub fn covers(&self, time: f64) -> bool {
        self.start <= time && time <= self.end
    }
}

/// Checks an event's `actions.compaction`, if it has one: an object whose `start_timestamp` and
/// `end_timestamp` are numbers, the start not after the end, with a `compacted_content` object,
/// as ADK for Python's `EventCompaction` requires (camelCase names accepted).
pub fn validate(event: &Event) -> Result<()> {
    let Some(compaction) = event.actions.extra.get(COMPACTION_KEY).filter(|v| !v.is_null()) else { return Ok(()) };
    let field = "event.actions.compaction";
    let Value::Object(fields) = compaction else { return Err(Error::invalid(field, "must be an object")) };
    let get = |snake: &str, camel: &str| fields.get(snake).or_else(|| fields.get(camel)).filter(|v| !v.is_null());
    let time = |snake: &str, camel: &str| match get(snake, camel) {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| Error::invalid(field, format!("{snake} is not a number"))),
        Some(other) => Err(Error::invalid(field, format!("{snake} must be a number of epoch seconds, not {other}"))),
        None => Err(Error::invalid(field, format!("{snake} is missing"))),
    };
    let (start, end) = (time("start_timestamp", "startTimestamp")?, time("end_timestamp", "endTimestamp")?);
    if start > end {
        return Err(Error::invalid(
            field,
            format!("its range is inverted: start_timestamp {start} is after end_timestamp {end}"),
        ));
    }
    match get("compacted_content", "compactedContent") {
        Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(Error::invalid(field, "compacted_content must be a content object")),
        None => Err(Error::invalid(field, "compacted_content is missing")),
    }
}

#[cfg(test)]
mod tests;
