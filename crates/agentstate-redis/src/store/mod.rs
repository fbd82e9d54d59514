//! The Redis store: each operation one script or one `MULTI` block. The core is here; the
//! capabilities (history, lifecycle, administration) are in `capabilities`, lists in `list`, the
//! compacted view in `view`.

use std::collections::BTreeMap;
use std::sync::Arc;

mod artifact;
mod capabilities;
mod lease;
mod list;
mod memory;
mod shared;
mod view;

use agentstate::store::{
    Capabilities, CommitOutcome, EventCommit, EventQuery, EventSelect, ListQuery, LoadedSession, NewSession,
    SessionRead, SessionStore, StateOwner, merge_scopes,
};
use agentstate::{Error, Event, Map, Result, Session, SessionAttributes, SessionKey, Value};
use async_trait::async_trait;
use redis::{RedisError, Value as Reply};

use crate::RedisStore;
use crate::keys::{AppKeys, SessionKeys, apps, expiring_apps};
use crate::scripts;
use view::facts_value;

/// How many times a list is read again when a session moved between its two steps.
const LIST_ATTEMPTS: usize = 5;

/// A Redis failure as a backend error; retryable when the client says a retry may work (a
/// dropped connection, a timeout, Redis loading its data or failing over).
fn backend(what: &str, error: RedisError) -> Error {
    let retryable = !matches!(error.retry_method(), redis::RetryMethod::NoRetry);
    Error::backend(format!("Redis {what}: {error}"), retryable, error)
}

/// Data this service cannot read: not retryable.
fn corrupt(message: String) -> Error {
    Error::Backend { message, retryable: false, source: None }
}

fn bytes(reply: &Reply) -> Option<&[u8]> {
    match reply {
        Reply::BulkString(b) => Some(b),
        Reply::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(reply: &Reply) -> Option<&str> {
    bytes(reply).and_then(|b| std::str::from_utf8(b).ok())
}

fn array(reply: Reply) -> Vec<Reply> {
    match reply {
        Reply::Array(items) | Reply::Set(items) => items,
        Reply::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => Vec::new(),
    }
}

fn integer(reply: &Reply) -> Option<i64> {
    match reply {
        Reply::Int(i) => Some(*i),
        other => text(other).and_then(|t| t.parse().ok()),
    }
}

/// A hash of JSON values (`HGETALL`) → a state map.
fn state(reply: Reply, what: &dyn Fn() -> String) -> Result<Map<String, Value>> {
    let items = array(reply);
    let mut map = Map::with_capacity(items.len() / 2);
    for pair in items.chunks_exact(2) {
        let key = text(&pair[0]).ok_or_else(|| corrupt(format!("{}: a state key is not UTF-8", what())))?;
        let value = bytes(&pair[1]).unwrap_or_default();
        let value = serde_json::from_slice(value)
            .map_err(|e| corrupt(format!("{}: state key {key:?} is not JSON: {e}", what())))?;
        map.insert(key.to_owned(), value);
    }
    Ok(map)
}

/// A stored event's JSON → the event.
fn decode_event(reply: &Reply, key: &SessionKey) -> Result<Event> {
    let data = bytes(reply).ok_or_else(|| corrupt(format!("session {key}: an indexed event has no data")))?;
    serde_json::from_slice(data).map_err(|e| corrupt(format!("session {key}: an event is unreadable: {e}")))
}

fn event_json(event: &Event) -> Result<String> {
    serde_json::to_string(event).map_err(|e| Error::invalid("event", format!("cannot be encoded as JSON: {e}")))
}

/// Whether a session whose metadata hash answered `HMGET update expire` with these exists and is
/// live at `now_micros`.
fn meta_live((update, expire): &(Option<i64>, Option<i64>), now_micros: i64) -> bool {
    update.is_some() && agentstate::live_at(*expire, now_micros)
}

/// A session's metadata hash.
struct Meta {
    create: i64,
    update: i64,
    attributes: Option<Arc<SessionAttributes>>,
}

impl Meta {
    /// Whether the session has not expired at `now_micros`.
    fn live_at(&self, now_micros: i64) -> bool {
        !self.attributes.as_ref().is_some_and(|a| a.expired_at(now_micros))
    }
}

fn meta(reply: Reply, key: &SessionKey) -> Result<Meta> {
    let (mut create, mut update) = (None, None);
    let mut attributes = SessionAttributes::default();
    let bad = |field: &str| corrupt(format!("session {key}: metadata field {field} is unreadable"));
    for pair in array(reply).chunks_exact(2) {
        match text(&pair[0]) {
            Some("create") => create = Some(integer(&pair[1]).ok_or_else(|| bad("create"))?),
            Some("update") => update = Some(integer(&pair[1]).ok_or_else(|| bad("update"))?),
            Some("name") => attributes.display_name = Some(text(&pair[1]).ok_or_else(|| bad("name"))?.to_owned()),
            Some("labels") => {
                let labels = bytes(&pair[1]).ok_or_else(|| bad("labels"))?;
                attributes.labels =
                    serde_json::from_slice::<BTreeMap<String, String>>(labels).map_err(|_| bad("labels"))?;
            }
            Some("expire") => attributes.expire_time_micros = Some(integer(&pair[1]).ok_or_else(|| bad("expire"))?),
            _ => {}
        }
    }
    let update = update.ok_or_else(|| bad("update"))?;
    Ok(Meta {
        create: create.unwrap_or(update),
        update,
        attributes: (!attributes.is_empty()).then(|| Arc::new(attributes)),
    })
}

fn handle(
    key: SessionKey,
    meta: Meta,
    state: &Map<String, Value>,
    app: &Map<String, Value>,
    user: &Map<String, Value>,
    events: Vec<Event>,
) -> Session {
    Session::from_storage(key, merge_scopes(state, app, user), events, meta.update)
        .created_at(meta.create)
        .with_attributes(meta.attributes)
}

/// Adds `map`'s keys and JSON values as alternating arguments.
fn push_pairs(invocation: &mut redis::ScriptInvocation<'_>, map: &Map<String, Value>) {
    for (k, v) in map {
        invocation.arg(k).arg(v.to_string());
    }
}

impl RedisStore {
    fn connection(&self) -> crate::Connection {
        self.connection.clone()
    }

    /// With `wait_replicas`, waits until that many replicas have every write so far on this
    /// connection (`WAIT`). Fewer in time is a retryable error: the write is on the master and a
    /// failover now could lose it; a retry of the same event is answered with the stored one.
    async fn replicated(&self, what: &str) -> Result<()> {
        let Some((wanted, timeout)) = self.replicas else {
            return Ok(());
        };
        let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let have: u32 = redis::cmd("WAIT")
            .arg(wanted)
            .arg(millis)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend(what, e))?;
        if have < wanted {
            return Err(Error::Backend {
                message: format!(
                    "Redis {what}: written on the master but {have} of {wanted} replicas had it within {millis} ms; \
                     retry (the same event is not applied twice)"
                ),
                retryable: true,
                source: None,
            });
        }
        Ok(())
    }

    fn keys(&self, key: &SessionKey) -> SessionKeys {
        SessionKeys::of(&self.prefix, key)
    }

    /// `get.lua` with its keys.
    fn get_script(keys: &SessionKeys) -> redis::ScriptInvocation<'static> {
        let mut invocation = scripts::GET.prepare_invoke();
        invocation
            .key(&keys.meta)
            .key(&keys.state)
            .key(&keys.app_state)
            .key(&keys.user_state)
            .key(&keys.times)
            .key(&keys.data)
            .key(&keys.facts);
        invocation
    }

    /// Adds `app` to a registry of apps. The registries live outside every app's slot, so they
    /// are written apart from the app's scripts, one command each (a cluster refuses a pipeline
    /// across slots).
    async fn register(&self, registry: String, app: &str, what: &str) -> Result<()> {
        let registered: redis::RedisResult<()> =
            redis::cmd("SADD").arg(registry).arg(app).query_async(&mut self.connection()).await;
        registered.map_err(|e| backend(what, e))
    }

    /// The hash holding `owner`'s state.
    fn owner_hash(&self, owner: &StateOwner) -> String {
        match owner {
            StateOwner::App(app) => AppKeys::new(&self.prefix, app).app_state(),
            StateOwner::User { app, user } => AppKeys::new(&self.prefix, app).user_state(user),
            StateOwner::Session(key) => self.keys(key).state,
        }
    }
}

/// A sorted-set score that is a time in µs (Redis prints doubles that are integers exactly).
fn score(reply: &Reply) -> Option<i64> {
    match reply {
        Reply::Double(d) => Some(*d as i64),
        other => {
            let t = text(other)?;
            match t {
                "-inf" => Some(i64::MIN),
                "inf" | "+inf" => Some(i64::MAX),
                t => t.parse::<i64>().ok().or_else(|| t.parse::<f64>().ok().map(|d| d as i64)),
            }
        }
    }
}

/// A time the scripts compare expire times with: `''` (not judged) for `i64::MIN`.
fn expiry_arg(now_micros: i64) -> String {
    if now_micros == i64::MIN { String::new() } else { now_micros.to_string() }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let NewSession { key, state: scoped, create_time_micros, attributes, history_start } = new;
        let keys = self.keys(&key);
        let start = match &history_start {
            Some(start) => serde_json::to_string(start)
                .map_err(|e| Error::invalid("state", format!("cannot be encoded as JSON: {e}")))?,
            None => String::new(),
        };
        let labels = match attributes.labels.is_empty() {
            true => String::new(),
            false => serde_json::to_string(&attributes.labels).unwrap_or_default(),
        };
        // Each script's `KEYS`, in the order the script reads them: Redis passes keys by position,
        // so every script's list is written out where it is invoked (several start alike).
        let mut invocation = scripts::CREATE.prepare_invoke();
        invocation
            .key(&keys.meta)
            .key(&keys.state)
            .key(&keys.app_state)
            .key(&keys.user_state)
            .key(&keys.sessions)
            .key(&keys.user_sessions)
            .key(&keys.users_with)
            .key(&keys.snapshots)
            .key(&keys.snapshot_states)
            .key(&keys.expiring)
            .key(AppKeys::new(&self.prefix, key.app_name()).users())
            .key(&keys.times)
            .key(&keys.data)
            .key(&keys.invocations)
            .key(&keys.created)
            .key(&keys.user_created)
            .key(&keys.facts)
            .arg(create_time_micros)
            .arg(&keys.member)
            .arg(key.session_id())
            .arg(key.user_id())
            .arg(start)
            .arg(attributes.display_name.as_deref().unwrap_or_default())
            .arg(labels)
            .arg(attributes.expire_time_micros.map(|t| t.to_string()).unwrap_or_default())
            .arg(scoped.session.len())
            .arg(scoped.app.len())
            .arg(scoped.user.len());
        push_pairs(&mut invocation, &scoped.session);
        push_pairs(&mut invocation, &scoped.app);
        push_pairs(&mut invocation, &scoped.user);
        // The app is registered beside the script, in the same round trip: the registries only
        // grow (nothing removes an app), so registering an app whose create then fails (or finds
        // the session there) registers nothing new, and a registry never misses an app with a
        // session.
        let mut connection = self.connection();
        let expiring = attributes.expire_time_micros.is_some();
        let (reply, registered, registered_expiring) = tokio::join!(
            invocation.invoke_async::<Reply>(&mut connection),
            self.register(apps(&self.prefix), key.app_name(), "create"),
            async {
                match expiring {
                    true => self.register(expiring_apps(&self.prefix), key.app_name(), "create").await,
                    false => Ok(()),
                }
            },
        );
        let reply = reply.map_err(|e| backend("create", e))?;
        if text(&reply) == Some("exists") {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        registered?;
        registered_expiring?;
        self.replicated("create").await?;
        let mut shared = array(reply).into_iter();
        let what = || format!("session {key}");
        let app = state(shared.next().unwrap_or(Reply::Nil), &what)?;
        let user = state(shared.next().unwrap_or(Reply::Nil), &what)?;
        let meta = Meta {
            create: create_time_micros,
            update: create_time_micros,
            attributes: (!attributes.is_empty()).then(|| Arc::new(attributes)),
        };
        Ok(handle(key, meta, &scoped.session, &app, &user, Vec::new()))
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        if let Some(overlap) = read.compacted() {
            for _ in 0..LIST_ATTEMPTS {
                if let Some(answer) = self.compacted_view(key, read, overlap).await? {
                    return Ok(answer);
                }
            }
            // Appends kept moving the session between the two steps: read it whole, for the
            // service to narrow.
        }
        let window = read.window;
        let reply: Reply = Self::get_script(&self.keys(key))
            .arg(window.recent.map(|n| n.to_string()).unwrap_or_default())
            .arg(window.since_micros.map(|t| t.to_string()).unwrap_or_default())
            .arg(expiry_arg(read.now_micros))
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("get", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        let mut parts = array(reply).into_iter();
        let mut next = || parts.next().unwrap_or(Reply::Nil);
        let what = || format!("session {key}");
        let meta = meta(next(), key)?;
        let (session, app, user) = (state(next(), &what)?, state(next(), &what)?, state(next(), &what)?);
        let events = array(next()).iter().map(|e| decode_event(e, key)).collect::<Result<Vec<_>>>()?;
        Ok(Some(LoadedSession::decoded(handle(key.clone(), meta, &session, &app, &user, events))))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        // Sessions expired (by Redis, or at the query's time) and not yet unlisted by a sweep are
        // skipped; the page is filled from further down the list.
        let mut page_query = query.clone();
        let mut sessions = Vec::new();
        loop {
            let (found, listed, last) = self.list_page(&page_query).await?;
            sessions.extend(found);
            match (query.limit, last) {
                (Some(limit), Some(last)) if page_query.limit == Some(listed) && sessions.len() < limit => {
                    page_query.after = Some(last);
                    page_query.limit = Some(limit - sessions.len());
                }
                _ => return Ok(sessions),
            }
        }
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        // The removal erasure does, session by session: its keys and every list it is in.
        let (_existed, _events): (i64, i64) = self
            .keys(key)
            .removal(&scripts::ERASE, key.user_id(), key.session_id())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("delete", e))?;
        self.replicated("delete").await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let EventCommit { key, event, delta, deleted, .. } = &commit;
        let keys = self.keys(key);
        let json = event_json(event)?;
        let mut invocation = scripts::COMMIT.prepare_invoke();
        invocation
            .key(&keys.meta)
            .key(&keys.state)
            .key(&keys.app_state)
            .key(&keys.user_state)
            .key(&keys.times)
            .key(&keys.data)
            .key(&keys.invocations)
            .key(&keys.sessions)
            .key(&keys.user_sessions)
            .key(&keys.snapshots)
            .key(&keys.snapshot_states)
            .key(&keys.expiring)
            .key(&keys.facts)
            .arg(&event.id)
            .arg(json)
            .arg(commit.timestamp_micros)
            .arg(commit.expected_last_update_micros)
            .arg(&event.invocation_id)
            .arg(&keys.member)
            .arg(key.session_id());
        let scopes = [(&delta.session, &deleted.session), (&delta.app, &deleted.app), (&delta.user, &deleted.user)];
        for (set, removed) in scopes {
            invocation.arg(set.len()).arg(removed.len());
        }
        invocation
            .arg(expiry_arg(commit.now_micros))
            .arg(commit.extend_expiry_to.map(|t| t.to_string()).unwrap_or_default())
            .arg(facts_value(event));
        for (set, removed) in scopes {
            push_pairs(&mut invocation, set);
            for k in removed {
                invocation.arg(k);
            }
        }
        let reply: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("append", e))?;
        let reply = array(reply);
        let tag = reply.first().and_then(text);
        if matches!(tag, Some("ok" | "duplicate")) {
            // A retry of an append that was not confirmed waits for the replicas again.
            self.replicated("append").await?;
        }
        match tag {
            Some("ok") => Ok(CommitOutcome::Committed),
            Some("missing") => Err(Error::NotFound { session_id: key.session_id().to_owned() }),
            Some("stale") => Err(Error::stale()),
            Some("duplicate") => {
                CommitOutcome::of_stored(decode_event(reply.get(1).unwrap_or(&Reply::Nil), key)?, event)
            }
            _ => Err(corrupt(format!("session {key}: the append script answered {reply:?}"))),
        }
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let EventQuery { key, select, now_micros } = query;
        let keys = self.keys(key);
        let mut invocation = scripts::EVENTS.prepare_invoke();
        invocation.key(&keys.meta).key(&keys.times).key(&keys.data).key(&keys.invocations).arg(expiry_arg(*now_micros));
        match select {
            EventSelect::Page { after, since_micros, limit } => {
                // A session's event times strictly increase, so a time alone is a position.
                let min = match (after, since_micros) {
                    (Some(cursor), Some(since)) if *since > cursor.timestamp_micros => since.to_string(),
                    (Some(cursor), _) => format!("({}", cursor.timestamp_micros),
                    (None, Some(since)) => since.to_string(),
                    (None, None) => "-inf".to_owned(),
                };
                invocation.arg("page").arg(min).arg(*limit)
            }
            EventSelect::Latest { before, since_micros, limit } => {
                let max = before.as_ref().map_or("+inf".to_owned(), |c| format!("({}", c.timestamp_micros));
                let min = since_micros.map_or("-inf".to_owned(), |since| since.to_string());
                invocation.arg("latest").arg(max).arg(*limit).arg(min)
            }
            EventSelect::Id(id) => invocation.arg("id").arg(id),
            EventSelect::FirstOfInvocation(invocation_id) => invocation.arg("invocation").arg(invocation_id),
        };
        let reply: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("events", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        array(reply).iter().map(|e| decode_event(e, key)).collect::<Result<Vec<_>>>().map(Some)
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        let keys = self.keys(key);
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("HMGET").arg(&keys.meta).arg("update").arg("expire").cmd("ZCARD").arg(&keys.times);
        let ((update, expire), count): ((Option<i64>, Option<i64>), i64) =
            pipe.query_async(&mut self.connection()).await.map_err(|e| backend("count", e))?;
        Ok(meta_live(&(update, expire), now_micros).then(|| usize::try_from(count).unwrap_or_default()))
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        let app_keys = AppKeys::new(&self.prefix, app);
        let mut connection = self.connection();
        let mut users: Vec<String> = redis::cmd("SMEMBERS")
            .arg(app_keys.users_with(session_id))
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("lookup", e))?;
        users.sort_unstable();
        if users.is_empty() {
            return Ok(users);
        }
        // The set may name sessions Redis expired by itself, or that expired at `now_micros`.
        let mut pipe = redis::pipe();
        for user in &users {
            pipe.cmd("HMGET").arg(app_keys.session(user, session_id).meta).arg("update").arg("expire");
        }
        let metas: Vec<(Option<i64>, Option<i64>)> =
            pipe.query_async(&mut connection).await.map_err(|e| backend("lookup", e))?;
        Ok(users.into_iter().zip(metas).filter(|(_, meta)| meta_live(meta, now_micros)).map(|(user, _)| user).collect())
    }

    fn system(&self) -> &'static str {
        "redis"
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::every(self)
    }
}

pub(super) fn array_len(reply: &Reply) -> usize {
    match reply {
        Reply::Array(items) | Reply::Set(items) => items.len(),
        Reply::Map(pairs) => pairs.len(),
        _ => 0,
    }
}
