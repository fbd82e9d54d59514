//! What a session list is ordered by and filtered on ([`ListQuery::order`] and
//! [`ListQuery::filter`]).
//!
//! A store must answer the order exactly (with the cursor, the user and expiry); it may apply
//! any part of the filter itself, from an index or in its statement, and may return sessions the
//! filter does not admit, never leave out one it does: the service checks
//! [`SessionFilter::admits`] on every session a store returns and reads on until the page is
//! full. So a store that applies none of it is correct, and one that applies all of it is fast.
//!
//! [`ListQuery::order`]: super::ListQuery::order
//! [`ListQuery::filter`]: super::ListQuery::filter

use std::collections::BTreeMap;

use serde_json::Value;

use crate::session::Session;

/// The time a session list is ordered by; ties in (user id, session id) order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ListOrder {
    /// The last update (the default): a chat sidebar's order.
    #[default]
    UpdateTime,
    /// The creation, which never changes: pages that stay put under writes.
    CreateTime,
}

impl ListOrder {
    /// The time of `session` this order sorts by, epoch microseconds.
    pub fn micros_of(self, session: &Session) -> i64 {
        match self {
            Self::UpdateTime => session.last_update_micros(),
            Self::CreateTime => session.create_time_micros(),
        }
    }

    /// Its field name in filters and `orderBy` (`update_time`, `create_time`).
    pub fn field(self) -> &'static str {
        match self {
            Self::UpdateTime => "update_time",
            Self::CreateTime => "create_time",
        }
    }
}

/// Times from `from_micros` to `to_micros`, both inclusive; either end open when `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TimeRange {
    /// The earliest time admitted, epoch microseconds.
    pub from_micros: Option<i64>,
    /// The latest time admitted, epoch microseconds.
    pub to_micros: Option<i64>,
}

impl TimeRange {
    /// Whether `micros` is in the range.
    pub fn contains(&self, micros: i64) -> bool {
        self.from_micros.is_none_or(|f| micros >= f) && self.to_micros.is_none_or(|t| micros <= t)
    }

    /// Whether the range admits every time.
    pub fn is_open(&self) -> bool {
        self.from_micros.is_none() && self.to_micros.is_none()
    }

    /// Whether the range admits no time at all.
    pub fn is_empty(&self) -> bool {
        matches!((self.from_micros, self.to_micros), (Some(f), Some(t)) if f > t)
    }

    /// Narrowed to times at or after `micros`.
    #[must_use]
    pub fn from(self, micros: i64) -> Self {
        Self { from_micros: Some(self.from_micros.map_or(micros, |f| f.max(micros))), ..self }
    }

    /// Narrowed to times at or before `micros`.
    #[must_use]
    pub fn to(self, micros: i64) -> Self {
        Self { to_micros: Some(self.to_micros.map_or(micros, |t| t.min(micros))), ..self }
    }
}

/// Which sessions a list admits, beyond the app and the user: every condition must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// The display name, exactly.
    pub display_name: Option<String>,
    /// Labels the session carries, each with exactly this value.
    pub labels: BTreeMap<String, String>,
    /// When it was last updated.
    pub update_time: TimeRange,
    /// When it was created.
    pub create_time: TimeRange,
    /// Session-scope state keys (no prefix) holding exactly these scalar values (a string, a
    /// number, a boolean or null; numbers compare by value, so `1` is `1.0`).
    pub state: BTreeMap<String, Value>,
}

impl SessionFilter {
    /// Whether the filter admits every session.
    pub fn is_empty(&self) -> bool {
        self.display_name.is_none()
            && self.labels.is_empty()
            && self.update_time.is_open()
            && self.create_time.is_open()
            && self.state.is_empty()
    }

    /// Whether `session` (as a list returns it: merged state, attributes, both times) is admitted.
    pub fn admits(&self, session: &Session) -> bool {
        let attributes = session.attributes();
        self.update_time.contains(session.last_update_micros())
            && self.create_time.contains(session.create_time_micros())
            && self.display_name.as_ref().is_none_or(|name| attributes.display_name.as_ref() == Some(name))
            && self.labels.iter().all(|(k, v)| attributes.labels.get(k) == Some(v))
            && self.state.iter().all(|(k, v)| session.state().get(k).is_some_and(|found| same_scalar(found, v)))
    }

    /// Its time ranges alone: what a store that keeps values sealed can apply.
    pub fn times_only(&self) -> Self {
        Self { update_time: self.update_time, create_time: self.create_time, ..Self::default() }
    }

    /// The time range of `order`'s field.
    pub fn range_of(&self, order: ListOrder) -> TimeRange {
        match order {
            ListOrder::UpdateTime => self.update_time,
            ListOrder::CreateTime => self.create_time,
        }
    }

    /// The state conditions as one JSON object, for stores that test containment (`@>`).
    pub fn state_object(&self) -> Option<Value> {
        (!self.state.is_empty())
            .then(|| Value::Object(self.state.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
    }

    /// The label conditions as one JSON object, for stores that test containment.
    pub fn labels_object(&self) -> Option<Value> {
        (!self.labels.is_empty())
            .then(|| Value::Object(self.labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect()))
    }
}

/// Scalar equality as a filter means it: numbers by value (`1` = `1.0`), the rest exactly; a
/// stored array or object never equals a scalar.
fn same_scalar(stored: &Value, wanted: &Value) -> bool {
    match (stored, wanted) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a == b,
            _ => a.as_f64() == b.as_f64(),
        },
        (Value::Array(_) | Value::Object(_), _) => false,
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionAttributes;
    use crate::key::SessionKey;
    use serde_json::json;
    use std::sync::Arc;

    fn session() -> Session {
        let Value::Object(state) = json!({"n": 1, "s": "x", "list": [1]}) else { unreachable!() };
        let attributes = SessionAttributes {
            display_name: Some("Trip".into()),
            labels: [("team".to_owned(), "a".to_owned())].into(),
            expire_time_micros: None,
        };
        Session::from_storage(SessionKey::new("app", "u", "s").unwrap(), state, Vec::<crate::Event>::new(), 20)
            .created_at(10)
            .with_attributes(Some(Arc::new(attributes)))
    }

    #[test]
    fn every_condition_must_hold() {
        let s = session();
        assert!(SessionFilter::default().admits(&s));
        let f = |edit: fn(&mut SessionFilter)| {
            let mut filter = SessionFilter::default();
            edit(&mut filter);
            filter.admits(&s)
        };
        assert!(f(|f| f.display_name = Some("Trip".into())));
        assert!(!f(|f| f.display_name = Some("trip".into())));
        assert!(f(|f| f.labels = [("team".into(), "a".into())].into()));
        assert!(!f(|f| f.labels = [("team".into(), "b".into())].into()));
        assert!(f(|f| f.update_time = TimeRange::default().from(20).to(20)));
        assert!(!f(|f| f.update_time = TimeRange::default().from(21)));
        assert!(f(|f| f.create_time = TimeRange::default().to(10)));
        assert!(!f(|f| f.create_time = TimeRange::default().to(9)));
        assert!(f(|f| f.state = [("n".into(), json!(1.0))].into()));
        assert!(f(|f| f.state = [("s".into(), json!("x"))].into()));
        assert!(!f(|f| f.state = [("list".into(), json!(1))].into()), "an array is not its element");
        assert!(!f(|f| f.state = [("missing".into(), Value::Null)].into()), "absent is not null");
        assert!(TimeRange::default().from(5).to(4).is_empty());
    }
}
