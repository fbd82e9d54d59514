//! Reading the Redis layout of ADK for Python's `RedisSessionService` (google-adk 2.13), to copy
//! its sessions into any agentstate store.
//!
//! That layout keeps each session, with its whole history, as one JSON string at
//! `{key_prefix}{app}:{user}:{session}` (`key_prefix` defaults to `adk:session:`), and the shared
//! scopes as JSON strings at `{key_prefix}app_state:{app}` and
//! `{key_prefix}user_state:{app}:{user}`. Keys are found with `SCAN` (the layout has no index);
//! a session is recognised by its JSON (`id`, `app_name`, `user_id`, `events`) and by its key
//! being exactly the one the reference would give it, since ids may contain `:`. A session's
//! remaining time to live becomes its expire time.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use agentstate::archive::{self, ArchiveError, ImportOptions, Progress, Record};
use agentstate::store::SessionStore;
use agentstate::{Event, Map, Value};
use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, RedisError};

use crate::url::RedisUrl;

/// The reference's default key prefix.
pub const ADK_DEFAULT_PREFIX: &str = "adk:session:";

/// Keys read per `SCAN` step (and sessions imported per batch).
const BATCH: usize = 500;

/// Why reading the reference's Redis layout failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdkRedisError {
    /// The URL is malformed.
    #[error(transparent)]
    Url(#[from] crate::RedisUrlError),
    /// Redis failed or could not be reached.
    #[error("reading {url}: {source}")]
    Redis {
        /// The URL, without its password.
        url: String,
        /// What Redis or the network said.
        #[source]
        source: RedisError,
    },
    /// A session's JSON cannot be read.
    #[error("{key}: {problem}")]
    Corrupt {
        /// The Redis key.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// Storing a session failed.
    #[error(transparent)]
    Import(#[from] ArchiveError),
}

/// A connection to the reference's Redis.
struct Source {
    connection: MultiplexedConnection,
    prefix: String,
    shown: String,
}

impl Source {
    async fn open(url: &str, key_prefix: &str) -> Result<Self, AdkRedisError> {
        crate::crypto_provider();
        // Parsed as ours for its checks and its password-free display; the prefix is the
        // reference's, given apart.
        let parsed = RedisUrl::parse(url)?;
        let shown = parsed.to_string().split('?').next().unwrap_or_default().to_owned();
        let redis_error = |source| AdkRedisError::Redis { url: shown.clone(), source };
        let client = redis::Client::open(parsed.connection_url()).map_err(redis_error)?;
        let connection = client.get_multiplexed_async_connection().await.map_err(redis_error)?;
        Ok(Self { connection, prefix: key_prefix.to_owned(), shown })
    }

    fn error(&self, source: RedisError) -> AdkRedisError {
        AdkRedisError::Redis { url: self.shown.clone(), source }
    }

    /// Reads the sessions among `keys` (other keys are skipped) as archive records.
    async fn records(&mut self, keys: &[String]) -> Result<Vec<Record>, AdkRedisError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.cmd("MGET").arg(keys);
        for key in keys {
            pipe.cmd("PTTL").arg(key);
        }
        let mut replies: Vec<redis::Value> = pipe.query_async(&mut self.connection).await.map_err(|e| self.error(e))?;
        let ttls: Vec<i64> = replies.drain(1..).map(|v| redis::from_redis_value(v).unwrap_or(-1)).collect();
        let values: Vec<Option<String>> = replies
            .pop()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(|e| self.error(e.into()))?
            .unwrap_or_default();
        let now = agentstate::store::now_secs();
        let mut sessions = Vec::new();
        for ((key, value), ttl) in keys.iter().zip(values).zip(ttls) {
            let Some(text) = value else { continue };
            if let Some(mut record) = self.session(key, &text)? {
                record.expire_time = (ttl > 0).then(|| now + ttl as f64 / 1000.0);
                sessions.push(record);
            }
        }
        // The shared scopes, once per app and user of the batch.
        let mut shared: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
        for record in &sessions {
            for key in [self.app_key(&record.app_name), self.user_key(&record.app_name, &record.user_id)] {
                if let Entry::Vacant(slot) = shared.entry(key) {
                    let text: Option<String> = self.connection.get(slot.key()).await.map_err(|e| self.error(e))?;
                    let state = match text {
                        Some(text) => object(slot.key(), &text)?,
                        None => Map::new(),
                    };
                    slot.insert(state);
                }
            }
        }
        for record in &mut sessions {
            let app = &shared[&self.app_key(&record.app_name)];
            let user = &shared[&self.user_key(&record.app_name, &record.user_id)];
            record.state.extend(app.iter().map(|(k, v)| (format!("app:{k}"), v.clone())));
            record.state.extend(user.iter().map(|(k, v)| (format!("user:{k}"), v.clone())));
        }
        Ok(sessions)
    }

    fn app_key(&self, app: &str) -> String {
        format!("{}app_state:{app}", self.prefix)
    }

    fn user_key(&self, app: &str, user: &str) -> String {
        format!("{}user_state:{app}:{user}", self.prefix)
    }

    /// The session stored at `key`, or `None` if the value is not one (a state document).
    fn session(&self, key: &str, text: &str) -> Result<Option<Record>, AdkRedisError> {
        let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(text) else { return Ok(None) };
        let field = |doc: &Map<String, Value>, name: &str| doc.get(name).and_then(Value::as_str).map(str::to_owned);
        let (Some(id), Some(app), Some(user)) = (field(&doc, "id"), field(&doc, "app_name"), field(&doc, "user_id"))
        else {
            return Ok(None);
        };
        if key != format!("{}{app}:{user}:{id}", self.prefix) || !doc.contains_key("events") {
            return Ok(None);
        }
        let corrupt = |problem: String| AdkRedisError::Corrupt { key: key.to_owned(), problem };
        let events: Vec<Event> = serde_json::from_value(doc.remove("events").unwrap_or_default())
            .map_err(|e| corrupt(format!("its events are unreadable: {e}")))?;
        let state = match doc.remove("state") {
            Some(Value::Object(state)) => state,
            None | Some(Value::Null) => Map::new(),
            Some(other) => return Err(corrupt(format!("its state is {other}, not an object"))),
        };
        let last_update_time = doc.get("last_update_time").and_then(Value::as_f64).unwrap_or_default();
        Ok(Some(Record {
            app_name: app,
            user_id: user,
            id,
            last_update_time,
            state,
            events,
            create_time: None,
            display_name: None,
            labels: BTreeMap::new(),
            expire_time: None,
            artifacts: Vec::new(),
        }))
    }

    /// The sessions of the next `SCAN` step; `None` once the walk is over. `cursor` starts at
    /// `Some(0)`.
    async fn next_batch(&mut self, cursor: &mut Option<u64>) -> Result<Option<Vec<Record>>, AdkRedisError> {
        let Some(at) = *cursor else { return Ok(None) };
        let pattern = format!("{}*", escape_glob(&self.prefix));
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(at)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(BATCH)
            .query_async(&mut self.connection)
            .await
            .map_err(|e| self.error(e))?;
        *cursor = (next != 0).then_some(next);
        self.records(&keys).await.map(Some)
    }
}

fn object(key: &str, text: &str) -> Result<Map<String, Value>, AdkRedisError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(AdkRedisError::Corrupt { key: key.to_owned(), problem: "not a JSON object".to_owned() }),
    }
}

/// `value` as a `SCAN MATCH` pattern that matches only itself.
fn escape_glob(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Every session the reference stored at `url` under `key_prefix`, with its merged state
/// (session keys, `app:`, `user:`), in no particular order.
pub async fn read(url: &str, key_prefix: &str) -> Result<Vec<Record>, AdkRedisError> {
    let mut source = Source::open(url, key_prefix).await?;
    let mut cursor = Some(0);
    let mut all = Vec::new();
    while let Some(records) = source.next_batch(&mut cursor).await? {
        all.extend(records);
    }
    Ok(all)
}

/// Copies every session the reference stored at `url` under `key_prefix` into `store`, a batch
/// at a time, calling `progress` after each session. Events are stored as history (their deltas
/// are not applied again); the state is the session's, its app's and its user's as read.
pub async fn import(
    store: &dyn SessionStore,
    url: &str,
    key_prefix: &str,
    options: ImportOptions,
    mut progress: impl FnMut(&Progress),
) -> Result<Progress, AdkRedisError> {
    let mut source = Source::open(url, key_prefix).await?;
    let mut cursor = Some(0);
    let mut done = Progress::default();
    while let Some(records) = source.next_batch(&mut cursor).await? {
        let before = done;
        let batch = archive::import(store, records.into_iter().map(Ok), options, |p| {
            progress(&Progress {
                sessions: before.sessions + p.sessions,
                events: before.events + p.events,
                skipped: before.skipped + p.skipped,
            });
        })
        .await?;
        done.sessions += batch.sessions;
        done.events += batch.events;
        done.skipped += batch.skipped;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_only_themselves() {
        assert_eq!(escape_glob("adk:[x]*?\\"), "adk:\\[x\\]\\*\\?\\\\");
    }
}
