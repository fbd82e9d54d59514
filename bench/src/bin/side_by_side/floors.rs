//! The floors: the least SQL or Redis commands the workload needs, through the raw driver, with
//! no service logic. They write the same data the services do (the same events, with UUIDv4 ids
//! as the services assign), and a load returns what it read (each event parsed into
//! `serde_json::Value`, kept until the load is done), as a load must.
//!
//! Each floor is written out in its own driver and dialect, though PostgreSQL's and MySQL's look
//! alike: a floor is what a hand-written client would send, so no abstraction of ours (which the
//! figures measure) stands between the workload and the database.

use std::path::Path;

use agentstate::{Event, Map, Value};

use crate::Subject;

/// The event's stored JSON, and its session and `user:` deltas as JSON objects.
fn split(event: &Event) -> anyhow::Result<(String, String, String)> {
    let mut session = Map::new();
    let mut user = Map::new();
    for (k, v) in &event.actions.state_delta {
        match k.strip_prefix("user:") {
            Some(rest) => user.insert(rest.to_owned(), v.clone()),
            None => session.insert(k.clone(), v.clone()),
        };
    }
    Ok((serde_json::to_string(event)?, Value::Object(session).to_string(), Value::Object(user).to_string()))
}

fn stamp(i: usize) -> chrono::NaiveDateTime {
    chrono::DateTime::from_timestamp_micros(1_795_000_000_000_000 + i as i64).unwrap_or_default().naive_utc()
}

fn stamp_text(i: usize) -> String {
    stamp(i).format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

pub(crate) struct SqliteFloor {
    conn: rusqlite::Connection,
}

impl SqliteFloor {
    /// A new database at `path`; `normal` for `synchronous=NORMAL` (else agentstate's default,
    /// FULL), in WAL mode either way.
    pub(crate) fn new(path: &Path, normal: bool) -> anyhow::Result<Self> {
        let conn = rusqlite::Connection::open(path)?;
        let synchronous = if normal { "NORMAL" } else { "FULL" };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=ON;"
        ))?;
        // As agentstate's connections: the read's `LIMIT ?` planned once, not on every bind.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.execute_batch(include_str!("../../../../crates/agentstate-sql/sql/sqlite/schema.sql"))?;
        let t = stamp_text(0);
        conn.execute("INSERT INTO sessions VALUES ('a','u','s','{}',?1,?1)", [&t])?;
        conn.execute("INSERT INTO user_states VALUES ('a','u','{}',?1)", [&t])?;
        Ok(Self { conn })
    }

    fn read(&self, limit: i64) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT ?1",
        )?;
        let mut rows = stmt.query([limit])?;
        let mut events = Vec::new();
        while let Some(row) = rows.next()? {
            let data = row.get_ref(3)?.as_str()?;
            events.push((row.get::<_, String>(0)?, row.get::<_, String>(2)?, serde_json::from_str::<Value>(data)?));
        }
        std::hint::black_box(events);
        Ok(())
    }
}

impl Subject for SqliteFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        let t = stamp_text(i);
        self.conn
            .prepare_cached("INSERT INTO sessions VALUES ('a','c',?1,'{}',?2,?2)")?
            .execute([format!("c{i}"), t])?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        let (data, session, user) = split(&event)?;
        let t = stamp_text(i + 1);
        let tx = self.conn.transaction()?;
        tx.prepare_cached("INSERT INTO events VALUES (?1,'a','u','s',?2,?3,?4)")?.execute(rusqlite::params![
            Event::new_id(),
            event.invocation_id,
            t,
            data
        ])?;
        tx.prepare_cached(
            "UPDATE sessions SET state = json_patch(state, ?1), update_time = ?2 \
             WHERE app_name='a' AND user_id='u' AND id='s'",
        )?
        .execute(rusqlite::params![session, t])?;
        tx.prepare_cached(
            "UPDATE user_states SET state = json_patch(state, ?1), update_time = ?2 WHERE app_name='a' AND user_id='u'",
        )?
        .execute(rusqlite::params![user, t])?;
        tx.commit()?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(20)
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(-1)
    }
}

pub(crate) struct PgFloor {
    conn: sqlx::PgConnection,
}

impl PgFloor {
    pub(crate) async fn new(url: &str) -> anyhow::Result<Self> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::raw_sql(include_str!("../../../../crates/agentstate-sql/sql/postgres/schema.sql"))
            .execute(&mut conn)
            .await?;
        sqlx::query("INSERT INTO sessions VALUES ('a','u','s','{}',$1,$1)").bind(stamp(0)).execute(&mut conn).await?;
        sqlx::query("INSERT INTO user_states VALUES ('a','u','{}',$1)").bind(stamp(0)).execute(&mut conn).await?;
        Ok(Self { conn })
    }

    async fn read(&mut self, limit: Option<i64>) -> anyhow::Result<()> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&mut self.conn)
        .await?;
        let events = rows.iter().map(|r| r.try_get::<sqlx::types::Json<Value>, _>(3)).collect::<Result<Vec<_>, _>>()?;
        std::hint::black_box(events);
        Ok(())
    }
}

impl Subject for PgFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO sessions VALUES ('a','c',$1,'{}',$2,$2)")
            .bind(format!("c{i}"))
            .bind(stamp(i))
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        let (data, session, user) = split(&event)?;
        let n: i64 = sqlx::query_scalar(
            "WITH e AS (INSERT INTO events VALUES ($1,'a','u','s',$2,$3,$4::jsonb)), \
             s AS (UPDATE sessions SET state = state || $5::jsonb, update_time = $3 \
                   WHERE app_name='a' AND user_id='u' AND id='s' RETURNING 1), \
             u AS (UPDATE user_states SET state = state || $6::jsonb, update_time = $3 \
                   WHERE app_name='a' AND user_id='u' RETURNING 1) \
             SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM u)",
        )
        .bind(Event::new_id())
        .bind(&event.invocation_id)
        .bind(stamp(i + 1))
        .bind(data)
        .bind(session)
        .bind(user)
        .fetch_one(&mut self.conn)
        .await?;
        anyhow::ensure!(n == 2, "the floor's append updated {n} state rows, not 2");
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(Some(20)).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(None).await
    }
}

pub(crate) struct MySqlFloor {
    conn: sqlx::MySqlConnection,
}

impl MySqlFloor {
    pub(crate) async fn new(url: &str) -> anyhow::Result<Self> {
        use sqlx::Connection;
        let mut conn = sqlx::MySqlConnection::connect(url).await?;
        sqlx::raw_sql(include_str!("../../../../crates/agentstate-sql/sql/mysql/schema.sql"))
            .execute(&mut conn)
            .await?;
        sqlx::query("INSERT INTO sessions VALUES ('a','u','s','{}',?,?)")
            .bind(stamp(0))
            .bind(stamp(0))
            .execute(&mut conn)
            .await?;
        sqlx::query("INSERT INTO user_states VALUES ('a','u','{}',?)").bind(stamp(0)).execute(&mut conn).await?;
        Ok(Self { conn })
    }

    async fn read(&mut self, limit: u64) -> anyhow::Result<()> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&mut self.conn)
        .await?;
        let mut events = Vec::with_capacity(rows.len());
        for r in &rows {
            events.push(serde_json::from_str::<Value>(r.try_get::<&str, _>(3)?)?);
        }
        std::hint::black_box(events);
        Ok(())
    }
}

impl Subject for MySqlFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO sessions VALUES ('a','c',?,'{}',?,?)")
            .bind(format!("c{i}"))
            .bind(stamp(i))
            .bind(stamp(i))
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        use sqlx::Connection;
        let (data, session, user) = split(&event)?;
        let t = stamp(i + 1);
        let mut tx = self.conn.begin().await?;
        sqlx::query("INSERT INTO events VALUES (?,'a','u','s',?,?,?)")
            .bind(Event::new_id())
            .bind(&event.invocation_id)
            .bind(t)
            .bind(data)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE sessions SET state = JSON_MERGE_PATCH(state, ?), update_time = ? \
             WHERE app_name='a' AND user_id='u' AND id='s'",
        )
        .bind(session)
        .bind(t)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE user_states SET state = JSON_MERGE_PATCH(state, ?), update_time = ? WHERE app_name='a' AND user_id='u'",
        )
        .bind(user)
        .bind(t)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(20).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(u64::MAX).await
    }
}

/// The Redis floor: the service's key layout for one session, written without its script.
pub(crate) struct RedisFloor {
    connection: redis::aio::ConnectionManager,
    keys: [String; 8], // meta, state, app, user, times, data, sessions, user sessions
    base: String,
}

impl RedisFloor {
    pub(crate) async fn new(url: &str, prefix: &str) -> anyhow::Result<Self> {
        let connection = redis::aio::ConnectionManager::new(redis::Client::open(url)?).await?;
        let base = format!("{prefix}{{floor}}:");
        let keys = ["m:u:s", "s:u:s", "app", "u:u", "e:u:s", "d:u:s", "sessions", "us:u"].map(|k| format!("{base}{k}"));
        Ok(Self { connection, keys, base })
    }

    async fn read(&mut self, recent: Option<isize>) -> anyhow::Result<()> {
        let [meta, state, app, user, times, data, ..] = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(meta).cmd("HGETALL").arg(state).cmd("HGETALL").arg(app).cmd("HGETALL").arg(user);
        match recent {
            Some(n) => pipe.cmd("ZRANGE").arg(times).arg(-n).arg(-1),
            None => pipe.cmd("HVALS").arg(data),
        };
        let mut replies: Vec<Vec<Vec<u8>>> = pipe.query_async(&mut self.connection).await?;
        let tail = replies.pop().unwrap_or_default();
        std::hint::black_box(replies);
        let events: Vec<Vec<u8>> = match recent {
            Some(_) => redis::cmd("HMGET").arg(data).arg(tail).query_async(&mut self.connection).await?,
            None => tail,
        };
        let events = events.iter().map(|e| serde_json::from_slice::<Value>(e)).collect::<Result<Vec<_>, _>>()?;
        std::hint::black_box(events);
        Ok(())
    }
}

impl Subject for RedisFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(format!("{}m:c:c{i}", self.base)).arg("update").arg(i).ignore();
        pipe.cmd("ZADD").arg(&self.keys[6]).arg(i).arg(format!("c\0c{i}")).ignore();
        let () = pipe.query_async(&mut self.connection).await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, mut event: Event) -> anyhow::Result<()> {
        let [meta, state, _, user, times, data, sessions, user_sessions] = &self.keys;
        let ts = 1_795_000_000_000_000_i64 + i as i64;
        event.id = Event::new_id();
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(times).arg(ts).arg(&event.id).ignore();
        pipe.cmd("HSET").arg(data).arg(&event.id).arg(serde_json::to_string(&event)?).ignore();
        let (mut own, mut shared) = (Vec::new(), Vec::new());
        for (k, v) in &event.actions.state_delta {
            match k.strip_prefix("user:") {
                Some(rest) => shared.push((rest.to_owned(), v.to_string())),
                None => own.push((k.clone(), v.to_string())),
            }
        }
        pipe.cmd("HSET").arg(state).arg(own).ignore();
        pipe.cmd("HSET").arg(user).arg(shared).ignore();
        pipe.cmd("HSET").arg(meta).arg("update").arg(ts).ignore();
        pipe.cmd("ZADD").arg(sessions).arg(ts).arg("u\0s").ignore();
        pipe.cmd("ZADD").arg(user_sessions).arg(ts).arg("s").ignore();
        let () = pipe.query_async(&mut self.connection).await?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(Some(20)).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(None).await
    }
}
