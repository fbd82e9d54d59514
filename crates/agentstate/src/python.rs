//! Text as ADK for Python prints it, where agentstate's answers or prompts must read the same.

/// Python's `repr` of a string: single quotes, unless the text has one and no double quote;
/// backslashes, the quote, line breaks, tabs and other control characters escaped.
///
/// ```
/// assert_eq!(agentstate::python::repr("it's"), "\"it's\"");
/// assert_eq!(agentstate::python::repr("a\nb"), "'a\\nb'");
/// ```
pub fn repr(value: &str) -> String {
    let quote = if value.contains('\'') && !value.contains('"') { '"' } else { '\'' };
    let mut out = String::from(quote);
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
