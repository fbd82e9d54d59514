//! Encryption at rest: [`EncryptedStore`] wraps any [`SessionStore`] and encrypts what users and
//! models wrote (state values, event contents) with AES-256-GCM before the store sees it.
//!
//! What stays plaintext, so scoping, per-key merges and queries keep working: ids (app, user,
//! session, event, invocation), state keys, timestamps, an event's author, the keys it deletes and
//! the invocation a rewind event names. Everything else of an event (content, errors, artifact
//! deltas, transfers, unknown fields) is sealed in one ciphertext; each state value (in the state,
//! in an event's delta, in a history snapshot) is its own ciphertext, so the store still merges
//! `user:`/`app:` keys one by one and concurrent writers lose nothing.
//!
//! Each ciphertext names the key that sealed it (`$as1$<key id>$<base64 nonce‖ciphertext‖tag>`)
//! and is bound (as associated data) to where it belongs: a value to its scope, owner and key, an
//! event's parts to the app, user and event id, so a ciphertext moved elsewhere does not open. New
//! writes use the key ring's first key; reads accept any key of the ring, so keys rotate without
//! downtime: put the new key first and keep the old ones until everything is re-encrypted.
//!
//! The store records that it is encrypted, with a check value per key id, so a wrong key, or
//! opening it without keys, is refused at start with a message that says so (see
//! [`refuse_if_encrypted`]); a value that does not open is an error naming the session, never
//! garbage. Values written before encryption was turned on are read as they are.
//!
//! ```
//! use agentstate::crypt::{EncryptedStore, KeyRing};
//! use agentstate::{CreateSession, GetSessionConfig, InMemoryStore, SessionService};
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = KeyRing::parse("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")?;
//! let service = SessionService::new(EncryptedStore::open(InMemoryStore::new(), keys).await?);
//! let session = service.create_session(CreateSession::new("app", "alice").state("k", json!(1))).await?;
//! let loaded = service.get_session(session.key(), GetSessionConfig::default()).await?.unwrap();
//! assert_eq!(loaded.state().get("k"), Some(&json!(1)));
//! # Ok(()) }
//! ```

mod artifact;
mod memory;
mod rekey;
mod seal;
mod store;

use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use rekey::Rekeyed;
pub use store::EncryptedStore;

use crate::error::Error;
use crate::store::{ENCRYPTION_METADATA, SessionStore};

/// The envelope's prefix: format 1.
const PREFIX: &str = "$as1$";
/// The field of a stored event that holds its sealed parts.
const SEALED: &str = crate::compaction::SEALED_KEY;
/// The store's record that every sealed event in it carries its facts (`"1"`), so that it may
/// answer the compacted view: set when encryption starts on a store, or a re-encryption ends.
const VIEWS_METADATA: &str = "agentstate_encryption_views";
/// Whether a stored `event` is sealed without the facts the compacted view reads
/// ([`FACTS_KEY`](crate::compaction::FACTS_KEY)): sealed by a release before sealed events
/// carried them.
fn sealed_without_facts(event: &crate::event::Event) -> bool {
    event.extra.contains_key(SEALED) && !event.extra.contains_key(crate::compaction::FACTS_KEY)
}

/// The associated data of each key's check value (which seals nothing).
const CHECK_AAD: &[u8] = b"agentstate encryption key check";
/// The cipher, as the store's record names it.
const MARKER_CIPHER: &str = "aes-256-gcm";
/// Keys at once: the record of their check values must fit 256 characters.
const MAX_KEYS: usize = 4;
const NONCE_BYTES: usize = 12;
/// What a key's memory-term key is derived with.
const TERMS_KEY_INFO: &[u8] = b"agentstate memory terms v1";

/// Why keys could not be read, or a store could not be opened with them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CryptError {
    /// The key list is malformed (the message never contains key material).
    #[error("encryption keys: {0}")]
    Keys(String),
    /// The keys do not fit the store.
    #[error("{0}")]
    Store(String),
    /// The store failed.
    #[error(transparent)]
    Backend(#[from] Error),
}

/// The encryption keys: each with an id, the first used for new writes, all accepted for reads.
/// `Debug` shows the ids only.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<[RingKey]>,
}

/// One key of a ring: its id, its cipher, and the keyed hash of encrypted memories' search terms
/// (keyed with a key derived from it, so terms reveal nothing without it).
#[derive(Clone)]
struct RingKey {
    id: String,
    cipher: Aes256Gcm,
    terms: Hmac<Sha256>,
}

impl RingKey {
    fn new(id: &str, bytes: &[u8]) -> Option<Self> {
        let cipher = Aes256Gcm::new_from_slice(bytes).ok()?;
        let derived =
            <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(bytes).ok()?.chain_update(TERMS_KEY_INFO).finalize();
        let terms = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(&derived.into_bytes()).ok()?;
        Some(Self { id: id.to_owned(), cipher, terms })
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing").field("ids", &self.ids()).finish_non_exhaustive()
    }
}

/// A value that does not open.
#[derive(Debug)]
enum Unsealed {
    UnknownKey(String),
    Tampered(String),
    Malformed,
}

impl KeyRing {
    /// Parses `id:base64-key` entries, separated by commas or new lines (blank lines and lines
    /// starting with `#` are skipped); each key is 32 bytes (AES-256), ids are 1–32 letters,
    /// digits, `-` or `_`. The first entry encrypts new writes.
    pub fn parse(text: &str) -> Result<Self, CryptError> {
        let mut keys: Vec<RingKey> = Vec::new();
        let entries = text.split([',', '\n']).map(str::trim).filter(|e| !e.is_empty() && !e.starts_with('#'));
        for (n, entry) in entries.enumerate() {
            let bad = |what: &str| CryptError::Keys(format!("entry {}: {what}", n + 1));
            let (id, encoded) = entry.split_once(':').ok_or_else(|| bad("expected id:base64-key"))?;
            let valid_id = !id.is_empty()
                && id.len() <= 32
                && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid_id {
                return Err(bad("the id must be 1–32 letters, digits, - or _"));
            }
            let bytes = BASE64.decode(encoded.trim()).map_err(|_| bad("the key is not base64"))?;
            if bytes.len() != 32 {
                return Err(bad(&format!("the key is {} bytes; AES-256 needs 32", bytes.len())));
            }
            if keys.iter().any(|k| k.id == id) {
                return Err(bad(&format!("the id {id} is given twice")));
            }
            keys.push(RingKey::new(id, &bytes).ok_or_else(|| bad("the key is not 32 bytes"))?);
        }
        if keys.is_empty() {
            return Err(CryptError::Keys("no key given".to_owned()));
        }
        Ok(Self { keys: keys.into() })
    }

    /// A new random key as `id:base64`, for a key file; the id is checked as [`parse`](Self::parse)
    /// checks it.
    pub fn generate(id: &str) -> Result<String, CryptError> {
        let key = Aes256Gcm::generate_key(OsRng);
        let entry = format!("{id}:{}", BASE64.encode(key));
        Self::parse(&entry)?;
        Ok(entry)
    }

    /// The key ids, the writing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|k| k.id.as_str()).collect()
    }

    fn seal(&self, aad: &[u8], plaintext: &[u8]) -> String {
        let RingKey { id, cipher, .. } = &self.keys[0];
        let nonce = Aes256Gcm::generate_nonce(OsRng);
        // Encrypting into a Vec cannot fail for these sizes; an empty ciphertext would not open.
        let sealed = cipher.encrypt(&nonce, Payload { msg: plaintext, aad }).unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_BYTES + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{id}${}", BASE64.encode(bytes))
    }

    /// `None` when `text` is not an envelope (written before encryption was on).
    fn open(&self, aad: &[u8], text: &str) -> Option<Result<Vec<u8>, Unsealed>> {
        let rest = text.strip_prefix(PREFIX)?;
        Some((|| {
            let (id, encoded) = rest.split_once('$').ok_or(Unsealed::Malformed)?;
            let cipher =
                &self.keys.iter().find(|k| k.id == id).ok_or_else(|| Unsealed::UnknownKey(id.to_owned()))?.cipher;
            let bytes = BASE64.decode(encoded).map_err(|_| Unsealed::Malformed)?;
            if bytes.len() < NONCE_BYTES + 16 {
                return Err(Unsealed::Malformed);
            }
            let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
            let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| Unsealed::Malformed)?;
            cipher
                .decrypt(&Nonce::from(nonce), Payload { msg: sealed, aad })
                .map_err(|_| Unsealed::Tampered(id.to_owned()))
        })())
    }
}

/// Refuses a store that was encrypted, for a program that has no keys for it: a clear error
/// instead of ciphertext shown as values. The `agentstate` binary calls it when it opens a
/// database without keys.
pub async fn refuse_if_encrypted(store: &dyn SessionStore) -> Result<(), CryptError> {
    // A store without metadata cannot have been encrypted.
    let Some(admin) = store.capabilities().admin else { return Ok(()) };
    match admin.metadata(ENCRYPTION_METADATA).await? {
        Some(marker) => Err(CryptError::Store(format!(
            "this database is encrypted (agentstate encryption at rest, key ids: {}); give its keys \
             (--encryption-keys-file or AGENTSTATE_ENCRYPTION_KEYS)",
            marker_ids(&marker).join(", ")
        ))),
        None => Ok(()),
    }
}

fn marker_ids(marker: &str) -> Vec<String> {
    parse_marker(marker).unwrap_or_default().into_iter().map(|(id, _)| id).collect()
}

/// The record `aes-256-gcm:<id>=<check>,…`: each key id with its check value (the base64 of a
/// nonce and the tag of an empty plaintext).
fn parse_marker(text: &str) -> Option<Vec<(String, String)>> {
    let entries = text.strip_prefix(MARKER_CIPHER)?.strip_prefix(':')?;
    entries
        .split(',')
        .filter(|e| !e.is_empty())
        .map(|e| e.split_once('=').map(|(id, check)| (id.to_owned(), check.to_owned())))
        .collect()
}

impl KeyRing {
    /// A ring of the one key `id` (which must be in this ring).
    fn subset(&self, id: &str) -> KeyRing {
        let keys: Vec<RingKey> = self.keys.iter().filter(|k| k.id == id).cloned().collect();
        KeyRing { keys: keys.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const K1: &str = "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    #[test]
    fn keys_are_checked_and_never_shown() {
        let ring = KeyRing::parse(&format!("{K1}\n# old\n{}", KeyRing::generate("k0").unwrap())).unwrap();
        assert_eq!(ring.ids(), ["k1", "k0"]);
        let shown = format!("{ring:?}");
        assert!(!shown.contains("MDEy"), "{shown}");
        for (bad, says) in [
            ("", "no key"),
            ("k1", "id:base64"),
            ("k 1:AAAA", "the id"),
            ("k1:not base64!", "base64"),
            ("k1:AAAA", "32"),
            (&format!("{K1},{K1}"), "twice"),
        ] {
            let error = KeyRing::parse(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad:?}: {error}");
            assert!(!error.contains("MDEy"), "{error}");
        }
    }

    #[test]
    fn envelopes_open_only_where_they_were_sealed() {
        let ring = KeyRing::parse(K1).unwrap();
        let sealed = ring.seal(b"here", b"secret");
        assert!(sealed.starts_with("$as1$k1$"), "{sealed}");
        assert_eq!(ring.open(b"here", &sealed).unwrap().unwrap(), b"secret");
        assert!(matches!(ring.open(b"there", &sealed), Some(Err(Unsealed::Tampered(_)))));
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(matches!(ring.open(b"here", std::str::from_utf8(&flipped).unwrap()), Some(Err(_))));
        let other = KeyRing::parse(&KeyRing::generate("k2").unwrap()).unwrap();
        assert!(matches!(other.open(b"here", &sealed), Some(Err(Unsealed::UnknownKey(id))) if id == "k1"));
        assert!(ring.open(b"here", "plain text").is_none());
        assert_ne!(ring.seal(b"here", b"secret"), sealed, "a fresh nonce every time");
    }
}
