//! The compacted view and the summaries of a history, computed from the events' [`Facts`].

use std::collections::{HashMap, HashSet};

use super::{Facts, Range};
use crate::history::{Rewound, rewound};
/// The summaries ADK keeps, of the `live` positions, in storage order (see [`surviving`]).
fn kept_summaries(events: &[Facts], live: &[usize]) -> Vec<(usize, Range)> {
    surviving(live.iter().filter_map(|&i| events[i].range().map(|r| (i, r))).collect())
}

/// Of the summaries `ranges` (each with its position), those ADK keeps, in position order:
/// sorted by start, then the widest and newest first, a range is kept when it reaches past every
/// range before it (ADK's `_get_compaction_ranges`).
pub fn surviving(mut ranges: Vec<(usize, Range)>) -> Vec<(usize, Range)> {
    ranges.sort_by(|(i, a), (j, b)| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)).then(j.cmp(i)));
    let mut kept: Vec<(usize, Range)> = Vec::new();
    for (i, range) in ranges {
        if kept.last().is_none_or(|(_, widest)| range.end > widest.end) {
            kept.push((i, range));
        }
    }
    kept.sort_by_key(|&(i, _)| i);
    kept
}

/// The times some of a set of ranges cover: their union, as sorted disjoint ranges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage(Vec<Range>);

impl Coverage {
    /// The union of `ranges` (inverted ones cover nothing).
    pub fn of(ranges: impl IntoIterator<Item = Range>) -> Self {
        let mut by_start: Vec<Range> = ranges.into_iter().filter(|r| r.start <= r.end).collect();
        by_start.sort_by(|a, b| a.start.total_cmp(&b.start));
        let mut union: Vec<Range> = Vec::new();
        for range in by_start {
            match union.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => union.push(range),
            }
        }
        Self(union)
    }

    /// Whether some range covers `time`.
    pub fn covers(&self, time: f64) -> bool {
        let after = self.0.partition_point(|r| r.start <= time);
        after > 0 && self.0[after - 1].covers(time)
    }
}

/// A summary in a session's history: where it is, what it covers, whether ADK shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its position in storage order.
    pub position: usize,
    /// The times it summarises.
    pub range: Range,
    /// Whether ADK shows it (no other summary contains it, and no rewind took it back).
    pub kept: bool,
    /// The first and last positions of the events it covers (storage order is time order, so
    /// they are every event between, summaries aside); `None` when it covers none.
    pub covers: Option<(usize, usize)>,
}

/// Every summary of a session (`events` its facts, in storage order), in storage order.
pub fn summaries(events: &[Facts]) -> Vec<Summary> {
    let live = rewound::<Facts, _>(events).live;
    let kept: HashSet<usize> = kept_summaries(events, &live).into_iter().map(|(i, _)| i).collect();
    let plain: Vec<usize> = live.iter().copied().filter(|&i| !events[i].is_compaction()).collect();
    let mut out = Vec::new();
    for &i in &live {
        let Some(range) = events[i].range() else { continue };
        let from = plain.partition_point(|&p| events[p].timestamp < range.start);
        let to = plain.partition_point(|&p| events[p].timestamp <= range.end);
        let covers = (from < to).then(|| (plain[from], plain[to - 1]));
        out.push(Summary { position: i, range, kept: kept.contains(&i), covers });
    }
    out
}

/// The positions (storage order) of `events` the compacted view with this `overlap` keeps,
/// ascending (see the [module docs](super)).
pub fn view(events: &[Facts], overlap: usize) -> Vec<usize> {
    if events.iter().any(|e| e.opaque) {
        return (0..events.len()).collect();
    }
    let Rewound { live, anchors } = rewound::<Facts, _>(events);
    let mut keep = vec![false; events.len()];
    for &i in &anchors {
        keep[i] = true;
    }

    let kept_ranges = kept_summaries(events, &live);
    let coverage = Coverage::of(kept_ranges.iter().map(|&(_, r)| r));
    // ADK for TypeScript's form: the newest such summary stands for everything up to its end.
    let rolling_cut = live.iter().rev().find_map(|&i| events[i].rolling_end_ms);
    let covered = |e: &Facts| coverage.covers(e.timestamp) || rolling_cut.is_some_and(|cut| e.millis() <= cut);
    for &(i, _) in &kept_ranges {
        keep[i] = true;
    }
    // The newest summary by storage order (the token trigger starts after its end).
    let newest_kept_end = kept_ranges.last().map(|(_, r)| r.end);

    // The last compaction event (the interval trigger takes the last end from it, the token
    // trigger stops its search for a count there), and the last unscoped one with an end.
    let compactions = || live.iter().rev().copied().filter(|&i| events[i].is_compaction());
    if let Some(last) = compactions().next() {
        keep[last] = true;
    }
    // (A TypeScript summary's end, in seconds, stands in: the window then starts after it.)
    let end_of = |e: &Facts| e.range().map(|r| r.end).or(e.rolling_end_ms.map(|ms| ms / 1000.0)).filter(|&t| t != 0.0);
    let last_end = compactions().find(|&i| !events[i].scoped && end_of(&events[i]).is_some());
    let last_end = last_end.map_or(0.0, |i| {
        keep[i] = true;
        end_of(&events[i]).unwrap_or(0.0)
    });

    // Every event no kept summary covers, and every event after the newest summary's end.
    for &i in &live {
        let e = &events[i];
        if !e.is_compaction() && (!covered(e) || newest_kept_end.is_some_and(|end| e.timestamp > end)) {
            keep[i] = true;
        }
    }

    // The next window: invocations in order of their first (unscoped, not compaction) event,
    // those with an event after the last end are new; it starts `overlap` invocations before
    // the first new one (or before the next invocation, when none is new yet).
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut latest: HashMap<&str, f64> = HashMap::new();
    for &i in &live {
        let e = &events[i];
        if e.scoped || e.is_compaction() || e.invocation_id.is_empty() {
            continue;
        }
        first_of.entry(&e.invocation_id).or_insert_with(|| {
            order.push(&e.invocation_id);
            i
        });
        let time = latest.entry(&e.invocation_id).or_insert(e.timestamp);
        *time = time.max(e.timestamp);
    }
    let first_new = order.iter().position(|id| latest[id] > last_end).unwrap_or(order.len());
    if let Some(start) = order.get(first_new.saturating_sub(overlap)) {
        let from = first_of[start];
        for &i in live.iter().filter(|&&i| i >= from && !events[i].is_compaction()) {
            keep[i] = true;
        }
    }

    // Long-running calls no user has answered: a resume looks its call up in the session.
    let answered: HashSet<&str> =
        events.iter().filter(|e| e.by_user).flat_map(|e| e.responses.iter().map(String::as_str)).collect();
    for &i in &live {
        if events[i].long_running.iter().any(|id| !answered.contains(id.as_str())) {
            keep[i] = true;
        }
    }

    // Calls whose responses are shown, with their sibling responses: ADK re-injects them from
    // the loaded session (`_recover_compacted_function_calls`). A response belongs to the latest
    // call with its id before it; a call's response is its latest.
    let mut latest_call: HashMap<&str, usize> = HashMap::new();
    let mut call_of: Vec<(usize, usize)> = Vec::new();
    let mut response_to: HashMap<(usize, &str), usize> = HashMap::new();
    for &i in &live {
        for id in &events[i].calls {
            latest_call.insert(id, i);
        }
        for id in &events[i].responses {
            if let Some(&call) = latest_call.get(id.as_str()) {
                call_of.push((i, call));
                response_to.insert((call, id), i);
            }
        }
    }
    let shown: Vec<bool> = keep.clone();
    for (response, call) in call_of {
        let uncovered = !events[response].is_compaction() && !covered(&events[response]);
        if shown[response] && uncovered && !keep[call] {
            keep[call] = true;
            for id in &events[call].calls {
                if let Some(&sibling) = response_to.get(&(call, id.as_str())) {
                    keep[sibling] = true;
                }
            }
        }
    }

    // Events that saved artifacts: a rewind replays every artifact delta before its target in
    // the loaded session to find the versions to restore (ADK's
    // `compute_artifact_delta_for_rewind`, over rewound events too); the request leaves covered
    // ones out.
    for (i, e) in events.iter().enumerate() {
        if e.artifacts {
            keep[i] = true;
        }
    }

    // The first event of every invocation shown, so the invocations keep their order.
    let firsts: Vec<usize> = (0..events.len())
        .filter(|&i| keep[i] && !events[i].is_compaction())
        .filter_map(|i| first_of.get(events[i].invocation_id.as_str()).copied())
        .collect();
    for i in firsts {
        keep[i] = true;
    }
    (0..events.len()).filter(|&i| keep[i]).collect()
}
