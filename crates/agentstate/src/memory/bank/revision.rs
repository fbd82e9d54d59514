//! Memory Bank's revisions: a memory as each write left it, kept in the memory's own record.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// The most revisions a memory keeps: a write that would keep more drops the oldest.
pub const MAX_REVISIONS: usize = 100;

/// The most bytes of facts a memory's revisions keep (its record is read by every search that
/// finds it): a write that would keep more drops the oldest, never the newest.
pub const MAX_REVISION_BYTES: usize = 64 * 1024;

/// The most labels a revision has.
pub const MAX_REVISION_LABELS: usize = 64;

/// A memory as one write left it (Memory Bank's memory revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Its id, the last segment of its name: `1`, `2`, … in the order written.
    pub id: String,
    /// The memory's fact after the write.
    pub fact: String,
    /// When it was written, epoch microseconds.
    pub create_micros: i64,
    /// When it expires, epoch microseconds; `None`: with the memory.
    pub expire_micros: Option<i64>,
    /// The write's labels.
    pub labels: BTreeMap<String, String>,
    /// The facts a generation extracted before consolidating them into this one.
    pub extracted: Vec<String>,
}

/// How a write keeps a revision of what it writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevisionOptions {
    /// Keep none (Memory Bank's `disable_memory_revisions`).
    pub disabled: bool,
    /// Its labels (`revision_labels`).
    pub labels: BTreeMap<String, String>,
    /// When it expires (`revision_expire_time`); with neither this nor `ttl_micros`, with the
    /// memory.
    pub expire_micros: Option<i64>,
    /// How long after it is written it expires (`revision_ttl`).
    pub ttl_micros: Option<i64>,
    /// What a generation extracted.
    pub extracted: Vec<String>,
}

impl RevisionOptions {
    /// Checks the labels: at most [`MAX_REVISION_LABELS`], keys 1 to 128 characters, values
    /// at most 1024.
    pub fn validate(&self) -> Result<()> {
        if self.labels.len() > MAX_REVISION_LABELS {
            let n = self.labels.len();
            return Err(Error::invalid(
                "revision_labels",
                format!("has {n}; at most {MAX_REVISION_LABELS} are allowed"),
            ));
        }
        for (key, value) in &self.labels {
            if key.is_empty() || key.chars().count() > 128 {
                return Err(Error::invalid("revision_labels", format!("key {key:?} must be 1 to 128 characters")));
            }
            if value.chars().count() > 1024 {
                return Err(Error::invalid("revision_labels", format!("{key:?} is over 1024 characters")));
            }
        }
        Ok(())
    }
}

/// The revisions kept in a memory's own Memory Bank fields.
pub(super) fn revisions_in(own: &Map<String, Value>) -> Vec<Revision> {
    let items = own.get("revisions").and_then(Value::as_array);
    items.map(|items| items.iter().filter_map(Revision::from_json).collect()).unwrap_or_default()
}

impl Revision {
    pub(super) fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("id".into(), json!(self.id));
        out.insert("fact".into(), json!(self.fact));
        out.insert("create".into(), json!(self.create_micros));
        if let Some(expire) = self.expire_micros {
            out.insert("expire".into(), json!(expire));
        }
        if !self.labels.is_empty() {
            out.insert("labels".into(), json!(self.labels));
        }
        if !self.extracted.is_empty() {
            out.insert("extracted".into(), json!(self.extracted));
        }
        Value::Object(out)
    }

    pub(super) fn from_json(value: &Value) -> Option<Self> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let strings = |key: &str| -> Vec<String> {
            value
                .get(key)
                .and_then(Value::as_array)
                .map_or_else(Vec::new, |items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        };
        let labels = value.get("labels").and_then(Value::as_object).map_or_else(BTreeMap::new, |labels| {
            labels.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect()
        });
        Some(Self {
            id: text("id")?,
            fact: text("fact")?,
            create_micros: value.get("create")?.as_i64()?,
            expire_micros: value.get("expire").and_then(Value::as_i64),
            labels,
            extracted: strings("extracted"),
        })
    }
}
