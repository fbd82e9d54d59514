//! Lists: a page of an app's or a user's sessions, from the sorted sets that order them, with
//! their states read in one atomic pipeline.

use std::collections::BTreeMap;

use agentstate::store::{ListCursor, ListQuery};
use agentstate::{Result, Session, SessionKey};
use redis::Value as Reply;

use super::{LIST_ATTEMPTS, array, array_len, backend, handle, meta, score, state, text};
use crate::RedisStore;
use crate::keys::{AppKeys, list_member};

impl RedisStore {
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
        // Newest first, the same reads in reverse: scores from the top, ties (equal scores, in
        // member order) from the last.
        let (by_score, towards, past) = if query.descending {
            ("ZREVRANGEBYSCORE", "-inf", std::cmp::Ordering::Less)
        } else {
            ("ZRANGEBYSCORE", "+inf", std::cmp::Ordering::Greater)
        };
        let (ties, after) = match (&query.after, cursor_member) {
            (Some(cursor), Some(member)) => {
                let at = cursor.last_update_micros.to_string();
                let mut pipe = redis::pipe();
                pipe.cmd(by_score).arg(zset).arg(&at).arg(&at).arg("WITHSCORES");
                let rest = pipe.cmd(by_score).arg(zset).arg(format!("({at}")).arg(towards).arg("WITHSCORES");
                if let Some(limit) = query.limit {
                    rest.arg("LIMIT").arg(0).arg(limit);
                }
                let (ties, rest): (Reply, Reply) =
                    pipe.query_async(&mut connection).await.map_err(|e| backend("list", e))?;
                let ties: Vec<_> =
                    read(ties).into_iter().filter(|(m, _)| m.as_bytes().cmp(member.as_bytes()) == past).collect();
                (ties, read(rest))
            }
            _ => {
                let stop = query.limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX).saturating_sub(1));
                if stop < 0 && query.limit.is_some() {
                    return Ok(Vec::new());
                }
                let reply: Reply = redis::cmd(if query.descending { "ZREVRANGE" } else { "ZRANGE" })
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
    pub(super) async fn list_page(&self, query: &ListQuery) -> Result<(Vec<Session>, usize, Option<ListCursor>)> {
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
                if !meta.live_at(query.now_micros) {
                    continue; // expired, not yet swept: not listed
                }
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
                    if query.descending {
                        out.reverse();
                    }
                }
                return Ok((out, listed, last));
            }
        }
    }
}
