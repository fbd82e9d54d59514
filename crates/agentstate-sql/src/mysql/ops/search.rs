//! Memory search on MySQL and MariaDB, bounded as PostgreSQL's is. A FULLTEXT lookup builds a
//! term's whole hit list before any `LIMIT` (a word in a fifth of 100,000 memories: 13 ms), so
//! the search looks among the table's newest memories first, reading further back where the
//! first look shows an alternative's page is near, and asks the index only for what is left,
//! with the terms whose lists are short.

use agentstate::Value;
use agentstate::store::MemorySearch;
use sqlx::Row as _;
use sqlx::mysql::{MySqlPool, MySqlRow};

use crate::memories::RECENT_WINDOW;

/// The most rows a search's window of newest memories holds, in times its limit.
const WIDEST_WINDOW: usize = 64;

/// Reading a row to check a term on it costs about what this many hits of an index list do
/// (13 µs against 0.8 µs, MariaDB at 100,000 memories).
const ROW_PER_HIT: usize = 16;

/// One of the newest memories: its row id and its terms, space-separated. A term is 12 letters
/// between spaces, so a substring match is a whole-term match.
type Recent = (i64, String);

/// Rounds of reading further back, at most.
const WIDENINGS: usize = 3;

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether a memory holding `held` matches every one of `terms`.
fn holds(terms: &[String], held: &str) -> bool {
    terms.iter().all(|term| held.contains(term.as_str()))
}

/// How many memories of `window` hold `term`.
fn held_by(term: &str, window: &[Recent]) -> usize {
    window.iter().filter(|(_, held)| held.contains(term)).count()
}

fn read_window(rows: Vec<MySqlRow>) -> Result<Vec<Recent>, sqlx::Error> {
    rows.into_iter().map(|row| Ok((row.try_get("row_id")?, row.try_get("terms")?))).collect()
}

/// The rows of a search's best hits. The newest memories of the table are read first
/// (`memory_search_recent.sql`, a window of the limit times [`RECENT_WINDOW`]) and each
/// alternative matched against their terms here; where an alternative has some hits there but
/// not a page, the rows its page would take are read too ([`further_back`]). Only an alternative
/// still short of a page asks the FULLTEXT index ([`index_hits`]). The hits are ranked by
/// [`rank_hits`](agentstate::store::rank_hits), as SQLite's, and the rows read for the best
/// (`memory_search.sql`), the owner and expiry checked on them. Terms are salted per owner, so
/// every hit is the owner's; an alternative cut at `limit` fills the page alone, so a short page
/// still means nothing more matched.
pub(super) async fn memory_search(pool: &MySqlPool, search: &MemorySearch) -> Result<Vec<MySqlRow>, sqlx::Error> {
    let alternatives: Vec<&[String]> =
        search.any_of.iter().filter(|terms| !terms.is_empty()).map(Vec::as_slice).collect();
    if alternatives.is_empty() {
        return Ok(Vec::new());
    }
    let limit = search.limit;
    let first = usize::try_from(RECENT_WINDOW).unwrap_or(1).saturating_mul(limit);
    let newest = sqlx::query(sql!("memory_search_recent")).bind(to_i64(first)).fetch_all(pool).await?;
    let mut window = read_window(newest)?;
    // A window shorter than asked for holds the whole table: the index has nothing more.
    let mut whole = window.len() < first;
    for _ in 0..WIDENINGS {
        let Some(asked) = further_back(&alternatives, &window, limit).filter(|_| !whole) else { break };
        let oldest = window.last().map_or(i64::MAX, |(row_id, _)| *row_id);
        let older = sqlx::query(sql!("memory_search_older")).bind(oldest).bind(to_i64(asked)).fetch_all(pool).await?;
        whole = older.len() < asked;
        window.extend(read_window(older)?);
    }
    let in_window: Vec<Vec<i64>> = alternatives
        .iter()
        .map(|terms| {
            window.iter().filter(|(_, held)| holds(terms, held)).map(|(row_id, _)| *row_id).take(limit).collect()
        })
        .collect();
    // The alternatives the window did not fill ask the index, at once (each on a connection of
    // its own): the search waits for the slowest lookup, not for their sum.
    let lookups = alternatives.iter().zip(&in_window).map(|(terms, hits)| async {
        if hits.len() < limit && !whole { index_hits(pool, terms, &window, limit).await } else { Ok(Vec::new()) }
    });
    let from_index = futures_util::future::try_join_all(lookups).await?;
    let found: Vec<Vec<i64>> = in_window
        .into_iter()
        .zip(from_index)
        .map(|(mut hits, more)| {
            for row_id in more {
                if !hits.contains(&row_id) {
                    hits.push(row_id);
                }
            }
            hits
        })
        .collect();
    let ranked = agentstate::store::rank_hits(&found, limit);
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query(sql!("memory_search"))
        .bind(Value::from(ranked).to_string())
        .bind(search.owner.app_name().to_owned())
        .bind(search.owner.user_id().to_owned())
        .bind(search.now_micros)
        .fetch_all(pool)
        .await
}

/// How many rows to read past `window` (`memory_search_older.sql`), if any. An alternative with
/// some hits there but fewer than `limit` would fill its page in about `limit` × the window's
/// length ÷ its hits rows (a quarter more is read, for the variance; a window still short is
/// widened again, up to [`WIDENINGS`] times): read them when the window stays within
/// [`WIDEST_WINDOW`] times the limit and the rows are fewer than half the hits the index would
/// list for the alternative's rarest term, estimated from the window and the table's size. A row
/// read here costs about twice a hit listed (1,000 rows in 1.2 ms; a term in 3,339 memories listed
/// in 2.2 ms, one in 51,769 in 55 ms: MariaDB, 100,000 memories).
fn further_back(alternatives: &[&[String]], window: &[Recent], limit: usize) -> Option<usize> {
    // Row ids count up from 1: the newest is about the table's size (more, after deletes).
    let table = usize::try_from(window.first()?.0).unwrap_or(0);
    alternatives
        .iter()
        .filter_map(|terms| {
            let hits = window.iter().filter(|(_, held)| holds(terms, held)).count();
            if hits == 0 || hits >= limit {
                return None;
            }
            let total = limit * window.len() * 5 / (hits * 4);
            let rows = total.saturating_sub(window.len()).max(limit);
            let rarest = terms.iter().map(|term| held_by(term, window)).min().unwrap_or(0);
            let listed = rarest.saturating_mul(table) / window.len();
            (rows.saturating_mul(2) <= listed && total <= limit * WIDEST_WINDOW).then_some(rows)
        })
        .max()
}

/// An alternative's hits from the FULLTEXT index, at most `limit`. The index lists the rarest of
/// its terms (the one fewest memories of the window hold), and with it (`+a +b`, the lists
/// intersected) each other term whose list costs less than checking it on the rows the index
/// gives (`AND INSTR(terms, ?) > 0`, which stops at the limit). Listing a term costs its hits,
/// `H`; checking it costs [`ROW_PER_HIT`] times the rows read before the page fills, at most the
/// rarest's hits and about `limit` × the table ÷ `H`. So a term is listed when `H` is at most
/// `ROW_PER_HIT` times the rarest's and `H`² at most `ROW_PER_HIT` × `limit` × the table (a word in
/// half of 100,000 memories, listed, took 55 ms). A term is 12 letters between spaces, so a
/// substring match is a whole-term match.
async fn index_hits(
    pool: &MySqlPool,
    terms: &[String],
    window: &[Recent],
    limit: usize,
) -> Result<Vec<i64>, sqlx::Error> {
    let (statement, against, checked) = lookup(terms, window, limit);
    let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(statement)).bind(against);
    for term in checked {
        query = query.bind(term);
    }
    query.bind(to_i64(limit)).fetch_all(pool).await
}

/// [`index_hits`]'s statement, the terms it lists (`+a +b`) and those it checks on rows.
fn lookup<'t>(terms: &'t [String], window: &[Recent], limit: usize) -> (String, String, Vec<&'t str>) {
    let mut held: Vec<(usize, &str)> = terms.iter().map(|term| (held_by(term, window), term.as_str())).collect();
    held.sort_unstable();
    let rarest = held.first().map_or(0, |(n, _)| *n).max(1);
    let table = window.first().map_or(0, |(row_id, _)| usize::try_from(*row_id).unwrap_or(0));
    let cheap = |n: usize| {
        n <= ROW_PER_HIT * rarest
            && (n * n).saturating_mul(table) <= (ROW_PER_HIT * limit).saturating_mul(window.len() * window.len())
    };
    let others = held.split_off(held.len().min(1));
    let (listed, checked): (Vec<_>, Vec<_>) = others.into_iter().partition(|(n, _)| cheap(*n));
    let listed: Vec<(usize, &str)> = held.into_iter().chain(listed).collect();
    // The statement's text is ours: the file, then one fixed condition per checked term.
    let mut statement = sql!("memory_search_hits").trim_end().to_owned();
    for _ in &checked {
        statement.push_str(" AND INSTR(terms, ?) > 0");
    }
    statement.push_str(" LIMIT ?");
    // `+term`: a term is lower-case letters, never boolean-mode syntax.
    let against: Vec<String> = listed.iter().map(|(_, term)| format!("+{term}")).collect();
    (statement, against.join(" "), checked.into_iter().map(|(_, term)| term).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    /// A window of `rows` rows, the newest with id `newest`, where row `i` holds each of `words`
    /// whose period divides `i`.
    fn window(newest: i64, rows: usize) -> Vec<Recent> {
        const WORDS: &[(&str, usize)] = &[("half", 2), ("eighth", 8), ("fortieth", 40), ("hundredth", 100), ("all", 1)];
        (0..rows)
            .map(|i| {
                let held: Vec<&str> = WORDS.iter().filter(|(_, every)| i % every == 0).map(|(word, _)| *word).collect();
                (newest - i64::try_from(i).unwrap(), held.join(" "))
            })
            .collect()
    }

    #[test]
    fn the_window_goes_further_back_only_where_that_is_cheaper_than_the_index() {
        // A word in an eighth: 20 of 160, so a page of 40 in about 400 rows, 240 more, read
        // when the table is large enough that the index would list more than twice that.
        let big = window(100_000, 160);
        assert_eq!(further_back(&[&terms(&["eighth"])], &big, 40), Some(240));
        assert_eq!(further_back(&[&terms(&["eighth"])], &window(3_000, 160), 40), None, "the index lists 375");
        // Filled already, or not seen at all: nothing to read.
        assert_eq!(further_back(&[&terms(&["half"]), &terms(&["nowhere"])], &big, 40), None);
        assert_eq!(further_back(&[&terms(&["eighth"])], &window(100_000, 400), 40), None, "50 of 400");
        // A word in a fortieth (4 of 160): a page of 10 in 500 rows; of 40 in 2,000, more than
        // the index would list (2,500 ÷ 2) unless the table is larger.
        assert_eq!(further_back(&[&terms(&["fortieth"])], &big, 10), Some(340));
        assert_eq!(further_back(&[&terms(&["fortieth"])], &big, 40), None);
        let huge = window(10_000_000, 160);
        assert_eq!(further_back(&[&terms(&["fortieth"])], &huge, 40), Some(1_840));
        // A word in a hundredth (2 of 160) would take 4,000 rows: past 64 × the limit, however
        // large the table.
        assert_eq!(further_back(&[&terms(&["hundredth"])], &huge, 40), None);
        // The most any alternative needs.
        let both = [terms(&["eighth"]), terms(&["fortieth", "half"])];
        assert_eq!(further_back(&[&both[0], &both[1]], &big, 10), Some(340));
    }

    #[test]
    fn the_index_lists_the_rare_terms_and_checks_the_common_ones_on_rows() {
        let big = window(100_000, 160);
        let three = terms(&["half", "fortieth", "unseen"]);
        let (statement, against, checked) = lookup(&three, &big, 40);
        assert_eq!(against, "+unseen +fortieth", "the rarest (unseen), and the fortieth: 2,500 hits");
        assert_eq!(checked, ["half"], "50,000 hits: checked on the rows instead");
        assert!(statement.ends_with("AGAINST (? IN BOOLEAN MODE) AND INSTR(terms, ?) > 0 LIMIT ?"));
        // An eighth (12,500 hits) is checked on a fortieth's rows at 100,000; at 3,000 (375 hits)
        // it is listed.
        let three = terms(&["eighth", "fortieth", "all"]);
        let (statement, against, checked) = lookup(&three, &big, 40);
        assert_eq!((against.as_str(), checked), ("+fortieth", vec!["eighth", "all"]));
        assert!(statement.ends_with("AND INSTR(terms, ?) > 0 AND INSTR(terms, ?) > 0 LIMIT ?"));
        let (_, against, checked) = lookup(&three, &window(3_000, 160), 40);
        assert_eq!((against.as_str(), checked), ("+fortieth +eighth", vec!["all"]));
        // The rarest is listed, however common.
        let one = terms(&["all"]);
        let (statement, against, checked) = lookup(&one, &big, 40);
        assert_eq!((against.as_str(), checked.len()), ("+all", 0));
        assert!(statement.ends_with("AGAINST (? IN BOOLEAN MODE) LIMIT ?"));
    }
}
