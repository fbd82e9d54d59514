//! State shared by a user's or an app's sessions, written apart from any session (the
//! `SharedStateStore` capability): one `MULTI` in the app's slot, and a log of the writes.

use agentstate::{Map, Result, Value};
use async_trait::async_trait;

use super::{backend, corrupt};
use crate::RedisStore;
use crate::keys::{AppKeys, apps};

#[async_trait]
impl agentstate::store::SharedStateStore for RedisStore {
    async fn shared_state(&self, owner: &agentstate::store::StateOwner) -> Result<Map<String, Value>> {
        agentstate::store::shared_state_as_stored(self, owner).await
    }

    /// One `MULTI`: the values set field by field, the deleted fields removed, the user listed
    /// among the app's users, the write logged (the keys share the app's slot); the app is
    /// registered beside it, in the same round trip (the registry only grows, as in a create).
    async fn update_shared_state(&self, update: &agentstate::store::SharedStateUpdate) -> Result<()> {
        let (app, user) = update.owner.shared()?;
        let hash = self.owner_hash(&update.owner);
        let mut pipe = redis::pipe();
        pipe.atomic();
        let set: Vec<(&String, String)> =
            update.delta.iter().filter(|(k, _)| !update.deleted.contains(k)).map(|(k, v)| (k, v.to_string())).collect();
        if !set.is_empty() {
            pipe.cmd("HSET").arg(&hash).arg(set).ignore();
        }
        if !update.deleted.is_empty() {
            pipe.cmd("HDEL").arg(&hash).arg(&update.deleted).ignore();
        }
        let app_keys = AppKeys::new(&self.prefix, app);
        if let Some(user) = user {
            pipe.cmd("SADD").arg(app_keys.users()).arg(user).ignore();
        }
        let write = agentstate::store::SharedStateWrite::of(update);
        let entry =
            serde_json::json!({"id": write.id, "origin": write.origin, "set": write.set, "deleted": write.deleted});
        pipe.cmd("ZADD").arg(app_keys.state_writes(user)).arg(write.at_micros).arg(entry.to_string()).ignore();
        let mut connection = self.connection();
        let (done, registered): (redis::RedisResult<()>, _) = tokio::join!(
            pipe.query_async(&mut connection),
            self.register(apps(&self.prefix), app, "write shared state"),
        );
        done.map_err(|e| backend("write shared state", e))?;
        registered
    }

    /// The owner's zset, newest first from the cursor's time; the entries of that same
    /// microsecond at or after the cursor's id are dropped here.
    async fn shared_state_writes(
        &self,
        query: &agentstate::store::SharedStateWrites,
    ) -> Result<Vec<agentstate::store::SharedStateWrite>> {
        let (app, user) = query.owner.shared()?;
        // Writes in the cursor's own microsecond are few: read that many more.
        const SAME_MICROSECOND: usize = 64;
        let top = query.before.as_ref().map_or_else(|| "+inf".to_owned(), |(at, _)| at.to_string());
        let entries: Vec<(String, i64)> = redis::cmd("ZREVRANGEBYSCORE")
            .arg(AppKeys::new(&self.prefix, app).state_writes(user))
            .arg(top)
            .arg("-inf")
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(0)
            .arg(query.limit + SAME_MICROSECOND)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| backend("read logged state writes", e))?;
        let mut writes = Vec::with_capacity(entries.len());
        for (entry, at_micros) in entries {
            let bad = || corrupt(format!("a logged state write of app {app} is unreadable"));
            let value: Value = serde_json::from_str(&entry).map_err(|_| bad())?;
            let keys = |name: &str| -> Option<Vec<String>> { serde_json::from_value(value.get(name)?.clone()).ok() };
            let write = agentstate::store::SharedStateWrite {
                id: value.get("id").and_then(Value::as_str).ok_or_else(bad)?.to_owned(),
                at_micros,
                origin: value.get("origin").and_then(Value::as_str).unwrap_or_default().to_owned(),
                set: keys("set").ok_or_else(bad)?,
                deleted: keys("deleted").ok_or_else(bad)?,
            };
            if query.before.as_ref().is_none_or(|before| write.position() < *before) {
                writes.push(write);
            }
        }
        writes.sort_unstable_by_key(|w| std::cmp::Reverse(w.position()));
        writes.truncate(query.limit);
        Ok(writes)
    }
}
