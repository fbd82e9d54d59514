//! Opaque page tokens for session lists: a [`ListCursor`] encoded as hex of a small JSON array.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::store::{EventCursor, ListCursor, ListOrder, MemoryCursor};

const VERSION: u64 = 1;
/// Tags event-page tokens, so a session-list token is never taken for one (and back).
const EVENTS: &str = "events";
/// Tags memory-page tokens.
const MEMORIES: &str = "memories";

impl ListCursor {
    /// The page token that starts after this position, as
    /// [`SessionService::list_sessions`](crate::SessionService::list_sessions) issues it. For
    /// stores that pass positions on to another agentstate service.
    /// The order is the list's: its time, and whether newest first.
    pub fn to_page_token(&self, order: ListOrder, newest_first: bool) -> String {
        encode(self, TokenOrder { by: order, newest_first })
    }
}

impl EventCursor {
    /// The page token that starts after this position, as
    /// [`SessionService::list_events`](crate::SessionService::list_events) issues it.
    pub fn to_page_token(&self) -> String {
        encode_events(self)
    }
}

impl MemoryCursor {
    /// The page token that starts after this position, for
    /// [`MemoryService::list`](crate::memory::MemoryService::list).
    pub fn to_page_token(&self) -> String {
        to_hex(&json!([MEMORIES, self.create_micros, self.source, self.id]).to_string())
    }

    /// The position a token of [`to_page_token`](Self::to_page_token) starts after.
    pub fn from_page_token(token: &str) -> Result<Self> {
        let bad =
            || Error::invalid("page_token", "is not a memory page token this service issued; pass it back unchanged");
        let value: Value = serde_json::from_slice(&hex(token).ok_or_else(bad)?).map_err(|_| bad())?;
        match value.as_array().map(Vec::as_slice) {
            Some([Value::String(tag), Value::Number(t), Value::String(source), Value::String(id)])
                if tag == MEMORIES =>
            {
                Ok(Self { create_micros: t.as_i64().ok_or_else(bad)?, source: source.clone(), id: id.clone() })
            }
            _ => Err(bad()),
        }
    }
}

/// Tags the page tokens of logs of state writes.
const WRITES: &str = "writes";

impl crate::store::SharedStateWrite {
    /// The page token that starts after this write, for
    /// [`SessionService::user_state_writes`](crate::SessionService::user_state_writes).
    pub fn to_page_token(&self) -> String {
        to_hex(&json!([WRITES, self.at_micros, self.id]).to_string())
    }

    /// The position ([`position`](Self::position)) a token of
    /// [`to_page_token`](Self::to_page_token) starts after.
    pub fn position_of_page_token(token: &str) -> Result<(i64, String)> {
        let bad = || Error::invalid("page_token", "is not a page token of state writes; pass it back unchanged");
        let value: Value = serde_json::from_slice(&hex(token).ok_or_else(bad)?).map_err(|_| bad())?;
        match value.as_array().map(Vec::as_slice) {
            Some([Value::String(tag), Value::Number(t), Value::String(id)]) if tag == WRITES => {
                Ok((t.as_i64().ok_or_else(bad)?, id.clone()))
            }
            _ => Err(bad()),
        }
    }
}

pub(crate) fn to_hex(raw: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(raw.len() * 2);
    for b in raw.bytes() {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// How a list token's list is ordered: its time, and whether newest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TokenOrder {
    pub(crate) by: ListOrder,
    pub(crate) newest_first: bool,
}

/// A list token: the cursor, tagged when the list goes newest first and when it is ordered by
/// creation (an oldest-first token by update has no tag, as before there was a choice).
pub(crate) fn encode(cursor: &ListCursor, order: TokenOrder) -> String {
    let mut fields = vec![json!(VERSION), json!(cursor.at_micros), json!(cursor.user_id), json!(cursor.session_id)];
    if order.newest_first {
        fields.push(json!(NEWEST_FIRST));
    }
    if order.by == ListOrder::CreateTime {
        fields.push(json!(BY_CREATION));
    }
    to_hex(&Value::Array(fields).to_string())
}

/// The tag of newest-first list tokens.
const NEWEST_FIRST: &str = "desc";
/// The tag of list tokens ordered by creation.
const BY_CREATION: &str = "created";

/// A list token: its cursor, and the order of the list it continues.
pub(crate) fn decode(token: &str) -> Result<(ListCursor, TokenOrder)> {
    let bad = || Error::invalid("page_token", "is not a token this service issued; pass next_page_token unchanged");
    let bytes = hex(token).ok_or_else(bad)?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    // The cursor is the first four fields (a session id may well be "desc"); tags follow.
    let Some((fields, tags)) = value.as_array().filter(|a| a.len() >= 4).map(|a| a.split_at(4)) else {
        return Err(bad());
    };
    let mut order = TokenOrder::default();
    for tag in tags {
        match tag.as_str() {
            Some(NEWEST_FIRST) => order.newest_first = true,
            Some(BY_CREATION) => order.by = ListOrder::CreateTime,
            _ => return Err(bad()),
        }
    }
    match fields {
        [v, Value::Number(t), Value::String(u), Value::String(s)] if v.as_u64() == Some(VERSION) => {
            let cursor =
                ListCursor { at_micros: t.as_i64().ok_or_else(bad)?, user_id: u.clone(), session_id: s.clone() };
            Ok((cursor, order))
        }
        _ => Err(bad()),
    }
}

pub(crate) fn encode_events(cursor: &EventCursor) -> String {
    to_hex(&json!([EVENTS, cursor.timestamp_micros, cursor.event_id]).to_string())
}

pub(crate) fn decode_events(token: &str) -> Result<EventCursor> {
    let bad = || {
        Error::invalid("page_token", "is not an event page token this service issued; pass next_page_token unchanged")
    };
    let bytes = hex(token).ok_or_else(bad)?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    match value.as_array().map(Vec::as_slice) {
        Some([Value::String(tag), Value::Number(t), Value::String(id)]) if tag == EVENTS => {
            Ok(EventCursor { timestamp_micros: t.as_i64().ok_or_else(bad)?, event_id: id.clone() })
        }
        _ => Err(bad()),
    }
}

pub(crate) fn hex(token: &str) -> Option<Vec<u8>> {
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return None;
    }
    (0..token.len()).step_by(2).map(|i| u8::from_str_radix(&token[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn round_trips() {
        let c = ListCursor { at_micros: 1_795_318_375_281_155, user_id: "ü \"x\"".into(), session_id: "s/1".into() };
        for by in [ListOrder::UpdateTime, ListOrder::CreateTime] {
            for newest_first in [false, true] {
                let order = TokenOrder { by, newest_first };
                assert_eq!(decode(&encode(&c, order)).unwrap(), (c.clone(), order));
            }
        }
        let named_desc = ListCursor { session_id: NEWEST_FIRST.into(), ..c };
        let plain = TokenOrder::default();
        assert_eq!(decode(&encode(&named_desc, plain)).unwrap(), (named_desc, plain), "a session called desc");
    }

    #[test]
    fn event_tokens_round_trip_and_are_not_list_tokens() {
        let c = EventCursor { timestamp_micros: 5, event_id: "e1".into() };
        assert_eq!(decode_events(&encode_events(&c)).unwrap(), c);
        let list =
            encode(&ListCursor { at_micros: 5, user_id: "u".into(), session_id: "s".into() }, TokenOrder::default());
        assert!(decode_events(&list).is_err());
        assert!(decode(&encode_events(&c)).is_err());
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "zz", "abc", "5b5d", "5b322c312c2261222c2262225d", "ü0"] {
            assert_eq!(decode(bad).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad}");
        }
    }
}
