//! The Redis store's capabilities: history, lifecycle, administration.

use agentstate::store::{
    AdminStore, AttributesUpdate, EventCopy, EventCursor, HistorySnapshot, HistoryStore, LifecycleStore, StateOwner,
    UserDataCounts, ValueSwap, replay,
};
use agentstate::{Event, Map, Result, SessionKey, Value};
use async_trait::async_trait;
use redis::Value as Reply;

use super::{array, backend, bytes, corrupt, event_json, score, state, text};
use crate::RedisStore;
use crate::keys::{AppKeys, apps, expiring_apps};
use crate::scripts;

#[async_trait]
impl HistoryStore for RedisStore {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
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

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
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

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        replay::copy_events(self, copy).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let keys = self.keys(key);
        let dropped: i64 = scripts::DROP
            .key(&keys.meta)
            .key(&keys.times)
            .key(&keys.data)
            .key(&keys.snapshots)
            .key(&keys.snapshot_states)
            .key(&keys.facts)
            .arg(cut_micros)
            .arg(boundary.at.timestamp_micros)
            .arg(Value::Object(boundary.state.clone()).to_string())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("retention", e))?;
        Ok(usize::try_from(dropped).unwrap_or_default())
    }
}

#[async_trait]
impl LifecycleStore for RedisStore {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
        let mut connection = self.connection();
        let apps: Vec<String> = redis::cmd("SMEMBERS")
            .arg(expiring_apps(&self.prefix))
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("sweep", e))?;
        let mut removed = Vec::new();
        for app in apps {
            if removed.len() >= limit {
                break;
            }
            let app_keys = AppKeys::new(&self.prefix, &app);
            let members: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(app_keys.expiring())
                .arg("-inf")
                .arg(before_micros)
                .arg("LIMIT")
                .arg(0)
                .arg(limit - removed.len())
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
                if done > 0 {
                    // Its artifacts go next (their keys are not the session's, so not in its
                    // script): a sweep stopped in between leaves them to erase-user.
                    self.clear_artifacts(&app, user, Some(id), true).await?;
                    removed.push(SessionKey::from_storage(app.clone(), user.to_owned(), id.to_owned()));
                }
            }
        }
        Ok(removed)
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        let update = AttributesUpdate { expire_time_micros: Some(expire_micros), ..AttributesUpdate::default() };
        self.set_attributes(key, &update, now_micros).await
    }

    async fn set_attributes(&self, key: &SessionKey, update: &AttributesUpdate, now_micros: i64) -> Result<bool> {
        let flag = |set: bool| if set { "1" } else { "" };
        let keys = self.keys(key);
        let mut invocation = scripts::ATTRIBUTES.prepare_invoke();
        for own in keys.own() {
            invocation.key(own);
        }
        let expire = update.expire_time_micros;
        let done: i64 = invocation
            .key(&keys.expiring)
            .arg(flag(update.display_name.is_some()))
            .arg(update.display_name.clone().flatten().unwrap_or_default())
            .arg(flag(update.labels.is_some()))
            .arg(update.labels_json().unwrap_or_default())
            .arg(super::expiry_arg(now_micros))
            .arg(flag(expire.is_some()))
            .arg(expire.flatten().map(|t| t.to_string()).unwrap_or_default())
            .arg(&keys.member)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("set attributes", e))?;
        if done == 1 && expire.flatten().is_some() {
            self.register(expiring_apps(&self.prefix), key.app_name(), "expire").await?;
        }
        Ok(done == 1)
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        // Resumable: a batch of sessions at a time, then the user's state; run again after an
        // interruption to finish.
        const BATCH: isize = 100;
        let app_keys = AppKeys::new(&self.prefix, app);
        let mut connection = self.connection();
        let mut erased = UserDataCounts::default();
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
        pipe.cmd("DEL").arg(app_keys.leases(user)).ignore();
        pipe.cmd("DEL").arg(app_keys.state_writes(Some(user))).ignore();
        let (keys,): (i64,) = pipe.query_async(&mut connection).await.map_err(|e| backend("erase", e))?;
        erased.user_state_keys = usize::try_from(keys).unwrap_or_default();
        Ok(erased)
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
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
        let mut data = UserDataCounts {
            user_state_keys: counts.first().map(count).unwrap_or_default(),
            ..UserDataCounts::default()
        };
        for pair in counts.get(1..).unwrap_or_default().chunks_exact(2) {
            data.sessions += count(&pair[0]);
            data.events += count(&pair[1]);
        }
        Ok(data)
    }
}

#[async_trait]
impl AdminStore for RedisStore {
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
        let keys = self.keys(key);
        let done: i64 = scripts::REWRITE
            .key(keys.data)
            .key(keys.facts)
            .arg(&event.id)
            .arg(event_json(event)?)
            .arg(super::view::facts_value(event))
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
}
