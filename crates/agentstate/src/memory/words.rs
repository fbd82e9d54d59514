//! Text split into words as ADK for Python's `InMemoryMemoryService` (google-adk 2.13) splits it,
//! so that a memory it finds, agentstate finds: NFC-normalised, split into runs of word characters
//! (Python's `\w`: letters, numbers, `_`), lower-cased; a word that mixes Latin and other scripts
//! also yields each single-script run (`python` finds `私はPythonを使う`, `thon` does not); and a
//! query word that is not ASCII also matches inside the text (scripts written without spaces).
//!
//! ```
//! use agentstate::memory::words::{matched, searchable_words, words};
//! let text = "私はPythonを使う";
//! assert!(searchable_words(text).contains("python"));
//! assert_eq!(matched(&words("Python rocks"), text), 1);
//! assert_eq!(matched(&words("thon"), text), 0);
//! assert_eq!(matched(&words("使う"), text), 1, "inside a word, not being ASCII");
//! ```

use std::collections::BTreeSet;

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// The words of `text`: Python's `re.findall(r'\w+', …)` over its NFC form, each lower-cased.
pub fn words(text: &str) -> BTreeSet<String> {
    let text: String = text.nfc().collect();
    text.split(|c: char| !is_word_char(c)).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The words a stored text is found by: [`words`], plus, for a word mixing Latin and other
/// scripts, each of its single-script runs.
pub fn searchable_words(text: &str) -> BTreeSet<String> {
    let mut found = words(text);
    let mixed: Vec<String> = found.iter().filter(|w| !w.is_ascii()).cloned().collect();
    for word in mixed {
        let mut run = String::new();
        let mut latin = None;
        for c in word.chars() {
            if latin.is_some_and(|l| l != is_latin(c)) {
                found.insert(std::mem::take(&mut run));
            }
            latin = Some(is_latin(c));
            run.push(c);
        }
        found.insert(run);
    }
    found
}

/// How many of `query_words` (see [`words`]) `text` matches: a word among its
/// [`searchable_words`], or, for a word that is not ASCII, anywhere in its lower-cased NFC form.
/// 0 when `text` has no words.
pub fn matched(query_words: &BTreeSet<String>, text: &str) -> usize {
    let searchable = searchable_words(text);
    if searchable.is_empty() {
        return 0;
    }
    let lower = text.nfc().collect::<String>().to_lowercase();
    query_words.iter().filter(|w| searchable.contains(*w) || (!w.is_ascii() && lower.contains(w.as_str()))).count()
}

/// Python's `\w` for text: letters, numbers and `_`.
fn is_word_char(c: char) -> bool {
    c == '_' || matches!(c.general_category_group(), GeneralCategoryGroup::Letter | GeneralCategoryGroup::Number)
}

/// ADK's test for a Latin character: ASCII letters, digits and `_`, and every character whose
/// Unicode name starts with `LATIN` (the ranges below, from Unicode 14's names, as Python 3.11
/// reads them).
fn is_latin(c: char) -> bool {
    const LATIN_NAMES: [(u32, u32); 26] = [
        (0xC0, 0xD6),
        (0xD8, 0xF6),
        (0xF8, 0x2AF),
        (0x1D00, 0x1D25),
        (0x1D62, 0x1D65),
        (0x1D6B, 0x1D77),
        (0x1D79, 0x1D9A),
        (0x1E00, 0x1EFF),
        (0x2090, 0x209C),
        (0x2184, 0x2184),
        (0x271D, 0x271D),
        (0x2C60, 0x2C7C),
        (0x2C7E, 0x2C7F),
        (0xA722, 0xA76F),
        (0xA771, 0xA787),
        (0xA78B, 0xA7CA),
        (0xA7D0, 0xA7D1),
        (0xA7D3, 0xA7D3),
        (0xA7D5, 0xA7D9),
        (0xA7F5, 0xA7F7),
        (0xA7FA, 0xA7FF),
        (0xAB30, 0xAB5A),
        (0xAB60, 0xAB64),
        (0xAB66, 0xAB68),
        (0xFB00, 0xFB06),
        (0x1DF00, 0x1DF1E),
    ];
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    let code = u32::from(c);
    LATIN_NAMES.iter().any(|&(first, last)| (first..=last).contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    /// Cases whose answers are ADK for Python 2.13's (`_extract_words_lower`,
    /// `_extract_searchable_words` and the match count of `search_memory`, run on the same text).
    #[test]
    fn as_adk_for_python_splits_and_matches() {
        assert_eq!(words("Hello, World! hello_there x2"), set(&["hello", "world", "hello_there", "x2"]));
        // NFC: a decomposed é is the composed one.
        assert_eq!(words("Cafe\u{301} CAFÉ"), set(&["café"]));
        assert_eq!(searchable_words("私はPythonを使う"), set(&["私はpythonを使う", "私は", "python", "を使う"]));
        assert_eq!(searchable_words("naïve日本"), set(&["naïve日本", "naïve", "日本"]));
        assert_eq!(searchable_words("Straße"), set(&["straße"]));
        assert_eq!(searchable_words("١٢٣abc"), set(&["١٢٣abc", "١٢٣", "abc"]));
        assert!(searchable_words("... !!").is_empty());

        let text = "私はPythonを使う and Rust";
        assert_eq!(matched(&words("python rust go"), text), 2);
        assert_eq!(matched(&words("thon"), text), 0, "an ASCII query word matches whole words only");
        assert_eq!(matched(&words("使う はp"), text), 2, "a non-ASCII one inside words too");
        assert_eq!(matched(&words("anything"), "!!!"), 0);
    }
}
