//! What every dialect's memory store shares: the row a memory is kept as, and reading it back.

use agentstate::memory::Memory;
use agentstate::store::IndexedMemory;
use agentstate::{Content, Error, Map, Result, Value};

/// A memory's columns as written.
pub(crate) struct MemoryRow<'a> {
    pub(crate) source: &'a str,
    pub(crate) id: &'a str,
    pub(crate) create_micros: i64,
    pub(crate) expire_micros: Option<i64>,
    pub(crate) author: Option<&'a str>,
    pub(crate) timestamp: Option<&'a str>,
    pub(crate) content: String,
    pub(crate) custom_metadata: Option<String>,
    pub(crate) terms: &'a str,
}

impl<'a> MemoryRow<'a> {
    pub(crate) fn of(source: &'a str, indexed: &'a IndexedMemory) -> Result<Self> {
        let memory = &indexed.memory;
        Ok(Self {
            source,
            id: &memory.id,
            create_micros: memory.create_micros,
            expire_micros: memory.expire_micros,
            author: memory.author.as_deref(),
            timestamp: memory.timestamp.as_deref(),
            content: json_text(&memory.content)?,
            custom_metadata: (!memory.custom_metadata.is_empty())
                .then(|| json_text(&memory.custom_metadata))
                .transpose()?,
            terms: &indexed.terms,
        })
    }
}

fn json_text(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::backend("encode a memory", false, e))
}

/// A memory's columns as read ([`read_row!`]).
pub(crate) struct ReadRow {
    pub(crate) memory_id: String,
    pub(crate) source: String,
    pub(crate) create_micros: i64,
    pub(crate) expire_micros: Option<i64>,
    pub(crate) author: Option<String>,
    pub(crate) timestamp: Option<String>,
    pub(crate) content: String,
    pub(crate) custom_metadata: Option<String>,
}

impl ReadRow {
    pub(crate) fn into_memory(self) -> Result<Memory> {
        let unreadable = |e| Error::backend(format!("memory {} is unreadable JSON", self.memory_id), false, e);
        let content: Content = serde_json::from_str(&self.content).map_err(unreadable)?;
        let custom_metadata: Map<String, Value> = match &self.custom_metadata {
            Some(text) => serde_json::from_str(text).map_err(unreadable)?,
            None => Map::new(),
        };
        Ok(Memory {
            session_id: (!self.source.is_empty()).then_some(self.source),
            id: self.memory_id,
            content,
            custom_metadata,
            author: self.author,
            timestamp: self.timestamp,
            create_micros: self.create_micros,
            expire_micros: self.expire_micros,
        })
    }
}

/// A [`ReadRow`] (in scope where it is used) from a row of any driver, each column read by
/// `$row.$get(name)?`.
macro_rules! read_row {
    ($row:ident.$get:ident) => {
        $crate::columns!(ReadRow {
            memory_id, source, create_micros, expire_micros, author, timestamp, content, custom_metadata
        } from $row.$get)
    };
}
pub(crate) use read_row;

/// The statement a put runs for each memory, in the dialect whose `sql!` is in scope.
macro_rules! put_statement {
    ($mode:expr) => {
        match $mode {
            PutMode::Replace => sql!("memory_put_replace"),
            PutMode::Add => sql!("memory_put_add"),
            PutMode::Rewrite => sql!("memory_rewrite"),
        }
    };
}
pub(crate) use put_statement;

/// How many times a search's limit the servers' searches look among the newest memories of the
/// table before asking the full-text index. A word in a quarter of the memories fills its page
/// there; measured on PostgreSQL at 100,000 memories, 4× beat 8×, 16× and 32× (a rarer word scans
/// the window for nothing).
pub(crate) const RECENT_WINDOW: i64 = 4;

/// Attempts of a memory write that met a deadlock or a serialisation failure.
pub(crate) const ATTEMPTS: usize = 5;

/// Expands, inside a server dialect's `ops` (next to its `sql!` and its `memory_search`, which
/// looks a search's alternatives up in the dialect's full-text index and answers the rows of the
/// memories found, best first), to a module `memory` with
/// the memory operations PostgreSQL and MySQL share: the same statement files, parameters and
/// reading. A write is one transaction, tried again when it met a deadlock.
macro_rules! memory_operations {
    ($db:ty) => {
        /// Long-term memories (see [`crate::memories`]).
        pub(crate) mod memory {
            use std::collections::HashSet;

            use agentstate::Result;
            use agentstate::memory::{Memory, MemoryOwner};
            use agentstate::store::{MemoryList, MemoryPut, MemorySearch, PutMode};
            use sqlx::Row as _;

            use $crate::memories::{ATTEMPTS, MemoryRow, ReadRow};
            use $crate::pool::sqlx_error;

            type Pool = sqlx::Pool<$db>;
            type DbRow = <$db as sqlx::Database>::Row;

            fn step(what: &'static str) -> impl FnOnce(sqlx::Error) -> agentstate::Error {
                move |e| sqlx_error(what, e)
            }

            fn to_i64(n: usize) -> i64 {
                i64::try_from(n).unwrap_or(i64::MAX)
            }

            fn read(rows: Vec<DbRow>) -> Result<Vec<Memory>> {
                let column = |row: &DbRow| -> std::result::Result<ReadRow, sqlx::Error> {
                    Ok($crate::memories::read_row!(row.try_get))
                };
                rows.iter().map(|row| column(row).map_err(step("read memories"))?.into_memory()).collect()
            }

            type Statement<'q> = sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments>;

            /// Binds a memory's fields, in the order both the insert and the rewrite take them.
            fn with_fields<'q>(statement: Statement<'q>, row: &'q MemoryRow<'q>) -> Statement<'q> {
                statement
                    .bind(row.expire_micros)
                    .bind(row.author)
                    .bind(row.timestamp)
                    .bind(row.content.as_str())
                    .bind(row.custom_metadata.as_deref())
                    .bind(row.terms)
            }

            pub(crate) async fn put(pool: &Pool, put: &MemoryPut) -> Result<usize> {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match put_once(pool, put).await {
                        Err(e) if e.is_retryable() && attempt < ATTEMPTS => {}
                        done => return done,
                    }
                }
            }

            async fn put_once(pool: &Pool, put: &MemoryPut) -> Result<usize> {
                let (app, user) = (put.owner.app_name(), put.owner.user_id());
                let source = put.source.as_deref().unwrap_or_default();
                let mut tx = pool.begin().await.map_err(step("store memories"))?;
                sqlx::query(sql!("memory_source_lock"))
                    .bind(app)
                    .bind(user)
                    .bind(source)
                    .execute(&mut *tx)
                    .await
                    .map_err(step("lock a memory source"))?;
                if put.mode == PutMode::Replace {
                    let given: HashSet<&str> = put.memories.iter().map(|m| m.memory.id.as_str()).collect();
                    let held: Vec<String> = sqlx::query_scalar(sql!("memory_source_ids"))
                        .bind(app)
                        .bind(user)
                        .bind(source)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(step("read a source's memories"))?;
                    for id in held.iter().filter(|id| !given.contains(id.as_str())) {
                        sqlx::query(sql!("memory_source_delete"))
                            .bind(app)
                            .bind(user)
                            .bind(source)
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(step("remove a memory"))?;
                    }
                }
                let statement = crate::memories::put_statement!(put.mode);
                let mut stored = 0;
                for indexed in &put.memories {
                    let row = MemoryRow::of(source, indexed)?;
                    if put.mode == PutMode::Rewrite {
                        let done = with_fields(sqlx::query(statement), &row)
                            .bind(app)
                            .bind(user)
                            .bind(row.source)
                            .bind(row.id)
                            .execute(&mut *tx)
                            .await
                            .map_err(step("rewrite a memory"))?;
                        stored += usize::from(done.rows_affected() > 0);
                        continue;
                    }
                    let keyed = sqlx::query(statement).bind(app).bind(user).bind(row.source).bind(row.id);
                    let done = with_fields(keyed.bind(row.create_micros), &row)
                        .bind(app)
                        .bind(user)
                        .bind(row.id)
                        .execute(&mut *tx)
                        .await
                        .map_err(step("store a memory"))?;
                    stored += usize::from(done.rows_affected() > 0);
                }
                if put.mode == PutMode::Replace {
                    let held = sqlx::query(sql!("memory_source_count")).bind(app).bind(user).bind(source);
                    let row = held.fetch_one(&mut *tx).await.map_err(step("count a source's memories"))?;
                    let n: i64 = row.try_get("n").map_err(step("count a source's memories"))?;
                    stored = usize::try_from(n).unwrap_or_default();
                }
                tx.commit().await.map_err(step("store memories"))?;
                Ok(stored)
            }

            pub(crate) async fn search(pool: &Pool, search: &MemorySearch) -> Result<Vec<Memory>> {
                read(super::memory_search(pool, search).await.map_err(step("search memories"))?)
            }

            pub(crate) async fn list(pool: &Pool, list: &MemoryList) -> Result<Vec<Memory>> {
                let (create, source, id) = match &list.after {
                    Some(after) => (after.create_micros, after.source.as_str(), after.id.as_str()),
                    None => (i64::MIN, "", ""),
                };
                let rows = sqlx::query(sql!("memory_list"))
                    .bind(list.owner.app_name())
                    .bind(list.owner.user_id())
                    .bind(list.now_micros)
                    .bind(create)
                    .bind(source)
                    .bind(id)
                    .bind(to_i64(list.limit))
                    .fetch_all(pool)
                    .await
                    .map_err(step("list memories"))?;
                read(rows)
            }

            pub(crate) async fn find(
                pool: &Pool,
                app: &str,
                id: &str,
                now_micros: i64,
                limit: usize,
            ) -> Result<Vec<(MemoryOwner, Memory)>> {
                let rows = sqlx::query(sql!("memory_find"))
                    .bind(app)
                    .bind(id)
                    .bind(now_micros)
                    .bind(to_i64(limit))
                    .fetch_all(pool)
                    .await
                    .map_err(step("find a memory"))?;
                let users = rows
                    .iter()
                    .map(|row| row.try_get::<String, _>("user_id"))
                    .collect::<std::result::Result<Vec<String>, _>>()
                    .map_err(step("find a memory"))?;
                let memories = read(rows)?;
                Ok(users.into_iter().map(|user| MemoryOwner::from_storage(app, user)).zip(memories).collect())
            }

            pub(crate) async fn delete(pool: &Pool, owner: &MemoryOwner, id: &str) -> Result<usize> {
                let (app, user) = (owner.app_name(), owner.user_id());
                let mut tx = pool.begin().await.map_err(step("delete a memory"))?;
                let removed = sqlx::query(sql!("memory_delete"))
                    .bind(app)
                    .bind(user)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(step("delete a memory"))?
                    .rows_affected();
                if removed > 0 {
                    sqlx::query(sql!("memory_deletion_put"))
                        .bind(app)
                        .bind(user)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(step("remember a deletion"))?;
                }
                tx.commit().await.map_err(step("delete a memory"))?;
                Ok(usize::try_from(removed).unwrap_or_default())
            }

            pub(crate) async fn erase(pool: &Pool, owner: &MemoryOwner) -> Result<usize> {
                let mut tx = pool.begin().await.map_err(step("erase memories"))?;
                let mut erased = None;
                for statement in sql!("memory_erase").split(';').map(str::trim).filter(|s| !s.is_empty()) {
                    let done = sqlx::query(statement)
                        .bind(owner.app_name())
                        .bind(owner.user_id())
                        .execute(&mut *tx)
                        .await
                        .map_err(step("erase memories"))?;
                    erased.get_or_insert(done.rows_affected());
                }
                tx.commit().await.map_err(step("erase memories"))?;
                Ok(usize::try_from(erased.unwrap_or_default()).unwrap_or_default())
            }

            pub(crate) async fn delete_expired(pool: &Pool, before_micros: i64, limit: usize) -> Result<usize> {
                let done = sqlx::query(sql!("memory_expired_delete"))
                    .bind(before_micros)
                    .bind(to_i64(limit))
                    .execute(pool)
                    .await
                    .map_err(step("delete expired memories"))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or_default())
            }

            pub(crate) async fn owners(
                pool: &Pool,
                after: Option<&MemoryOwner>,
                limit: usize,
            ) -> Result<Vec<MemoryOwner>> {
                let (app, user) = after.map_or(("", ""), |owner| (owner.app_name(), owner.user_id()));
                let rows = sqlx::query(sql!("memory_owners"))
                    .bind(app)
                    .bind(user)
                    .bind(to_i64(limit))
                    .fetch_all(pool)
                    .await
                    .map_err(step("list memory owners"))?;
                rows.iter()
                    .map(|row| {
                        let app: String = row.try_get("app_name").map_err(step("list memory owners"))?;
                        let user: String = row.try_get("user_id").map_err(step("list memory owners"))?;
                        Ok(MemoryOwner::from_storage(app, user))
                    })
                    .collect()
            }

            pub(crate) async fn count_live(pool: &Pool, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
                let query =
                    sqlx::query(sql!("memory_count")).bind(owner.app_name()).bind(owner.user_id()).bind(now_micros);
                let row = query.fetch_one(pool).await.map_err(step("count memories"))?;
                let n: i64 = row.try_get("n").map_err(step("count memories"))?;
                Ok(usize::try_from(n).unwrap_or_default())
            }
        }
    };
}
pub(crate) use memory_operations;
