//! Lists: a page of an app's or a user's sessions, from the sorted sets that order them, with
//! their states read in one atomic pipeline.

use std::collections::BTreeMap;

use agentstate::store::{ListCursor, ListOrder, ListQuery};
use agentstate::{Result, Session, SessionKey};
use redis::Value as Reply;

use super::{LIST_ATTEMPTS, array, array_len, backend, handle, meta, score, state, text};
use crate::RedisStore;
use crate::keys::{AppKeys, list_member};

impl RedisStore {
    /// One page of a list: the members after the cursor, in order, with their scores, within the
    /// range the filter allows of the order's time (the index's scores).
    async fn list_members(
        &self,
        zset: &str,
        query: &ListQuery,
        cursor_member: Option<&str>,
    ) -> Result<Vec<(String, i64)>> {
        let limit = query.limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut connection = self.connection();
        let read = |reply: Reply| -> Vec<(String, i64)> {
            array(reply).chunks_exact(2).filter_map(|p| Some((text(&p[0])?.to_owned(), score(&p[1])?))).collect()
        };
        let range = query.order_range();
        let (low, high) = (
            range.from_micros.map_or_else(|| "-inf".to_owned(), |f| f.to_string()),
            range.to_micros.map_or_else(|| "+inf".to_owned(), |t| t.to_string()),
        );
        // Newest first, the same reads in reverse: scores from the top, ties (equal scores, in
        // member order) from the last.
        let (by_score, past) = if query.descending {
            ("ZREVRANGEBYSCORE", std::cmp::Ordering::Less)
        } else {
            ("ZRANGEBYSCORE", std::cmp::Ordering::Greater)
        };
        // `ZREVRANGEBYSCORE` takes its bounds high first.
        let bounds = |from: String, to: String| if query.descending { (to, from) } else { (from, to) };
        let mut pipe = redis::pipe();
        // Where the page starts: after a cursor in the range; at the range's near end when the
        // cursor is before it; nowhere when the cursor is past its far end.
        let past_the_end = |at: i64| {
            if query.descending {
                range.from_micros.is_some_and(|from| at < from)
            } else {
                range.to_micros.is_some_and(|to| at > to)
            }
        };
        let cursor = match query.after.as_ref().zip(cursor_member) {
            Some((c, _)) if past_the_end(c.at_micros) => return Ok(Vec::new()),
            Some((c, member)) if range.contains(c.at_micros) => Some((c, member)),
            _ => None,
        };
        let rest = match cursor {
            Some((cursor, _)) => {
                let at = cursor.at_micros.to_string();
                pipe.cmd(by_score).arg(zset).arg(&at).arg(&at).arg("WITHSCORES");
                let past_cursor = format!("({at}");
                let (start, stop) = if query.descending { bounds(low, past_cursor) } else { bounds(past_cursor, high) };
                pipe.cmd(by_score).arg(zset).arg(start).arg(stop).arg("WITHSCORES")
            }
            None => {
                let (start, stop) = bounds(low, high);
                pipe.cmd(by_score).arg(zset).arg(start).arg(stop).arg("WITHSCORES")
            }
        };
        if let Some(limit) = query.limit {
            rest.arg("LIMIT").arg(0).arg(limit);
        }
        let mut replies: Vec<Reply> = pipe.query_async(&mut connection).await.map_err(|e| backend("list", e))?;
        let rest = read(replies.pop().unwrap_or(Reply::Nil));
        let ties: Vec<_> = match (cursor, replies.pop()) {
            (Some((_, member)), Some(ties)) => {
                read(ties).into_iter().filter(|(m, _)| m.as_bytes().cmp(member.as_bytes()) == past).collect()
            }
            _ => Vec::new(),
        };
        Ok(ties.into_iter().chain(rest).take(limit).collect())
    }

    /// Makes sure the creation index of a list (`created`) holds every session of its update
    /// index (`updated`): sessions stored before creation order was kept are added, from their
    /// metadata, the first time a list by creation asks. Two counts when they agree.
    async fn ensure_created(&self, app: &AppKeys, user: Option<&str>) -> Result<()> {
        let (updated, created) = match user {
            Some(user) => (app.user_sessions(user), app.user_created(user)),
            None => (app.sessions(), app.created()),
        };
        let mut connection = self.connection();
        let (have, want): (usize, usize) = redis::pipe()
            .cmd("ZCARD")
            .arg(&created)
            .cmd("ZCARD")
            .arg(&updated)
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("list", e))?;
        if have == want {
            return Ok(());
        }
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(&updated)
            .arg(0)
            .arg(-1)
            .query_async(&mut connection)
            .await
            .map_err(|e| backend("list", e))?;
        for chunk in members.chunks(500) {
            let mut pipe = redis::pipe();
            for member in chunk {
                let (user, id) = match user {
                    Some(user) => (user, member.as_str()),
                    None => member.split_once('\0').unwrap_or_default(),
                };
                pipe.cmd("HGET").arg(app.session(user, id).meta).arg("create");
            }
            let times: Vec<Option<i64>> = pipe.query_async(&mut connection).await.map_err(|e| backend("list", e))?;
            let mut add = redis::cmd("ZADD");
            add.arg(&created);
            let mut any = false;
            for (member, time) in chunk.iter().zip(times) {
                if let Some(time) = time {
                    add.arg(time).arg(member);
                    any = true;
                }
            }
            if any {
                let _: i64 = add.query_async(&mut connection).await.map_err(|e| backend("list", e))?;
            }
        }
        // Entries of sessions gone meanwhile are skipped by the list, as in the update index.
        Ok(())
    }

    /// One page of a list: the sessions still there, how many list entries were read, and the
    /// position of the last one.
    pub(super) async fn list_page(&self, query: &ListQuery) -> Result<(Vec<Session>, usize, Option<ListCursor>)> {
        let app = AppKeys::new(&self.prefix, &query.app_name);
        let by_creation = query.order == ListOrder::CreateTime;
        if by_creation {
            self.ensure_created(&app, query.user_id.as_deref()).await?;
        }
        let (zset, cursor_member) = match (&query.user_id, by_creation) {
            (Some(user), false) => (app.user_sessions(user), query.after.as_ref().map(|c| c.session_id.clone())),
            (Some(user), true) => (app.user_created(user), query.after.as_ref().map(|c| c.session_id.clone())),
            (None, false) => (app.sessions(), query.after.as_ref().map(|c| list_member(&c.user_id, &c.session_id))),
            (None, true) => (app.created(), query.after.as_ref().map(|c| list_member(&c.user_id, &c.session_id))),
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
                at_micros: *score,
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
                if !meta.live_at(query.now_micros) {
                    continue; // expired, not yet swept: not listed
                }
                moved |= if by_creation { meta.create } else { meta.update } != *score;
                let session = state(state_reply, &|| format!("session {key}"))?;
                let user_state = user_states.get(user.as_str()).cloned().unwrap_or_default();
                out.push(handle(key, meta, &session, &app_state, &user_state, Vec::new()));
            }
            // A session updated between the two steps would be out of order (and could make the
            // next page skip sessions): read again.
            if !moved || attempt >= LIST_ATTEMPTS {
                if moved {
                    let order = query.order;
                    out.sort_by(|a, b| {
                        (order.micros_of(a), a.user_id(), a.id()).cmp(&(order.micros_of(b), b.user_id(), b.id()))
                    });
                    if query.descending {
                        out.reverse();
                    }
                }
                return Ok((out, listed, last));
            }
        }
    }
}
