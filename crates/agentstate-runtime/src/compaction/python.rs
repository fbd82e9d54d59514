//! JSON values written as ADK for Python writes them where compaction reads text: `str()` of a
//! dict in the summariser's prompt, `json.dumps()` lengths in the token estimate.

use agentstate::Value;

/// `str(value)` in Python, for a value parsed from JSON (`{'a': 1, 'b': [True, None]}`).
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(value, &mut out);
    out
}

fn write_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => string_repr(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string_repr(key, out);
                out.push_str(": ");
                write_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// A number as Python prints it: integers as they are, floats with a `.0` or a signed exponent.
fn number(n: &serde_json::Number) -> String {
    let text = n.to_string();
    if n.is_f64() {
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with(['-', '+']) => format!("{mantissa}e+{exponent}"),
            Some(_) => text,
            None if text.contains('.') || text.contains("inf") || text.contains("NaN") => text,
            None => format!("{text}.0"),
        }
    } else {
        text
    }
}

fn string_repr(s: &str, out: &mut String) {
    out.push_str(&agentstate::python::repr(s));
}

/// `len(json.dumps(value))` in Python: `", "` and `": "` between items, non-ASCII escaped.
pub(crate) fn dumps_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number(n).len(),
        Value::String(s) => string_dumps_len(s),
        Value::Array(items) => 2 + items.iter().map(dumps_len).sum::<usize>() + 2 * items.len().saturating_sub(1),
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| string_dumps_len(k) + 2 + dumps_len(v)).sum::<usize>()
                + 2 * map.len().saturating_sub(1)
        }
    }
}

fn string_dumps_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 || (c as u32) > 0x7e && (c as u32) < 0x10000 => 6,
            c if (c as u32) >= 0x10000 => 12,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{dumps_len, repr};

    #[test]
    fn values_read_as_python_prints_them() {
        let value =
            json!({"city": "Paris", "n": 2, "x": 1.5, "big": 1e16, "ok": true, "no": null, "l": ["it's", "a\"b"]});
        assert_eq!(
            repr(&value),
            r#"{'city': 'Paris', 'n': 2, 'x': 1.5, 'big': 1e+16, 'ok': True, 'no': None, 'l': ["it's", 'a"b']}"#
        );
        // json.dumps({"a": [1, "é"], "b": None}) == '{"a": [1, "\\u00e9"], "b": null}'
        assert_eq!(dumps_len(&json!({"a": [1, "é"], "b": null})), r#"{"a": [1, "\u00e9"], "b": null}"#.len());
    }
}
