//! Long-term memories on Redis 7 without modules: no full-text engine (RediSearch is a module),
//! so an inverted index of sorted sets, one per term and owner, members by create time (terms are
//! salted per owner, so a search reads that owner's index only), kept by the same scripts that
//! write the memories. A search is one script: each alternative reads at most a page of its newest
//! members (the rarest term's, checked against the others), ranked by how many alternatives found
//! a memory, then the rarer alternative, then the newest. The keys are listed in
//! `lua/memory_lib.lua`; all of an app's share its slot.

use agentstate::memory::{Memory, MemoryOwner};
use agentstate::store::{MemoryList, MemoryPut, MemorySearch, MemoryStore, PutMode};
use agentstate::{Content, Map, Result, Value};
use async_trait::async_trait;
use redis::Value as Reply;
use serde_json::json;

use super::{array, backend, corrupt, text};
use crate::RedisStore;
use crate::keys::{AppKeys, escaped, memory_apps};
use crate::scripts;

/// An owner's script invocation: the routing key and the first arguments every memory script
/// takes (base, escaped user, user).
fn owner_script<'s>(store: &RedisStore, script: &'s redis::Script, owner: &MemoryOwner) -> redis::ScriptInvocation<'s> {
    let keys = AppKeys::new(&store.prefix, owner.app_name());
    let mut invocation = script.prepare_invoke();
    invocation.key(keys.memory_order(owner.user_id())).arg(keys.base()).arg(escaped(owner.user_id()));
    invocation
}

/// A memory's JSON as the scripts keep it (its create time is the order's score).
fn memory_json(memory: &Memory) -> String {
    json!({
        "id": memory.id,
        "source": memory.session_id,
        "content": memory.content,
        "customMetadata": memory.custom_metadata,
        "author": memory.author,
        "timestamp": memory.timestamp,
        "expire": memory.expire_micros,
    })
    .to_string()
}

/// `{JSON, create, …}` → memories.
fn memories(reply: Reply) -> Result<Vec<Memory>> {
    array(reply).chunks_exact(2).map(|pair| memory(&pair[0], &pair[1])).collect()
}

/// A memory from its JSON and create time as the scripts answer them.
fn memory(data: &Reply, create: &Reply) -> Result<Memory> {
    let data = text(data).ok_or_else(|| corrupt("a memory has no data".into()))?;
    let create = text(create).and_then(|t| t.parse::<f64>().ok()).unwrap_or_default();
    let mut value: Map<String, Value> =
        serde_json::from_str(data).map_err(|e| corrupt(format!("a memory is unreadable: {e}")))?;
    let mut take = |key: &str| value.remove(key).unwrap_or(Value::Null);
    let string = |v: Value| v.as_str().map(str::to_owned);
    let content: Content =
        serde_json::from_value(take("content")).map_err(|e| corrupt(format!("a memory's content: {e}")))?;
    let custom_metadata = match take("customMetadata") {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Ok(Memory {
        id: string(take("id")).unwrap_or_default(),
        session_id: string(take("source")),
        content,
        custom_metadata,
        author: string(take("author")),
        timestamp: string(take("timestamp")),
        create_micros: create as i64,
        expire_micros: take("expire").as_i64(),
    })
}

#[async_trait]
impl MemoryStore for RedisStore {
    async fn put_memories(&self, put: &MemoryPut) -> Result<usize> {
        let mut connection = self.connection();
        redis::cmd("SADD")
            .arg(memory_apps(&self.prefix))
            .arg(put.owner.app_name())
            .exec_async(&mut connection)
            .await
            .map_err(|e| backend("store memories", e))?;
        let mut invocation = owner_script(self, &scripts::MEMORY_PUT, &put.owner);
        let mode = match put.mode {
            PutMode::Replace => "replace",
            PutMode::Add => "add",
            PutMode::Rewrite => "rewrite",
        };
        invocation.arg(put.owner.user_id()).arg(mode).arg(escaped(put.source.as_deref().unwrap_or_default()));
        for indexed in &put.memories {
            let memory = &indexed.memory;
            invocation
                .arg(escaped(&memory.id))
                .arg(&memory.id)
                .arg(memory_json(memory))
                .arg(memory.create_micros)
                .arg(memory.expire_micros.map(|e| e.to_string()).unwrap_or_default())
                .arg(&indexed.terms);
        }
        let stored: i64 = invocation.invoke_async(&mut connection).await.map_err(|e| backend("store memories", e))?;
        Ok(usize::try_from(stored).unwrap_or_default())
    }

    async fn search_memories(&self, search: &MemorySearch) -> Result<Vec<Memory>> {
        let mut invocation = owner_script(self, &scripts::MEMORY_SEARCH, &search.owner);
        let alternatives: Vec<&Vec<String>> = search.any_of.iter().filter(|terms| !terms.is_empty()).collect();
        invocation.arg(search.now_micros).arg(search.limit).arg(alternatives.len());
        for terms in alternatives {
            invocation.arg(terms.len()).arg(terms);
        }
        let reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("search memories", e))?;
        memories(reply)
    }

    async fn list_memories(&self, list: &MemoryList) -> Result<Vec<Memory>> {
        let mut invocation = owner_script(self, &scripts::MEMORY_LIST, &list.owner);
        invocation.arg(list.now_micros);
        match &list.after {
            Some(after) => {
                invocation.arg(after.create_micros).arg(format!("{}\0{}", escaped(&after.source), escaped(&after.id)))
            }
            None => invocation.arg("-inf").arg(""),
        };
        invocation.arg(list.limit);
        let reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("list memories", e))?;
        memories(reply)
    }

    async fn find_memories(
        &self,
        app: &str,
        id: &str,
        now_micros: i64,
        limit: usize,
    ) -> Result<Vec<(MemoryOwner, Memory)>> {
        let keys = AppKeys::new(&self.prefix, app);
        let mut invocation = scripts::MEMORY_FIND.prepare_invoke();
        invocation.key(keys.memory_users()).arg(keys.base()).arg(escaped(id)).arg(now_micros).arg(limit);
        let reply = invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("find a memory", e))?;
        array(reply)
            .chunks_exact(3)
            .map(|found| {
                let user = text(&found[0]).ok_or_else(|| corrupt("a memory has no user".into()))?;
                Ok((MemoryOwner::from_storage(app, user), memory(&found[1], &found[2])?))
            })
            .collect()
    }

    async fn delete_memory(&self, owner: &MemoryOwner, id: &str) -> Result<usize> {
        let mut invocation = owner_script(self, &scripts::MEMORY_DELETE, owner);
        invocation.arg(owner.user_id()).arg(escaped(id)).arg(id);
        let deleted: i64 =
            invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("delete a memory", e))?;
        Ok(usize::try_from(deleted).unwrap_or_default())
    }

    async fn erase_memories(&self, owner: &MemoryOwner) -> Result<usize> {
        let mut invocation = owner_script(self, &scripts::MEMORY_ERASE, owner);
        invocation.arg(owner.user_id());
        let erased: i64 =
            invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("erase memories", e))?;
        Ok(usize::try_from(erased).unwrap_or_default())
    }

    async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let mut connection = self.connection();
        let apps: Vec<String> = redis::cmd("SMEMBERS")
            .arg(memory_apps(&self.prefix))
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("sweep memories", e))?;
        let mut removed = 0;
        for app in apps {
            let keys = AppKeys::new(&self.prefix, &app);
            let entries: Vec<String> = redis::cmd("ZRANGE")
                .arg(keys.expiring_memories())
                .arg("-inf")
                .arg(before_micros)
                .arg("BYSCORE")
                .arg("LIMIT")
                .arg(0)
                .arg(limit - removed)
                .query_async(&mut connection)
                .await
                .map_err(|e| backend("sweep memories", e))?;
            for entry in entries {
                let Some((user, member)) = entry.split_once('\0') else { continue };
                let owner = MemoryOwner::from_storage(&app, user);
                let mut invocation = owner_script(self, &scripts::MEMORY_EXPIRE, &owner);
                invocation.arg(user).arg(member).arg(before_micros);
                let gone: i64 =
                    invocation.invoke_async(&mut connection).await.map_err(|e| backend("sweep memories", e))?;
                removed += usize::try_from(gone).unwrap_or_default();
            }
            if removed >= limit {
                break;
            }
        }
        Ok(removed)
    }

    async fn memory_owners(&self, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>> {
        let mut connection = self.connection();
        let mut apps: Vec<String> = redis::cmd("SMEMBERS")
            .arg(memory_apps(&self.prefix))
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("list memory owners", e))?;
        apps.sort();
        let mut owners = Vec::new();
        for app in apps.into_iter().filter(|app| after.is_none_or(|after| app.as_str() >= after.app_name())) {
            // The app's users in byte order, after the last one listed (a lexicographic range).
            let start = match after {
                Some(after) if after.app_name() == app => format!("({}", after.user_id()),
                _ => "-".to_owned(),
            };
            let users: Vec<String> = redis::cmd("ZRANGE")
                .arg(AppKeys::new(&self.prefix, &app).memory_users())
                .arg(start)
                .arg("+")
                .arg("BYLEX")
                .arg("LIMIT")
                .arg(0)
                .arg(limit - owners.len())
                .query_async(&mut connection)
                .await
                .map_err(|e| backend("list memory owners", e))?;
            owners.extend(users.into_iter().map(|user| MemoryOwner::from_storage(&app, user)));
            if owners.len() >= limit {
                break;
            }
        }
        Ok(owners)
    }

    async fn count_memories(&self, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
        let mut invocation = owner_script(self, &scripts::MEMORY_COUNT, owner);
        invocation.arg(now_micros);
        let count: i64 =
            invocation.invoke_async(&mut self.connection()).await.map_err(|e| backend("count memories", e))?;
        Ok(usize::try_from(count).unwrap_or_default())
    }
}
