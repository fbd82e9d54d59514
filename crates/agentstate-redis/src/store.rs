//! [`SessionStore`] on Redis: each operation one script or one `MULTI` block.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentstate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListCursor, ListQuery,
    NewSession, SessionStore, StateOwner, ValueSwap, merge_scopes,
};
use agentstate::{ConflictKind, Error, Event, Map, Result, Session, SessionAttributes, SessionKey, UserData, Value};
use async_trait::async_trait;
use redis::{RedisError, Value as Reply};

use crate::RedisSessionService;
use crate::keys::{AppKeys, SessionKeys, apps, expiring_apps, list_member};
use crate::scripts;

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

/// A session's metadata hash.
struct Meta {
    create: i64,
    update: i64,
    attributes: Option<Arc<SessionAttributes>>,
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

impl RedisSessionService {
    fn connection(&self) -> crate::Connection {
        self.connection.clone()
    }

    fn keys(&self, key: &SessionKey) -> SessionKeys {
        SessionKeys::of(&self.prefix, key)
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

    /// One page of a list: the members after the cursor, in order, with their scores.
    async fn list_members(
        &self,
        zset: &str,
        query: &ListQuery,
        cursor_member: Option<&str>,
    ) -> Result<Vec<(String, i64)>> {
        let limit = query.limit.unwrap_or(usize::MAX);
        let mut connection = self.connection();
        let read = |reply: Reply| -> Vec<(String, i64)> {
            array(reply).chunks_exact(2).filter_map(|p| Some((text(&p[0])?.to_owned(), score(&p[1])?))).collect()
        };
        let (ties, after) = match (&query.after, cursor_member) {
            (Some(cursor), Some(member)) => {
                let at = cursor.last_update_micros.to_string();
                let mut pipe = redis::pipe();
                pipe.cmd("ZRANGEBYSCORE").arg(zset).arg(&at).arg(&at).arg("WITHSCORES");
                let rest = pipe.cmd("ZRANGEBYSCORE").arg(zset).arg(format!("({at}")).arg("+inf").arg("WITHSCORES");
                if let Some(limit) = query.limit {
                    rest.arg("LIMIT").arg(0).arg(limit);
                }
                let (ties, rest): (Reply, Reply) =
                    pipe.query_async(&mut connection).await.map_err(|e| backend("list", e))?;
                let ties: Vec<_> = read(ties).into_iter().filter(|(m, _)| m.as_bytes() > member.as_bytes()).collect();
                (ties, read(rest))
            }
            _ => {
                let stop = query.limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX).saturating_sub(1));
                if stop < 0 && query.limit.is_some() {
                    return Ok(Vec::new());
                }
                let reply: Reply = redis::cmd("ZRANGE")
                    .arg(zset)
                    .arg(0)
                    .arg(stop)
                    .arg("WITHSCORES")
                    .query_async(&mut connection)
                    .await
                    .map_err(|e| backend("list", e))?;
                (Vec::new(), read(reply))
            }
        };
        Ok(ties.into_iter().chain(after).take(limit).collect())
    }

    /// One page of a list: the sessions still there, how many list entries were read, and the
    /// position of the last one.
    async fn list_page(&self, query: &ListQuery) -> Result<(Vec<Session>, usize, Option<ListCursor>)> {
        let app = AppKeys::new(&self.prefix, &query.app_name);
        let (zset, cursor_member) = match &query.user_id {
            Some(user) => (app.user_sessions(user), query.after.as_ref().map(|c| c.session_id.clone())),
            None => (app.sessions(), query.after.as_ref().map(|c| list_member(&c.user_id, &c.session_id))),
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let members = self.list_members(&zset, query, cursor_member.as_deref()).await?;
            let sessions: Vec<(String, String, i64)> = members
                .into_iter()
                .filter_map(|(member, score)| match &query.user_id {
                    Some(user) => Some((user.clone(), member, score)),
                    None => member.split_once('\0').map(|(u, s)| (u.to_owned(), s.to_owned(), score)),
                })
                .collect();
            if sessions.is_empty() {
                return Ok((Vec::new(), 0, None));
            }
            let listed = sessions.len();
            let last = sessions.last().map(|(user, id, score)| ListCursor {
                last_update_micros: *score,
                user_id: user.clone(),
                session_id: id.clone(),
            });
            let mut users: Vec<&str> = sessions.iter().map(|(u, ..)| u.as_str()).collect();
            users.sort_unstable();
            users.dedup();
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("HGETALL").arg(app.app_state());
            for user in &users {
                pipe.cmd("HGETALL").arg(app.user_state(user));
            }
            for (user, id, _) in &sessions {
                let keys = app.session(user, id);
                pipe.cmd("HGETALL").arg(&keys.meta).cmd("HGETALL").arg(&keys.state);
            }
            let replies: Vec<Reply> = pipe.query_async(&mut self.connection()).await.map_err(|e| backend("list", e))?;
            let mut replies = replies.into_iter();
            let mut next = || replies.next().unwrap_or(Reply::Nil);
            let what = || format!("app {}", query.app_name);
            let app_state = state(next(), &what)?;
            let mut user_states = BTreeMap::new();
            for user in &users {
                user_states.insert(*user, state(next(), &what)?);
            }
            let mut out = Vec::with_capacity(sessions.len());
            let mut moved = false;
            for (user, id, score) in &sessions {
                let (meta_reply, state_reply) = (next(), next());
                if array_len(&meta_reply) == 0 {
                    continue; // deleted since the page was read: not listed
                }
                let key = SessionKey::from_storage(query.app_name.as_str(), user.as_str(), id.as_str());
                let meta = meta(meta_reply, &key)?;
                moved |= meta.update != *score;
                let session = state(state_reply, &|| format!("session {key}"))?;
                let user_state = user_states.get(user.as_str()).cloned().unwrap_or_default();
                out.push(handle(key, meta, &session, &app_state, &user_state, Vec::new()));
            }
            // A session updated between the two steps would be out of order (and could make the
            // next page skip sessions): read again.
            if !moved || attempt >= LIST_ATTEMPTS {
                if moved {
                    out.sort_by(|a, b| {
                        (a.last_update_micros(), a.user_id(), a.id()).cmp(&(
                            b.last_update_micros(),
                            b.user_id(),
                            b.id(),
                        ))
                    });
                }
                return Ok((out, listed, last));
            }
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

#[async_trait]
impl SessionStore for RedisSessionService {
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
        let reply: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("create", e))?;
        if text(&reply) == Some("exists") {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        self.register(apps(&self.prefix), key.app_name(), "create").await?;
        if attributes.expire_time_micros.is_some() {
            self.register(expiring_apps(&self.prefix), key.app_name(), "create").await?;
        }
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

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        let keys = self.keys(key);
        let reply: Reply = scripts::GET
            .key(&keys.meta)
            .key(&keys.state)
            .key(&keys.app_state)
            .key(&keys.user_state)
            .key(&keys.times)
            .key(&keys.data)
            .arg(window.recent.map(|n| n.to_string()).unwrap_or_default())
            .arg(window.after_micros.map(|t| t.to_string()).unwrap_or_default())
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
        Ok(Some(handle(key.clone(), meta, &session, &app, &user, events)))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        // Sessions Redis expired by itself (and the sweep has not unlisted yet) are skipped; the
        // page is filled from further down the list.
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
        let keys = self.keys(key);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(&keys.own()[..])
            .ignore()
            .cmd("ZREM")
            .arg(&keys.sessions)
            .arg(&keys.member)
            .ignore()
            .cmd("ZREM")
            .arg(&keys.user_sessions)
            .arg(key.session_id())
            .ignore()
            .cmd("SREM")
            .arg(&keys.users_with)
            .arg(key.user_id())
            .ignore()
            .cmd("ZREM")
            .arg(&keys.expiring)
            .arg(&keys.member)
            .ignore();
        let () = pipe.query_async(&mut self.connection()).await.map_err(|e| backend("delete", e))?;
        Ok(())
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta, deleted } = commit;
        let keys = self.keys(&key);
        let json = event_json(&event)?;
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
            .arg(&event.id)
            .arg(json)
            .arg(timestamp_micros)
            .arg(expected_last_update_micros)
            .arg(&event.invocation_id)
            .arg(&keys.member)
            .arg(key.session_id());
        for (set, removed) in
            [(&delta.session, &deleted.session), (&delta.app, &deleted.app), (&delta.user, &deleted.user)]
        {
            invocation.arg(set.len()).arg(removed.len());
        }
        for (set, removed) in
            [(&delta.session, &deleted.session), (&delta.app, &deleted.app), (&delta.user, &deleted.user)]
        {
            push_pairs(&mut invocation, set);
            for k in removed {
                invocation.arg(k);
            }
        }
        let reply: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("append", e))?;
        let reply = array(reply);
        match reply.first().and_then(text) {
            Some("ok") => Ok(CommitOutcome::Committed),
            Some("missing") => Err(Error::NotFound { session_id: key.session_id().to_owned() }),
            Some("stale") => Err(Error::stale()),
            Some("duplicate") => {
                let existing = decode_event(reply.get(1).unwrap_or(&Reply::Nil), &key)?;
                if existing.same_as_retry(&event) {
                    Ok(CommitOutcome::Duplicate(Box::new(existing)))
                } else {
                    Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } })
                }
            }
            _ => Err(corrupt(format!("session {key}: the append script answered {reply:?}"))),
        }
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let EventQuery { key, after, since_micros, limit } = query;
        let keys = self.keys(key);
        // A session's event times strictly increase, so a time alone is a position.
        let min = match (after, since_micros) {
            (Some(cursor), Some(since)) if *since > cursor.timestamp_micros => since.to_string(),
            (Some(cursor), _) => format!("({}", cursor.timestamp_micros),
            (None, Some(since)) => since.to_string(),
            (None, None) => "-inf".to_owned(),
        };
        let reply: Reply = scripts::EVENTS
            .key(&keys.meta)
            .key(&keys.times)
            .key(&keys.data)
            .arg(min)
            .arg(*limit)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("events", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        array(reply).iter().map(|e| decode_event(e, key)).collect::<Result<Vec<_>>>().map(Some)
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let keys = self.keys(key);
        let reply: Reply = scripts::SNAPSHOT
            .key(&keys.meta)
            .key(&keys.snapshots)
            .key(&keys.snapshot_states)
            .arg(at_or_before_micros)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("history", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        let parts = array(reply);
        let bad = || corrupt(format!("session {key}: a history snapshot is unreadable"));
        let [id, at, data] = parts.as_slice() else { return Err(bad()) };
        let event_id = text(id).ok_or_else(bad)?.to_owned();
        // The creation snapshot is scored -inf; a retention boundary (also without an event) is not.
        let timestamp_micros = score(at).ok_or_else(bad)?;
        let state = match serde_json::from_slice(bytes(data).ok_or_else(bad)?) {
            Ok(Value::Object(map)) => map,
            _ => return Err(bad()),
        };
        Ok(Some(HistorySnapshot { at: EventCursor { timestamp_micros, event_id }, state }))
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        if snapshots.is_empty() {
            return Ok(());
        }
        let keys = self.keys(key);
        let mut invocation = scripts::PUT_SNAPSHOTS.prepare_invoke();
        invocation.key(&keys.meta).key(&keys.snapshots).key(&keys.snapshot_states);
        for snapshot in snapshots {
            let at = match snapshot.at == EventCursor::CREATION {
                true => "-inf".to_owned(),
                false => snapshot.at.timestamp_micros.to_string(),
            };
            let state = Value::Object(snapshot.state.clone()).to_string();
            invocation.arg(at).arg(&snapshot.at.event_id).arg(state);
        }
        let _: Reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("history", e))?;
        Ok(())
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        let keys = self.keys(key);
        let reply: Reply = redis::cmd("HGET")
            .arg(&keys.data)
            .arg(event_id)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("event", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        decode_event(&reply, key).map(Some)
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        let keys = self.keys(key);
        let reply: Reply = scripts::INVOCATION
            .key(&keys.invocations)
            .key(&keys.data)
            .arg(invocation_id)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("event", e))?;
        if reply == Reply::Nil {
            return Ok(None);
        }
        decode_event(&reply, key).map(Some)
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        let keys = self.keys(key);
        let mut invocation = scripts::EXPIRE.prepare_invoke();
        for own in keys.own() {
            invocation.key(own);
        }
        let done: i64 = invocation
            .key(&keys.expiring)
            .arg(expire_micros.map(|t| t.to_string()).unwrap_or_default())
            .arg(&keys.member)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("expire", e))?;
        if done == 1 && expire_micros.is_some() {
            self.register(expiring_apps(&self.prefix), key.app_name(), "expire").await?;
        }
        Ok(done == 1)
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let keys = self.keys(key);
        let dropped: i64 = scripts::DROP
            .key(&keys.meta)
            .key(&keys.times)
            .key(&keys.data)
            .key(&keys.snapshots)
            .key(&keys.snapshot_states)
            .arg(cut_micros)
            .arg(boundary.at.timestamp_micros)
            .arg(Value::Object(boundary.state.clone()).to_string())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("retention", e))?;
        Ok(usize::try_from(dropped).unwrap_or_default())
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        let keys = self.keys(key);
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("EXISTS").arg(&keys.meta).cmd("ZCARD").arg(&keys.times);
        let (exists, count): (i64, i64) =
            pipe.query_async(&mut self.connection()).await.map_err(|e| backend("count", e))?;
        Ok((exists == 1).then(|| usize::try_from(count).unwrap_or_default()))
    }

    async fn apps(&self) -> Result<Vec<String>> {
        let mut found: Vec<String> = redis::cmd("SMEMBERS")
            .arg(apps(&self.prefix))
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("apps", e))?;
        found.sort_unstable();
        Ok(found)
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        let mut found: Vec<String> = redis::cmd("SMEMBERS")
            .arg(AppKeys::new(&self.prefix, app).users())
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("users", e))?;
        found.sort_unstable();
        Ok(found)
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let hash = self.owner_hash(owner);
        let reply: Reply = redis::cmd("HGETALL")
            .arg(&hash)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("state", e))?;
        state(reply, &|| format!("state {hash}"))
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        if swaps.is_empty() {
            return Ok(0);
        }
        let mut invocation = scripts::SWAP.prepare_invoke();
        invocation.key(self.owner_hash(owner));
        for swap in swaps {
            invocation.arg(&swap.key).arg(swap.old.to_string()).arg(swap.new.to_string());
        }
        let swapped: i64 =
            invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("rewrite state", e))?;
        Ok(usize::try_from(swapped).unwrap_or_default())
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let done: i64 = scripts::REWRITE
            .key(self.keys(key).data)
            .arg(&event.id)
            .arg(event_json(event)?)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("rewrite an event", e))?;
        Ok(done == 1)
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        redis::cmd("GET")
            .arg(format!("{}meta:{name}", self.prefix))
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("metadata", e))
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        redis::cmd("SET")
            .arg(format!("{}meta:{name}", self.prefix))
            .arg(value)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("metadata", e))
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        // Resumable: a batch of sessions at a time, then the user's state; run again after an
        // interruption to finish.
        const BATCH: isize = 100;
        let app_keys = AppKeys::new(&self.prefix, app);
        let mut connection = self.connection();
        let mut erased = UserData::default();
        loop {
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(app_keys.user_sessions(user))
                .arg(0)
                .arg(BATCH - 1)
                .query_async(&mut connection)
                .await
                .map_err(|e| backend("erase", e))?;
            if ids.is_empty() {
                break;
            }
            for id in &ids {
                let keys = app_keys.session(user, id);
                let (existed, events): (i64, i64) = keys
                    .removal(&scripts::ERASE, user, id)
                    .invoke_async(&mut connection)
                    .await
                    .map_err(|e| backend("erase", e))?;
                erased.sessions += usize::from(existed == 1);
                erased.events += usize::try_from(events).unwrap_or_default();
            }
        }
        let user_state = app_keys.user_state(user);
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("HLEN").arg(&user_state).cmd("DEL").arg(&user_state).ignore();
        pipe.cmd("SREM").arg(app_keys.users()).arg(user).ignore();
        let (keys,): (i64,) = pipe.query_async(&mut connection).await.map_err(|e| backend("erase", e))?;
        erased.user_state_keys = usize::try_from(keys).unwrap_or_default();
        Ok(erased)
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        let app_keys = AppKeys::new(&self.prefix, app);
        let mut connection = self.connection();
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(app_keys.user_sessions(user))
            .arg(0)
            .arg(-1)
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("count", e))?;
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("HLEN").arg(app_keys.user_state(user));
        for id in &ids {
            let keys = app_keys.session(user, id);
            pipe.cmd("EXISTS").arg(&keys.meta).cmd("ZCARD").arg(&keys.times);
        }
        let counts: Vec<i64> = pipe.query_async(&mut connection).await.map_err(|e| backend("count", e))?;
        let count = |n: &i64| usize::try_from(*n).unwrap_or_default();
        let mut data =
            UserData { user_state_keys: counts.first().map(count).unwrap_or_default(), ..UserData::default() };
        for pair in counts.get(1..).unwrap_or_default().chunks_exact(2) {
            data.sessions += count(&pair[0]);
            data.events += count(&pair[1]);
        }
        Ok(data)
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let mut connection = self.connection();
        let apps: Vec<String> = redis::cmd("SMEMBERS")
            .arg(expiring_apps(&self.prefix))
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("sweep", e))?;
        let mut removed = 0;
        for app in apps {
            if removed >= limit {
                break;
            }
            let app_keys = AppKeys::new(&self.prefix, &app);
            let members: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(app_keys.expiring())
                .arg("-inf")
                .arg(before_micros)
                .arg("LIMIT")
                .arg(0)
                .arg(limit - removed)
                .query_async(&mut connection)
                .await
                .map_err(|e| backend("sweep", e))?;
            for member in members {
                let Some((user, id)) = member.split_once('\0') else { continue };
                let keys = app_keys.session(user, id);
                let done: i64 = keys
                    .removal(&scripts::SWEEP, user, id)
                    .arg(before_micros)
                    .invoke_async(&mut connection)
                    .await
                    .map_err(|e| backend("sweep", e))?;
                removed += usize::try_from(done).unwrap_or_default();
            }
        }
        Ok(removed)
    }

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        let key = AppKeys::new(&self.prefix, app).users_with(session_id);
        let mut users: Vec<String> = redis::cmd("SMEMBERS")
            .arg(key)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("lookup", e))?;
        users.sort_unstable();
        Ok(users)
    }
}

fn array_len(reply: &Reply) -> usize {
    match reply {
        Reply::Array(items) | Reply::Set(items) => items.len(),
        Reply::Map(pairs) => pairs.len(),
        _ => 0,
    }
}
