//! The session-list statements of every dialect: two templates (oldest and newest first), each
//! written once with `{at}` for the column of the list's order (`update_time`, `create_time`) and
//! `{user}` for the user condition (one user's sessions, or the app's), made into the eight
//! statements on first use. Each is its own text, so each gets its own plan, and the user's
//! lists read the index that starts with the user.

use std::sync::OnceLock;

use agentstate::store::{ListOrder, ListQuery};

/// The eight statements of one dialect's pair of templates.
pub(crate) struct ListStatements {
    made: [OnceLock<String>; 8],
}

impl ListStatements {
    pub(crate) const fn new() -> Self {
        Self { made: [const { OnceLock::new() }; 8] }
    }

    /// The statement for `query`: from `oldest_first` or `newest_first`, `{user}` replaced by
    /// `one_user` or `every_user` (which must take the same parameters).
    pub(crate) fn get(
        &self,
        query: &ListQuery,
        [oldest_first, newest_first]: [&str; 2],
        [one_user, every_user]: [&str; 2],
    ) -> &str {
        let by_creation = query.order == ListOrder::CreateTime;
        let index =
            usize::from(query.descending) * 4 + usize::from(by_creation) * 2 + usize::from(query.user_id.is_some());
        self.made[index].get_or_init(|| {
            let template = if query.descending { newest_first } else { oldest_first };
            template
                .replace("{at}", query.order.field())
                .replace("{user}", if query.user_id.is_some() { one_user } else { every_user })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_is_made_once_with_its_column_and_user() {
        static MADE: ListStatements = ListStatements::new();
        let mut query = ListQuery::all("app", Some("u".into()), 0);
        let templates = ["ORDER BY {at} WHERE {user}", "ORDER BY {at} DESC WHERE {user}"];
        let users = ["user_id = ?", "? IS NULL"];
        assert_eq!(MADE.get(&query, templates, users), "ORDER BY update_time WHERE user_id = ?");
        query.order = ListOrder::CreateTime;
        query.descending = true;
        query.user_id = None;
        assert_eq!(MADE.get(&query, templates, users), "ORDER BY create_time DESC WHERE ? IS NULL");
        assert!(std::ptr::eq(MADE.get(&query, templates, users), MADE.get(&query, templates, users)));
    }
}
