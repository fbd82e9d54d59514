//! Run leases on PostgreSQL and MySQL: the same statements' files in both dialects
//! (`lease_*.sql`), read and answered by the same code, written once as a macro each dialect's
//! `ops` module expands next to its own `sql!` (as [`crate::memories`] is).

use agentstate::store::LeaseState;

/// Who holds a lease after `holder` asked for it, from the row `lease_get.sql` read (holder,
/// until, interruptions); `None` when there was none (released between the two statements: ask
/// again).
pub(crate) fn lease_state(holder: &str, found: Option<(String, i64, i64)>) -> Option<LeaseState> {
    let (current, until_micros, interrupts) = found?;
    Some(if current == holder {
        LeaseState::Held { interrupt_requested: interrupts > 0 }
    } else {
        LeaseState::Busy { holder: current, until_micros }
    })
}

/// Expands to a module `leases` with the lease operations, as functions of a `Pool` of `$db`.
macro_rules! lease_operations {
    ($db:ty) => {
        /// Run leases (see [`crate::leases`]).
        pub(crate) mod leases {
            use agentstate::{Result, SessionKey};
            use sqlx::Row as _;

            use $crate::pool::{keyed, sqlx_error};

            type Pool = sqlx::Pool<$db>;

            /// Takes or renews a run lease, and reads who holds it after: in the same statement
            /// where the dialect answers rows from an upsert (PostgreSQL), else by `lease_get`.
            /// Asked again when a concurrent run's statement deadlocked this one or released the
            /// lease in between.
            pub(crate) async fn acquire(
                pool: &Pool,
                request: &agentstate::store::LeaseRequest,
            ) -> Result<agentstate::store::LeaseState> {
                let failed = |e| sqlx_error("taking a run lease", e);
                let mut last = None;
                for _ in 0..4 {
                    let taken = keyed(sql!("lease_acquire"), &request.key)
                        .bind(&request.holder)
                        .bind(request.until_micros)
                        .bind(request.now_micros)
                        .fetch_optional(pool)
                        .await
                        .map_err(failed);
                    let row = match taken {
                        Err(e) if e.is_retryable() => {
                            last = Some(e);
                            continue;
                        }
                        Ok(Some(row)) => Some(row),
                        Ok(None) => {
                            keyed(sql!("lease_get"), &request.key).fetch_optional(pool).await.map_err(failed)?
                        }
                        Err(e) => return Err(e),
                    };
                    let found = row
                        .map(|r| {
                            let interrupts: i32 = r.try_get("interrupts")?;
                            Ok::<_, sqlx::Error>((
                                r.try_get("holder")?,
                                r.try_get("until_micros")?,
                                i64::from(interrupts),
                            ))
                        })
                        .transpose()
                        .map_err(failed)?;
                    if let Some(state) = $crate::leases::lease_state(&request.holder, found) {
                        return Ok(state);
                    }
                }
                Err(last.unwrap_or_else(|| agentstate::Error::Backend {
                    message: "taking a run lease failed: it was given back and taken again each time".into(),
                    retryable: true,
                    source: None,
                }))
            }

            /// Gives a run lease back if `holder` holds it.
            pub(crate) async fn release(pool: &Pool, key: &SessionKey, holder: &str) -> Result<bool> {
                let done = keyed(sql!("lease_release"), key)
                    .bind(holder)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("giving a run lease back", e))?;
                Ok(done.rows_affected() > 0)
            }

            /// Asks the holder of a live run lease to stop.
            pub(crate) async fn interrupt(pool: &Pool, key: &SessionKey, now_micros: i64) -> Result<bool> {
                let done = keyed(sql!("lease_interrupt"), key)
                    .bind(now_micros)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("interrupting a run", e))?;
                Ok(done.rows_affected() > 0)
            }
        }
    };
}

pub(crate) use lease_operations;
