//! Google's list filter and `orderBy` syntax (AIP-160, AIP-132) for sessions, as Agent Engine's
//! `sessions.list` takes them, read into a [`SessionFilter`] and a [`ListOrder`]: one reader for
//! every surface that takes them (the managed-service routes, the ADK list routes, the CLI).
//!
//! ```text
//! filter  = term { " AND " term }
//! term    = field op value
//! field   = user_id | display_name | labels.KEY | state.KEY | update_time | create_time
//!           (camelCase spellings too: userId, displayName, updateTime, createTime)
//! op      = "=" | "<" | "<=" | ">" | ">="       (the comparisons on the two times only)
//! value   = "string" | number | true | false | null | bare   (times: an RFC 3339 time)
//! ```
//!
//! A bare value (unquoted, up to a space) that is not a number or keyword is text, and a text
//! field (`user_id`, `display_name`, a label) reads any bare value as written: ADK for Java
//! filters with `user_id=alice`, and `user_id=00123` is the user `00123`.
//!
//! A key is a name of letters, digits, `_` and `-`, or a quoted string. State values compare
//! session-scope keys (no `user:`, `app:` or `temp:` prefix) with a scalar. `OR`, `NOT`,
//! parentheses and `!=` are refused. Every refusal is an [`Error::InvalidArgument`] naming the
//! character (counted from 1) where reading stopped.
//!
//! ```
//! use agentstate::filter::{parse_session_filter, parse_session_order};
//! use agentstate::store::ListOrder;
//!
//! let parsed = parse_session_filter(r#"user_id="alice" AND labels.team="support" AND state.stage=2"#)?;
//! assert_eq!(parsed.user_id.as_deref(), Some("alice"));
//! assert_eq!(parsed.filter.labels["team"], "support");
//! assert_eq!(parse_session_order("create_time desc")?, (ListOrder::CreateTime, true));
//!
//! let refused = parse_session_filter(r#"user_id="a" OR user_id="b""#).unwrap_err();
//! assert!(refused.to_string().contains("character 13"), "{refused}");
//! # Ok::<(), agentstate::Error>(())
//! ```

use std::iter::Peekable;
use std::str::CharIndices;

use serde_json::{Number, Value};

use crate::error::{Error, Result};
use crate::scope::Scope;
use crate::store::{ListOrder, SessionFilter, TimeRange};
use crate::time::Timestamp;

/// A filter as read: the user it names, if any, and the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedFilter {
    /// `user_id="…"`.
    pub user_id: Option<String>,
    /// Every other condition.
    pub filter: SessionFilter,
}

/// Reads a sessions filter (see the [module](self)); an empty text admits every session.
pub fn parse_session_filter(text: &str) -> Result<ParsedFilter> {
    let mut reader = Reader { text, chars: text.char_indices().peekable() };
    let mut parsed = ParsedFilter::default();
    reader.blank();
    if reader.at_end() {
        return Ok(parsed);
    }
    loop {
        reader.term(&mut parsed)?;
        let had_blank = reader.blank();
        if reader.at_end() {
            return Ok(parsed);
        }
        let at = reader.position();
        let word = reader.word();
        match word.as_str() {
            "AND" if had_blank => {
                if !reader.blank() || reader.at_end() {
                    return Err(reader.refuse("expected a term after AND"));
                }
            }
            "OR" | "NOT" => return Err(reader.refuse_at(at, format!("{word} is not supported; join terms with AND"))),
            _ => return Err(reader.refuse_at(at, "expected AND between terms")),
        }
    }
}

/// Reads a sessions `orderBy`: `update_time` or `create_time` (or `updateTime`, `createTime`),
/// then `asc` (the default) or `desc`; empty is `update_time`. Answers the order and whether it
/// is newest first.
pub fn parse_session_order(text: &str) -> Result<(ListOrder, bool)> {
    let refuse = || {
        Error::invalid(
            "order_by",
            format!("sessions can be ordered by update_time or create_time, then asc or desc; not {text:?}"),
        )
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let (field, direction) = match words.as_slice() {
        [] => return Ok((ListOrder::UpdateTime, false)),
        [field] => (*field, "asc"),
        [field, direction] => (*field, *direction),
        _ => return Err(refuse()),
    };
    let order = match field {
        "update_time" | "updateTime" => ListOrder::UpdateTime,
        "create_time" | "createTime" => ListOrder::CreateTime,
        _ => return Err(refuse()),
    };
    match direction {
        "asc" => Ok((order, false)),
        "desc" => Ok((order, true)),
        _ => Err(refuse()),
    }
}

/// A state condition as a filter takes it: a session-scope key (no `user:`, `app:` or `temp:`
/// prefix) and a scalar (a string, a number, a boolean or null); why not, otherwise. For a
/// caller that builds a [`SessionFilter`] from its own input, as the CLI's `--state KEY=JSON`.
pub fn state_condition(key: &str, value: Value) -> std::result::Result<Value, &'static str> {
    if Scope::of(key).0 != Scope::Session {
        return Err("state filters take session keys, with no user:, app: or temp: prefix");
    }
    match value {
        Value::Array(_) | Value::Object(_) => {
            Err("state filters compare with a scalar: a string, a number, a boolean or null")
        }
        scalar => Ok(scalar),
    }
}

/// The filter text that [`parse_session_filter`] reads back as `user_id` and `filter`: for a
/// client passing a list on to another service.
pub fn session_filter_text(user_id: Option<&str>, filter: &SessionFilter) -> String {
    let mut terms = Vec::new();
    if let Some(user) = user_id {
        terms.push(format!("user_id={}", quote(user)));
    }
    if let Some(name) = &filter.display_name {
        terms.push(format!("display_name={}", quote(name)));
    }
    for (k, v) in &filter.labels {
        terms.push(format!("labels.{}={}", quote(k), quote(v)));
    }
    for (field, range) in [("update_time", filter.update_time), ("create_time", filter.create_time)] {
        let time = |micros: i64| quote(&Timestamp::from_micros(micros).rfc3339());
        if let Some(from) = range.from_micros {
            terms.push(format!("{field}>={}", time(from)));
        }
        if let Some(to) = range.to_micros {
            terms.push(format!("{field}<={}", time(to)));
        }
    }
    for (k, v) in &filter.state {
        terms.push(format!("state.{}={v}", quote(k)));
    }
    terms.join(" AND ")
}

/// A string literal: in double quotes, `"` and `\` escaped.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

struct Reader<'t> {
    text: &'t str,
    chars: Peekable<CharIndices<'t>>,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Reader<'_> {
    /// The byte offset of the next character (the text's length at the end).
    fn position(&mut self) -> usize {
        self.chars.peek().map_or(self.text.len(), |(i, _)| *i)
    }

    fn at_end(&mut self) -> bool {
        self.chars.peek().is_none()
    }

    /// Skips blanks; whether there were any.
    fn blank(&mut self) -> bool {
        let mut any = false;
        while self.chars.next_if(|(_, c)| c.is_whitespace()).is_some() {
            any = true;
        }
        any
    }

    /// Letters, digits, `_` and `-`.
    fn word(&mut self) -> String {
        let mut word = String::new();
        while let Some((_, c)) = self.chars.next_if(|(_, c)| c.is_alphanumeric() || matches!(c, '_' | '-')) {
            word.push(c);
        }
        word
    }

    /// A refusal at byte offset `at`, named by character (from 1).
    fn refuse_at(&self, at: usize, message: impl std::fmt::Display) -> Error {
        let column = self.text[..at.min(self.text.len())].chars().count() + 1;
        Error::invalid("filter", format!("{message}, at character {column} of {:?}", self.text))
    }

    fn refuse(&mut self, message: impl std::fmt::Display) -> Error {
        let at = self.position();
        self.refuse_at(at, message)
    }

    /// One `field op value` term, recorded in `parsed`.
    fn term(&mut self, parsed: &mut ParsedFilter) -> Result<()> {
        let start = self.position();
        if self.chars.next_if(|(_, c)| *c == '(').is_some() {
            return Err(self.refuse_at(start, "parentheses are not supported; join terms with AND"));
        }
        let field = self.word();
        if field.is_empty() {
            return Err(self.refuse(
                "expected a field name (user_id, display_name, labels.KEY, state.KEY, update_time, create_time)",
            ));
        }
        if field == "NOT" {
            return Err(self.refuse_at(start, "NOT is not supported"));
        }
        let key = if self.chars.next_if(|(_, c)| *c == '.').is_some() {
            let key_at = self.position();
            let key = if self.chars.peek().is_some_and(|(_, c)| *c == '"') { self.string()? } else { self.word() };
            if key.is_empty() {
                return Err(self.refuse("expected a key after the dot"));
            }
            Some((key, key_at))
        } else {
            None
        };
        self.blank();
        let op_at = self.position();
        let op = self.op()?;
        self.blank();
        let value_at = self.position();
        let (value, bare) = self.value()?;
        let only_equals = |reader: &Self, what: &str| {
            if op == Op::Eq { Ok(()) } else { Err(reader.refuse_at(op_at, format!("{what} takes = only"))) }
        };
        // Text fields take a bare token as its text (`user_id=12345` is the user "12345").
        let string = |reader: &Self, value: Value, what: &str| match (value, bare.clone()) {
            (Value::String(s), _) | (_, Some(s)) => Ok(s),
            _ => Err(reader.refuse_at(value_at, format!("{what} compares with a quoted string"))),
        };
        match (field.as_str(), key) {
            ("user_id" | "userId", None) => {
                only_equals(self, "user_id")?;
                parsed.user_id = Some(string(self, value, "user_id")?);
            }
            ("display_name" | "displayName", None) => {
                only_equals(self, "display_name")?;
                parsed.filter.display_name = Some(string(self, value, "display_name")?);
            }
            ("labels", Some((key, _))) => {
                only_equals(self, "a label")?;
                let value = string(self, value, "a label")?;
                parsed.filter.labels.insert(key, value);
            }
            ("state", Some((key, key_at))) => {
                only_equals(self, "a state value")?;
                let value = state_condition(&key, value).map_err(|why| self.refuse_at(key_at, why))?;
                parsed.filter.state.insert(key, value);
            }
            ("update_time" | "updateTime", None) => {
                let time = self.time(value, value_at)?;
                parsed.filter.update_time = narrow(parsed.filter.update_time, op, time);
            }
            ("create_time" | "createTime", None) => {
                let time = self.time(value, value_at)?;
                parsed.filter.create_time = narrow(parsed.filter.create_time, op, time);
            }
            (_, _) => {
                return Err(self.refuse_at(
                    start,
                    format!("sessions cannot be filtered by {:?}; use user_id, display_name, labels.KEY, state.KEY, update_time or create_time", &self.text[start..op_at].trim_end()),
                ));
            }
        }
        Ok(())
    }

    fn op(&mut self) -> Result<Op> {
        let Some((at, c)) = self.chars.next() else {
            return Err(self.refuse("expected an operator (=, <, <=, >, >=)"));
        };
        let or_equal = self.chars.next_if(|(_, c)| *c == '=').is_some();
        match (c, or_equal) {
            ('=', false) => Ok(Op::Eq),
            ('<', false) => Ok(Op::Lt),
            ('<', true) => Ok(Op::Le),
            ('>', false) => Ok(Op::Gt),
            ('>', true) => Ok(Op::Ge),
            ('!', true) => Err(self.refuse_at(at, "!= is not supported")),
            (':', _) => Err(self.refuse_at(at, "the has operator (:) is not supported; compare with =")),
            _ => Err(self.refuse_at(at, "expected an operator (=, <, <=, >, >=)")),
        }
    }

    /// A quoted string, or a bare token, as AIP-160 reads one: a number, `true`, `false`, `null`,
    /// or else text (ADK for Java writes `user_id=alice`). With a bare token, its text too.
    fn value(&mut self) -> Result<(Value, Option<String>)> {
        const EXPECTED: &str = "expected a value: a quoted string, a number, true, false or null";
        if self.chars.peek().is_some_and(|(_, c)| *c == '"') {
            return Ok((Value::String(self.string()?), None));
        }
        let at = self.position();
        let mut text = String::new();
        while let Some((_, c)) = self.chars.next_if(|(_, c)| !c.is_whitespace() && !matches!(c, '"' | '(' | ')')) {
            text.push(c);
        }
        let value = match text.as_str() {
            "" => return Err(self.refuse_at(at, EXPECTED)),
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            number if number.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => {
                serde_json::from_str::<Number>(number).map_or_else(|_| Value::String(text.clone()), Value::Number)
            }
            _ => Value::String(text.clone()),
        };
        Ok((value, Some(text)))
    }

    /// A double-quoted string, `\"`, `\\`, `\n` and `\t` escaped.
    fn string(&mut self) -> Result<String> {
        let open = self.position();
        self.chars.next();
        let mut out = String::new();
        loop {
            match self.chars.next() {
                Some((_, '"')) => return Ok(out),
                Some((at, '\\')) => match self.chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, c @ ('"' | '\\'))) => out.push(c),
                    _ => return Err(self.refuse_at(at, "unknown escape; write \\\", \\\\, \\n or \\t")),
                },
                Some((_, c)) => out.push(c),
                None => return Err(self.refuse_at(open, "the string is not closed")),
            }
        }
    }

    /// A time value: a quoted RFC 3339 time, in epoch nanoseconds.
    fn time(&self, value: Value, at: usize) -> Result<i64> {
        let Value::String(text) = value else {
            return Err(self.refuse_at(at, "times compare with a quoted RFC 3339 time, e.g. \"2026-11-27T09:00:00Z\""));
        };
        Timestamp::parse_rfc3339(&text).map(Timestamp::nanos).map_err(|why| self.refuse_at(at, why))
    }
}

/// `range` narrowed by `time op value`, `value` in nanoseconds, to the microseconds it admits.
fn narrow(range: TimeRange, op: Op, nanos: i64) -> TimeRange {
    let floor = nanos.div_euclid(1000);
    let ceil = floor + i64::from(nanos.rem_euclid(1000) != 0);
    match op {
        Op::Eq => range.from(ceil).to(floor),
        Op::Ge => range.from(ceil),
        Op::Gt => range.from(floor + 1),
        Op::Le => range.to(floor),
        Op::Lt => range.to(ceil - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(text: &str) -> String {
        parse_session_filter(text).unwrap_err().to_string()
    }

    #[test]
    fn reads_every_field() {
        let parsed = parse_session_filter(
            r#"userId="a\"b" AND display_name = "Trip" AND labels.team="x" AND labels."a b"="y" AND state.n=1.5 AND state.ok=true AND state.none=null AND state.s="v" AND update_time>="2026-01-01T00:00:00.0000015Z" AND update_time<"2026-01-02T00:00:00Z" AND createTime="2026-01-01T00:00:00+01:00""#,
        )
        .unwrap();
        assert_eq!(parsed.user_id.as_deref(), Some("a\"b"));
        let f = parsed.filter;
        assert_eq!(f.display_name.as_deref(), Some("Trip"));
        assert_eq!(f.labels.len(), 2);
        assert_eq!(f.labels["a b"], "y");
        assert_eq!(f.state["n"], json!(1.5));
        assert_eq!(f.state["ok"], json!(true));
        assert_eq!(f.state["none"], Value::Null);
        assert_eq!(f.state["s"], json!("v"));
        let day = 1_767_225_600_000_000;
        assert_eq!(f.update_time, TimeRange { from_micros: Some(day + 2), to_micros: Some(day + 86_400_000_000 - 1) });
        let hour_before = day - 3_600_000_000;
        assert_eq!(f.create_time, TimeRange { from_micros: Some(hour_before), to_micros: Some(hour_before) });
        assert_eq!(parse_session_filter("  ").unwrap(), ParsedFilter::default());
    }

    #[test]
    fn renders_what_it_reads() {
        let parsed = parse_session_filter(
            r#"user_id="u" AND labels.k="v\\" AND state.n=2 AND update_time>"2026-01-01T00:00:00Z" AND create_time<="2026-02-01T00:00:00.000001Z""#,
        )
        .unwrap();
        let text = session_filter_text(parsed.user_id.as_deref(), &parsed.filter);
        assert_eq!(parse_session_filter(&text).unwrap(), parsed, "{text}");
    }

    /// The refusal of `text` says `what` at character `column`.
    #[track_caller]
    fn refused(text: &str, what: &str, column: usize) {
        let message = refusal(text);
        assert!(message.contains(what) && message.contains(&format!("at character {column} ")), "{text}: {message}");
    }

    #[test]
    fn refusals_say_where() {
        refused(r#"user_id="a" OR user_id="b""#, "OR is not supported", 13);
        refused(r#"labels.k!="v""#, "!= is not supported", 9);
        refused(r#"colour="red""#, "cannot be filtered by \"colour\"", 1);
        refused(r#"state."user:x"=1"#, "session keys", 7);
        refused(r#"labels.k:"v""#, "has operator", 9);
        refused(r#"update_time>"yesterday""#, "yesterday", 13);
        refused(r#"display_name="a"user_id="b""#, "expected AND", 17);
        refused(r#"display_name="a"#, "not closed", 14);
        refused(r#"display_name<"a""#, "takes = only", 13);
        refused(r#"(user_id="a")"#, "parentheses", 1);
        refused(r#"é="a" OR"#, "cannot be filtered", 1);
        refused(r#"user_id="a" AND"#, "a term after AND", 16);
        refused(r#"user_id="a" AND  "#, "a term after AND", 18);
        refused(r#"labels.="x""#, "a key after the dot", 8);
        refused(r#"user_id"#, "expected an operator", 8);
        refused(r#"user_id= "#, "expected a value", 10);
    }

    #[test]
    fn bare_values_are_text_numbers_or_keywords() {
        let parsed =
            parse_session_filter("user_id=alice@example.com AND labels.k=1 AND state.n=2 AND state.s=1x").unwrap();
        assert_eq!(parsed.user_id.as_deref(), Some("alice@example.com"), "ADK for Java's unquoted user filter");
        assert_eq!(parsed.filter.labels["k"], "1");
        assert_eq!((&parsed.filter.state["n"], &parsed.filter.state["s"]), (&json!(2), &json!("1x")));
        assert_eq!(parse_session_filter("user_id=00123").unwrap().user_id.as_deref(), Some("00123"), "as written");
        refused(r#"display_name=a"b""#, "expected AND", 15);
    }

    #[test]
    fn state_conditions_are_scalars_of_session_keys() {
        assert_eq!(state_condition("stage", json!(2)), Ok(json!(2)));
        assert_eq!(state_condition("name", Value::Null), Ok(Value::Null));
        assert!(state_condition("user:plan", json!("pro")).is_err());
        assert!(state_condition("tags", json!(["a"])).is_err());
        assert!(state_condition("nested", json!({"a": 1})).is_err());
    }

    #[test]
    fn orders() {
        assert_eq!(parse_session_order("").unwrap(), (ListOrder::UpdateTime, false));
        assert_eq!(parse_session_order("update_time desc").unwrap(), (ListOrder::UpdateTime, true));
        assert_eq!(parse_session_order(" createTime ").unwrap(), (ListOrder::CreateTime, false));
        assert!(parse_session_order("name").is_err());
        assert!(parse_session_order("create_time up").is_err());
    }
}
