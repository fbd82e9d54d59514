//! Stored events written as the API shows them straight from their stored JSON text, in one pass
//! over it: no `Event` and no JSON tree is built, and nothing is parsed that is copied anyway.
//! Field names are renamed by the rules decoded events are written by ([`WireEvent`], the same
//! `Mode`s); strings, numbers and free-form values (state, deltas, tool arguments and results)
//! are copied as they are stored, byte for byte. The text is checked as it is read: what is not
//! JSON (or nested deeper than 128) is refused, so the answer is always JSON.
//!
//! The answer is the JSON of decoding the event and writing it: the row's id and invocation id
//! win over the text's, the row's time stands in for a missing `timestamp`, and fields an
//! `Event` always has are added when the text lacks them. It can differ in form, not in value:
//! fields in the text's order rather than the model's, a stored `null` kept for a field the
//! model leaves out, escapes and number forms (`1e5`, `\u00e9`) as stored.

use std::borrow::Cow;

use super::stream::Mode;
use super::{INTERNAL_METADATA_PREFIX, WireEvent};
use crate::store::StoredEvent;
use crate::time::micros_to_secs;
use crate::{Event, Value};

/// Deepest nesting read, as serde_json's.
const MAX_DEPTH: usize = 128;

/// A stored event's row, borrowed: what [`write_stored_row`] writes from, straight from the
/// row a database hands back (a [`StoredEvent`]'s fields, not copied out of it).
#[derive(Debug, Clone, Copy)]
pub struct StoredRow<'a> {
    /// The row's event id; it wins over one in the text.
    pub id: &'a str,
    /// The row's invocation id; it wins over one in the text.
    pub invocation_id: &'a str,
    /// The row's time, epoch microseconds: the event's when the text has no `timestamp`.
    pub timestamp_micros: i64,
    /// The JSON text; `None` for a row without one.
    pub data: Option<&'a str>,
}

impl<'a> From<&'a StoredEvent> for StoredRow<'a> {
    fn from(stored: &'a StoredEvent) -> Self {
        Self {
            id: &stored.id,
            invocation_id: &stored.invocation_id,
            timestamp_micros: stored.timestamp_micros,
            data: stored.data.as_deref(),
        }
    }
}

/// Writes `stored` as the API shows it (a JSON object) at the end of `out`. Text that is not a
/// JSON object is an error that names the event (and leaves part of it in `out`).
pub fn write_stored_event(stored: &StoredEvent, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    write_stored_row(stored.into(), out)
}

/// [`write_stored_event`] for a row read in place.
pub fn write_stored_row(row: StoredRow<'_>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let Some(text) = row.data else {
        // A row without text: the event of its columns alone.
        let event = Event {
            id: row.id.to_owned(),
            invocation_id: row.invocation_id.to_owned(),
            timestamp: micros_to_secs(row.timestamp_micros),
            ..Event::default()
        };
        return serde_json::to_writer(out, &WireEvent(&event));
    };
    let mut scan = Scan { source: text, text: text.as_bytes(), at: 0, depth: 0 };
    let written = match scan.peek() {
        Some(b'{') => object(&mut scan, out, Mode::Event, Some(&row)).and_then(|()| scan.end()),
        _ => Err(scan.fail("expected a JSON object")),
    };
    written.map_err(|e| <serde_json::Error as serde::de::Error>::custom(format!("event {} is unreadable: {e}", row.id)))
}

/// Why a text is refused, and where.
#[derive(Debug)]
struct Unreadable(String);

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Read<T> = Result<T, Unreadable>;

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` takes
fn json(e: serde_json::Error) -> Unreadable {
    Unreadable(e.to_string())
}

/// A position in a JSON text.
struct Scan<'t> {
    source: &'t str,
    text: &'t [u8],
    at: usize,
    depth: usize,
}

/// Bytes of `chunk` that end a run of plain string content: `"`, `\` or a control character
/// (their high bits set; eight bytes at a time).
fn specials(chunk: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = chunk.wrapping_sub(0x20 * ONES) & !chunk & HIGHS;
    zero_in(chunk ^ (u64::from(b'"') * ONES)) | zero_in(chunk ^ (u64::from(b'\\') * ONES)) | below_space
}

impl<'t> Scan<'t> {
    #[cold]
    #[inline(never)]
    fn fail(&self, what: &str) -> Unreadable {
        Unreadable(format!("{what} at byte {}", self.at))
    }

    #[cold]
    #[inline(never)]
    fn missing(&self, byte: u8) -> Unreadable {
        self.fail(&format!("expected `{}`", char::from(byte)))
    }

    /// The next byte after white space, not taken.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.text.get(self.at) {
            self.at += 1;
        }
        self.text.get(self.at).copied()
    }

    /// Takes `byte`, after white space.
    #[inline]
    fn take(&mut self, byte: u8) -> Read<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.missing(byte))
        }
    }

    /// Only white space is left.
    fn end(&mut self) -> Read<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.fail("trailing characters")),
        }
    }

    fn slice(&self, from: usize) -> &'t str {
        // Token boundaries are ASCII bytes, so every slice is on a character boundary.
        self.source.get(from..self.at).unwrap_or_default()
    }

    fn digits(&mut self) -> usize {
        let from = self.at;
        while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - from
    }

    fn hex4(&mut self) -> Read<u32> {
        let digits = self.text.get(self.at..self.at + 4).ok_or_else(|| self.fail("incomplete escape"))?;
        let code = std::str::from_utf8(digits).ok().and_then(|d| u32::from_str_radix(d, 16).ok());
        self.at += 4;
        code.ok_or_else(|| self.fail("invalid \\u escape"))
    }

    /// A string token at the cursor: its text, quotes included, and whether it has escapes.
    fn string(&mut self) -> Read<(&'t str, bool)> {
        let from = self.at;
        self.take(b'"')?;
        let mut escaped = false;
        loop {
            // Plain content, eight bytes at a time.
            while let Some(chunk) = self.text.get(self.at..self.at + 8) {
                let chunk = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
                match specials(chunk) {
                    0 => self.at += 8,
                    found => {
                        self.at += (found.trailing_zeros() / 8) as usize;
                        break;
                    }
                }
            }
            match self.text.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok((self.slice(from), escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    self.at += 1;
                    match self.text.get(self.at) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 1,
                        Some(b'u') => {
                            self.at += 1;
                            let code = self.hex4()?;
                            if (0xD800..0xDC00).contains(&code) {
                                // A high surrogate needs its low one.
                                if self.text.get(self.at..self.at + 2) != Some(b"\\u") {
                                    return Err(self.fail("lone leading surrogate in hex escape"));
                                }
                                self.at += 2;
                                if !(0xDC00..0xE000).contains(&self.hex4()?) {
                                    return Err(self.fail("unexpected end of hex escape"));
                                }
                            } else if (0xDC00..0xE000).contains(&code) {
                                return Err(self.fail("lone trailing surrogate in hex escape"));
                            }
                        }
                        _ => return Err(self.fail("invalid escape")),
                    }
                }
                Some(0..=0x1f) => return Err(self.fail("control character in a string")),
                Some(_) => self.at += 1,
                None => return Err(self.fail("unterminated string")),
            }
        }
    }

    /// A number token at the cursor, as written.
    fn number(&mut self) -> Read<&'t str> {
        let from = self.at;
        if self.text.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match self.text.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.fail("invalid number")),
        }
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(self.fail("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.text.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.text.get(self.at) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(self.fail("invalid number"));
            }
        }
        Ok(self.slice(from))
    }

    fn literal(&mut self, word: &'static str) -> Read<&'t str> {
        let from = self.at;
        if self.text.get(self.at..self.at + word.len()) != Some(word.as_bytes()) {
            return Err(self.fail("expected a JSON value"));
        }
        self.at += word.len();
        Ok(self.slice(from))
    }

    /// One scalar token at the cursor (after white space), as written; `None` at `{` or `[`.
    fn scalar(&mut self) -> Read<Option<&'t str>> {
        Ok(Some(match self.peek() {
            Some(b'"') => self.string()?.0,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(b't') => self.literal("true")?,
            Some(b'f') => self.literal("false")?,
            Some(b'n') => self.literal("null")?,
            Some(b'{' | b'[') => return Ok(None),
            _ => return Err(self.fail("expected a JSON value")),
        }))
    }

    fn enter(&mut self) -> Read<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH { Err(self.fail("recursion limit exceeded")) } else { Ok(()) }
    }

    /// Skips one value, checking it; its text.
    fn value(&mut self) -> Read<&'t str> {
        if let Some(token) = self.scalar()? {
            return Ok(token);
        }
        let from = self.at;
        let close = if self.text[self.at] == b'{' { b'}' } else { b']' };
        self.enter()?;
        self.at += 1;
        if self.peek() == Some(close) {
            self.at += 1;
        } else {
            loop {
                if close == b'}' {
                    self.string()?;
                    self.take(b':')?;
                }
                self.value()?;
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b) if b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(self.fail("expected `,` or the end of a container")),
                }
                // A name must follow a comma in an object.
                if close == b'}' && self.peek() != Some(b'"') {
                    return Err(self.fail("expected a field name"));
                }
            }
        }
        self.depth -= 1;
        Ok(self.slice(from))
    }

    /// Walks the entries of a container at the cursor (`{` or `[`), calling `entry` with each
    /// field name (objects) and the cursor at its value, which `entry` must take.
    fn each(&mut self, mut entry: impl FnMut(&mut Self, Option<(&'t str, bool)>) -> Read<()>) -> Read<()> {
        let object = self.peek() == Some(b'{');
        let close = if object { b'}' } else { b']' };
        self.enter()?;
        self.at += 1;
        if self.peek() == Some(close) {
            self.at += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            let name = if object {
                let name = self.string()?;
                self.take(b':')?;
                Some(name)
            } else {
                None
            };
            entry(self, name)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b) if b == close => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(self.fail("expected `,` or the end of a container")),
            }
            if object && self.peek() != Some(b'"') {
                return Err(self.fail("expected a field name"));
            }
        }
    }
}

/// Writes `,` before every entry but the first.
fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
}

/// Writes `text` as a JSON string: copied between quotes when nothing in it needs escaping.
fn push_str(out: &mut Vec<u8>, text: &str) -> Read<()> {
    let bytes = text.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    let plain = chunks.by_ref().all(|c| specials(u64::from_le_bytes(c.try_into().unwrap_or_default())) == 0)
        && chunks.remainder().iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
    if !plain {
        return serde_json::to_writer(&mut *out, text).map_err(json);
    }
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
    Ok(())
}

/// Writes a field name: as it is when `plain` (nothing in it needs escaping), else escaped.
fn push_name(out: &mut Vec<u8>, name: &str, plain: bool) -> Read<()> {
    if plain {
        out.reserve(name.len() + 3);
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, name).map_err(json)?;
        out.push(b':');
        Ok(())
    }
}

/// A field name's text, without quotes or escapes.
fn unquoted((token, escaped): (&str, bool)) -> Read<Cow<'_, str>> {
    if escaped {
        serde_json::from_str::<String>(token).map(Cow::Owned).map_err(json)
    } else {
        Ok(Cow::Borrowed(&token[1..token.len() - 1]))
    }
}

/// The object at the cursor, in `mode`; at the top (`row` given) with the row's columns.
fn object(scan: &mut Scan<'_>, out: &mut Vec<u8>, mode: Mode, row: Option<&StoredRow<'_>>) -> Read<()> {
    let defaults = mode.defaults();
    // Bit i: the mode's default i appeared.
    let mut seen = 0u8;
    let mut first = true;
    let mut has_timestamp = false;
    out.push(b'{');
    if let Some(row) = row {
        separate(out, &mut first);
        out.extend_from_slice(b"\"invocationId\":");
        push_str(out, row.invocation_id)?;
    }
    scan.each(|scan, name| {
        let Some(name) = name else { return Err(scan.fail("expected a field name")) };
        let plain = !name.1;
        let key = unquoted(name)?;
        if row.is_some() {
            match &*key {
                // The row's own, written apart.
                "id" | "invocation_id" | "invocationId" => return scan.value().map(drop),
                // Always a float, as the model has it (a stored integer included).
                "timestamp" => {
                    let token = scan.scalar()?;
                    separate(out, &mut first);
                    out.extend_from_slice(b"\"timestamp\":");
                    has_timestamp = true;
                    if let Some(token) = token.filter(|t| plain_float(t)) {
                        // Already a float, with no more digits than a double holds: the value
                        // it is read as, in the form it was written.
                        out.extend_from_slice(token.as_bytes());
                        return Ok(());
                    }
                    let seconds = match token {
                        Some(token) if token.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) => {
                            token
                                .parse::<f64>()
                                .ok()
                                .filter(|t| t.is_finite())
                                .ok_or_else(|| scan.fail("number out of range"))?
                        }
                        _ => return Err(scan.fail("the timestamp is not a number")),
                    };
                    serde_json::to_writer(&mut *out, &seconds).map_err(json)?;
                    return Ok(());
                }
                _ => {}
            }
        }
        let field = mode.field(&key);
        if row.is_some() && field.written == "deletedKeys" {
            // Left out when empty, as the model leaves it out.
            let at = scan.at;
            if scan.take(b'[').is_ok() && scan.take(b']').is_ok() {
                return Ok(());
            }
            scan.at = at;
        }
        if let Some(i) = field.default {
            seen |= 1 << i;
        }
        if mode == Mode::Event && key == "custom_metadata" {
            // Internal metadata is stored, never shown; an emptied map is left out.
            let mut meta: Value = serde_json::from_str(scan.value()?).map_err(json)?;
            if let Value::Object(map) = &mut meta {
                map.retain(|k, _| !k.starts_with(INTERNAL_METADATA_PREFIX));
                if map.is_empty() {
                    return Ok(());
                }
            }
            separate(out, &mut first);
            out.extend_from_slice(b"\"customMetadata\":");
            return serde_json::to_writer(&mut *out, &meta).map_err(json);
        }
        separate(out, &mut first);
        // A name without escapes has nothing to escape, renamed or not.
        push_name(out, &field.written, plain)?;
        match field.child {
            Mode::FreeForm => out.extend_from_slice(scan.value()?.as_bytes()),
            child => any(scan, out, child)?,
        }
        Ok(())
    })?;
    if let Some(row) = row {
        separate(out, &mut first);
        out.extend_from_slice(b"\"id\":");
        push_str(out, row.id)?;
        if !has_timestamp {
            out.extend_from_slice(b",\"timestamp\":");
            serde_json::to_writer(&mut *out, &micros_to_secs(row.timestamp_micros)).map_err(json)?;
        }
    }
    for (i, (_, written, value)) in defaults.iter().enumerate() {
        if seen & (1 << i) == 0 {
            separate(out, &mut first);
            push_name(out, written, true)?;
            out.extend_from_slice(value.text().as_bytes());
        }
    }
    out.push(b'}');
    Ok(())
}

/// Whether a number token is `digits.digits`, 17 digits at most: a float as any JSON writer
/// writes one, which a double holds as read (so copying it writes the value decoding would).
fn plain_float(token: &str) -> bool {
    let Some((whole, fraction)) = token.split_once('.') else { return false };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction) && whole.len() + fraction.len() <= 17
}

/// The value at the cursor, in `mode` (not free-form).
fn any(scan: &mut Scan<'_>, out: &mut Vec<u8>, mode: Mode) -> Read<()> {
    if let Some(token) = scan.scalar()? {
        out.extend_from_slice(token.as_bytes());
        return Ok(());
    }
    if scan.text[scan.at] == b'{' {
        return object(scan, out, mode, None);
    }
    let element = mode.element();
    let mut first = true;
    out.push(b'[');
    scan.each(|scan, _| {
        separate(out, &mut first);
        match element {
            Mode::FreeForm => out.extend_from_slice(scan.value()?.as_bytes()),
            element => any(scan, out, element)?,
        }
        Ok(())
    })?;
    out.push(b']');
    Ok(())
}
