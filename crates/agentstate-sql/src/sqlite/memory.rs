//! The SQLite store's long-term memories: rows in `agentstate_memories`, their terms in an FTS5
//! index, written inside the writer's transaction.

use std::collections::HashSet;

use agentstate::Result;
use agentstate::memory::{Memory, MemoryOwner};
use agentstate::store::{MemoryList, MemoryPut, MemorySearch, PutMode, rank_hits};
use rusqlite::{Connection, Row, params};

use super::sqlite_error;
use crate::memories::{MemoryRow, ReadRow, read_row};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/sqlite/", $name, ".sql"))
    };
}

fn execute(conn: &Connection, what: &str, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params)).map_err(|e| sqlite_error(what, &e))
}

fn count(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
    let n: i64 = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row(params, |row| row.get(0)))
        .map_err(|e| sqlite_error("count memories", &e))?;
    Ok(usize::try_from(n).unwrap_or_default())
}

fn memories(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Vec<Memory>> {
    let read = |row: &Row<'_>| Ok(read_row!(row.get));
    let rows: Vec<ReadRow> = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_map(params, read)?.collect())
        .map_err(|e| sqlite_error("read memories", &e))?;
    rows.into_iter().map(ReadRow::into_memory).collect()
}

pub(super) fn put(conn: &Connection, put: &MemoryPut) -> Result<usize> {
    let (app, user) = (put.owner.app_name(), put.owner.user_id());
    let source = put.source.as_deref().unwrap_or_default();
    execute(conn, "lock a memory source", sql!("memory_source_lock"), params![app, user, source])?;
    if put.mode == PutMode::Replace {
        let given: HashSet<&str> = put.memories.iter().map(|m| m.memory.id.as_str()).collect();
        let held: Vec<String> = conn
            .prepare_cached(sql!("memory_source_ids"))
            .and_then(|mut stmt| stmt.query_map(params![app, user, source], |row| row.get(0))?.collect())
            .map_err(|e| sqlite_error("read a source's memories", &e))?;
        for id in held.iter().filter(|id| !given.contains(id.as_str())) {
            execute(conn, "remove a memory", sql!("memory_source_delete"), params![app, user, source, id])?;
        }
    }
    let statement = crate::memories::put_statement!(put.mode);
    let mut stored = 0;
    for indexed in &put.memories {
        let row = MemoryRow::of(source, indexed)?;
        if put.mode == PutMode::Rewrite {
            let values = params![
                row.expire_micros,
                row.author,
                row.timestamp,
                row.content,
                row.custom_metadata,
                row.terms,
                app,
                user,
                row.source,
                row.id
            ];
            stored += execute(conn, "rewrite a memory", statement, values)?;
            continue;
        }
        let values = params![
            app,
            user,
            row.source,
            row.id,
            row.create_micros,
            row.expire_micros,
            row.author,
            row.timestamp,
            row.content,
            row.custom_metadata,
            row.terms
        ];
        stored += execute(conn, "store a memory", statement, values)?;
    }
    match put.mode {
        PutMode::Replace => count(conn, sql!("memory_source_count"), params![app, user, source]),
        PutMode::Add | PutMode::Rewrite => Ok(stored),
    }
}

/// A search, ranked without bm25 (FTS5 ranks by first counting every hit of each term, the whole
/// cost for a common word): each alternative reads at most `limit` of its newest hits; a hit found
/// by more alternatives ranks first (every word at once), then one of an alternative with fewer
/// hits (a rarer word), then the newer. An alternative cut at `limit` alone fills the page, so a
/// short answer still means nothing more matched.
pub(super) fn search(conn: &Connection, search: &MemorySearch) -> Result<Vec<Memory>> {
    let limit = i64::try_from(search.limit).unwrap_or(i64::MAX);
    let mut alternatives: Vec<Vec<i64>> = Vec::new();
    for terms in search.any_of.iter().filter(|terms| !terms.is_empty()) {
        // Terms are lower-case letters and digits, never an FTS5 keyword or operator.
        let query = terms.join(" AND ");
        let hits: Vec<i64> = conn
            .prepare_cached(sql!("memory_search_hits"))
            .and_then(|mut stmt| stmt.query_map(params![query, limit], |row| row.get(0))?.collect())
            .map_err(|e| sqlite_error("search memories", &e))?;
        alternatives.push(hits);
    }
    let ranked = rank_hits(&alternatives, search.limit);
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::from(ranked).to_string();
    let (app, user) = (search.owner.app_name(), search.owner.user_id());
    memories(conn, sql!("memory_search"), params![ids, app, user, search.now_micros])
}

pub(super) fn list(conn: &Connection, list: &MemoryList) -> Result<Vec<Memory>> {
    let (app, user) = (list.owner.app_name(), list.owner.user_id());
    let (create, source, id) = match &list.after {
        Some(after) => (after.create_micros, after.source.as_str(), after.id.as_str()),
        None => (i64::MIN, "", ""),
    };
    let limit = i64::try_from(list.limit).unwrap_or(i64::MAX);
    memories(conn, sql!("memory_list"), params![app, user, list.now_micros, create, source, id, limit])
}

pub(super) fn find(
    conn: &Connection,
    app: &str,
    id: &str,
    now_micros: i64,
    limit: usize,
) -> Result<Vec<(MemoryOwner, Memory)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let read = |row: &Row<'_>| Ok((row.get::<_, String>("user_id")?, read_row!(row.get)));
    let rows: Vec<(String, ReadRow)> = conn
        .prepare_cached(sql!("memory_find"))
        .and_then(|mut stmt| stmt.query_map(params![app, id, now_micros, limit], read)?.collect())
        .map_err(|e| sqlite_error("find a memory", &e))?;
    rows.into_iter().map(|(user, row)| Ok((MemoryOwner::from_storage(app, user), row.into_memory()?))).collect()
}

pub(super) fn delete(conn: &Connection, owner: &MemoryOwner, id: &str) -> Result<usize> {
    let (app, user) = (owner.app_name(), owner.user_id());
    let removed = execute(conn, "delete a memory", sql!("memory_delete"), params![app, user, id])?;
    if removed > 0 {
        execute(conn, "remember a deletion", sql!("memory_deletion_put"), params![app, user, id])?;
    }
    Ok(removed)
}

pub(super) fn erase(conn: &Connection, owner: &MemoryOwner) -> Result<usize> {
    let (app, user) = (owner.app_name(), owner.user_id());
    let mut statements = sql!("memory_erase").split(';').map(str::trim).filter(|s| !s.is_empty());
    let mut erased = 0;
    if let Some(memories) = statements.next() {
        erased = execute(conn, "erase memories", memories, params![app, user])?;
    }
    for rest in statements {
        execute(conn, "erase memory deletions", rest, params![app, user])?;
    }
    Ok(erased)
}

pub(super) fn delete_expired(conn: &Connection, before_micros: i64, limit: usize) -> Result<usize> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    execute(conn, "delete expired memories", sql!("memory_expired_delete"), params![before_micros, limit])
}

pub(super) fn count_live(conn: &Connection, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
    count(conn, sql!("memory_count"), params![owner.app_name(), owner.user_id(), now_micros])
}

pub(super) fn owners(conn: &Connection, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>> {
    let (app, user) = after.map_or(("", ""), |owner| (owner.app_name(), owner.user_id()));
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(sql!("memory_owners"))
        .and_then(|mut stmt| {
            let read =
                |row: &Row<'_>| Ok(MemoryOwner::from_storage(row.get::<_, String>(0)?, row.get::<_, String>(1)?));
            stmt.query_map(params![app, user, limit], read)?.collect()
        })
        .map_err(|e| sqlite_error("list memory owners", &e))
}
