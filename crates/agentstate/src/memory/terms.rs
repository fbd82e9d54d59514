//! How a memory's text is indexed and a query looked up, the same on every backend.
//!
//! A memory is indexed under terms: one per [searchable word](super::words::searchable_words),
//! and, for each word that is not ASCII, one per character and per pair of adjacent characters
//! (a query word that is not ASCII also matches *inside* words, as in scripts written without
//! spaces: its characters or pairs find the candidates). A query is a list of alternatives, one
//! per query word, each a set of terms that must all be there; a memory matching any is a
//! candidate, and the service keeps the candidates [`matched`](super::words::matched) confirms,
//! so what is found is exactly what ADK for Python's `InMemoryMemoryService` finds.
//!
//! Each term is a hash of its owner (app and user), kind and text, written as 12 lower-case ASCII
//! letters: one user's terms never share an index entry with another's, so a lookup reads that
//! user's entries only, however many other users there are. Every
//! engine's full-text tokenizer (FTS5's `unicode61`, PostgreSQL's `simple` parser, InnoDB's
//! FULLTEXT parser) takes such a token whole: no stop words, minimum lengths, stemming or script
//! rules change what matches, so the engines answer the same candidates. A collision (48 bits)
//! only adds a candidate that the confirmation drops. The index holds no readable text.
//!
//! ```
//! use agentstate::memory::{MemoryOwner, terms, words};
//! let alice = MemoryOwner::new("app", "alice")?;
//! let indexed = terms::index_terms(&alice, "私はPythonを使う");
//! let query = terms::query_terms(&alice, &words::words("python"));
//! assert!(query.iter().any(|all| all.iter().all(|t| indexed.split(' ').any(|i| i == t))));
//! let bob = MemoryOwner::new("app", "bob")?;
//! assert_ne!(terms::index_terms(&bob, "python"), terms::index_terms(&alice, "python"));
//! # Ok::<(), agentstate::Error>(())
//! ```

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use super::model::MemoryOwner;
use super::words::{searchable_words, words};

/// Letters per term: 4 bits each.
const TERM_LETTERS: usize = 12;

/// The terms a text is indexed under, sorted, without repeats, separated by single spaces.
pub fn index_terms(owner: &MemoryOwner, text: &str) -> String {
    let salt = Salt::of(owner);
    let term = |kind, text: &str| salt.term(kind, text);
    let mut terms = BTreeSet::new();
    for word in searchable_words(text) {
        terms.insert(term(b'w', &word));
    }
    for word in words(text).iter().filter(|w| !w.is_ascii()) {
        let chars: Vec<char> = word.chars().collect();
        for c in &chars {
            terms.insert(term(b'c', c.encode_utf8(&mut [0; 4])));
        }
        for pair in chars.windows(2) {
            terms.insert(term(b'b', &pair.iter().collect::<String>()));
        }
    }
    terms.into_iter().collect::<Vec<_>>().join(" ")
}

/// The alternatives a query is looked up by, one per query word (see the module's doc): an
/// ASCII word by its own term, any other by its character (one character) or every pair of
/// adjacent characters.
pub fn query_terms(owner: &MemoryOwner, query_words: &BTreeSet<String>) -> Vec<Vec<String>> {
    let salt = Salt::of(owner);
    let term = |kind, text: &str| salt.term(kind, text);
    query_words
        .iter()
        .map(|word| {
            if word.is_ascii() {
                return vec![term(b'w', word)];
            }
            let chars: Vec<char> = word.chars().collect();
            if let [c] = chars[..] {
                return vec![term(b'c', c.encode_utf8(&mut [0; 4]))];
            }
            let pairs: BTreeSet<String> = chars.windows(2).map(|p| term(b'b', &p.iter().collect::<String>())).collect();
            pairs.into_iter().collect()
        })
        .collect()
}

/// SHA-256 fed with an owner, cloned for each term.
struct Salt(Sha256);

impl Salt {
    fn of(owner: &MemoryOwner) -> Self {
        let (app, user) = (owner.app_name().as_bytes(), owner.user_id().as_bytes());
        // Lengths first, so no two owners feed the same bytes.
        let lengths = [app.len() as u64, user.len() as u64];
        Self(
            Sha256::new()
                .chain_update(lengths[0].to_be_bytes())
                .chain_update(lengths[1].to_be_bytes())
                .chain_update(app)
                .chain_update(user),
        )
    }

    /// One term: the first 48 bits of SHA-256 over the owner, its kind and text, as letters
    /// `a`–`p`.
    fn term(&self, kind: u8, text: &str) -> String {
        let digest = self.0.clone().chain_update([kind, 0]).chain_update(text.as_bytes()).finalize();
        digest
            .iter()
            .flat_map(|byte| [byte >> 4, byte & 0x0f])
            .take(TERM_LETTERS)
            .map(|nibble| char::from(b'a' + nibble))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::words::matched;

    /// Whether the index of `text` answers `query` as a candidate.
    fn owner() -> MemoryOwner {
        MemoryOwner::new("app", "alice").unwrap()
    }

    fn candidate(text: &str, query: &str) -> bool {
        let indexed: BTreeSet<&str> = index_terms(&owner(), text).leak().split(' ').collect();
        query_terms(&owner(), &words(query)).iter().any(|all| all.iter().all(|t| indexed.contains(t.as_str())))
    }

    #[test]
    fn terms_are_letter_tokens() {
        let terms = index_terms(&owner(), "Hello, wörld! 日本語");
        assert!(terms.split(' ').all(|t| t.len() == TERM_LETTERS && t.bytes().all(|b| (b'a'..=b'p').contains(&b))));
        assert_eq!(index_terms(&owner(), "hello HELLO"), index_terms(&owner(), "Hello"), "one term per word");
        assert_eq!(index_terms(&owner(), "!!"), "");
        let (ab, a_b) = (MemoryOwner::new("ab", "c").unwrap(), MemoryOwner::new("a", "bc").unwrap());
        assert_ne!(index_terms(&ab, "x"), index_terms(&a_b, "x"), "owners never share terms");
    }

    /// Every match ADK would make is a candidate: the index never loses one.
    #[test]
    fn whatever_matches_is_a_candidate() {
        let texts = ["私はPythonを使う and Rust", "Straße naïve日本", "hello_there x2", "١٢٣abc", "İstanbul"];
        let queries =
            ["python", "rust go", "使う", "私", "はp", "日本", "straße", "x2", "hello_there", "١٢", "abc", "i̇s"];
        for text in texts {
            for query in queries {
                if matched(&words(query), text) > 0 {
                    assert!(candidate(text, query), "{query:?} matches {text:?} but is not a candidate");
                }
            }
        }
        assert!(!candidate("私はPythonを使う", "thon"));
        assert!(!candidate("hello there", "hello_there"));
    }
}
