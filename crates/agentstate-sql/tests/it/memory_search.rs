//! Memory search on tables larger than the window of newest memories the server stores look at
//! first (PostgreSQL and MariaDB), with words as common as half the memories and as rare as one:
//! every search finds as many memories as it may, each the best there is (most query words
//! matched), whichever way the store found them (the window, a wider window, the index listing
//! rare words together or checking common ones on rows).

use std::collections::BTreeSet;
use std::sync::Arc;

use agentstate::memory::words::{matched, words};
use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryService};
use agentstate::{Content, Event, SessionService};
use agentstate_sql::SqlStore;

const MEMORIES: usize = 4_000;

/// Memory `i`'s text: a word of its own, `alpha` in every other, `beta` in every eighth (all of
/// them `alpha`'s), `gamma` and `delta` in about one in 90 each, `omega` in the oldest alone.
fn text(i: usize) -> String {
    let mut text = format!("m{i}");
    for (word, every, at) in
        [("alpha", 2, 0), ("beta", 8, 2), ("gamma", 97, 3), ("delta", 89, 5), ("omega", MEMORIES, 0)]
    {
        if i % every == at {
            text.push(' ');
            text.push_str(word);
        }
    }
    text
}

async fn searches_find_the_best_memories(url: &str) {
    let store = Arc::new(SqlStore::connect(url).await.unwrap());
    let memory = MemoryService::new(SessionService::shared(store));
    let owner = MemoryOwner::new("search", "u").unwrap();
    let texts: Vec<String> = (0..MEMORIES).map(text).collect();
    for (s, chunk) in texts.chunks(20).enumerate() {
        let events: Vec<Event> = chunk
            .iter()
            .map(|text| Event::new("inv").author("user").content(Content::text("user", text.as_str())))
            .collect();
        memory.add_events(&owner, Some(&format!("s{s}")), &events, &MemoryOptions::default()).await.unwrap();
    }
    let queries = [
        ("alpha", 10),
        ("beta", 10),
        ("beta", 100),
        ("gamma", 10),
        ("gamma delta", 10),
        ("alpha gamma", 10),
        ("alpha beta", 50),
        ("beta delta", 100),
        ("omega", 10),
        ("omega alpha", 3),
        ("nowhere", 10),
    ];
    for (query, limit) in queries {
        let asked: BTreeSet<String> = words(query);
        let mut best: Vec<usize> = texts.iter().map(|t| matched(&asked, t)).filter(|n| *n > 0).collect();
        best.sort_unstable_by(|a, b| b.cmp(a));
        best.truncate(limit);
        let found = memory.search(&owner, query, Some(limit)).await.unwrap();
        let counts: Vec<usize> = found.iter().map(|m| matched(&asked, &m.text())).collect();
        assert_eq!(counts, best, "{url}: {query:?} (limit {limit}): the most words matched, as many as may be");
        let distinct: BTreeSet<String> = found.iter().map(|m| m.text()).collect();
        assert_eq!(distinct.len(), found.len(), "{query:?}: no memory twice");
    }
}

#[tokio::test]
async fn mariadb_searches_beyond_the_window_find_the_best_memories() {
    searches_find_the_best_memories(&crate::servers::fresh_mysql_url().await).await;
}

#[tokio::test]
async fn postgres_searches_beyond_the_window_find_the_best_memories() {
    searches_find_the_best_memories(&crate::servers::fresh_postgres_url().await).await;
}
