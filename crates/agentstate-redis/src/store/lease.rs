//! The Redis store's run leases: one hash per user (`{app}:l:{user}`, session id → lease), each
//! call one script, so of runs on several servers asking at once exactly one takes a free lease.
//! A lease given back leaves nothing; one a crashed server held stays as a lapsed entry until
//! the session's next run takes it over or the user is erased.

use agentstate::store::{LeaseRequest, LeaseState, LeaseStore};
use agentstate::{Result, SessionKey};
use async_trait::async_trait;

use super::backend;
use crate::RedisStore;
use crate::keys::AppKeys;
use crate::scripts;

impl RedisStore {
    fn leases_of(&self, key: &SessionKey) -> String {
        AppKeys::new(&self.prefix, key.app_name()).leases(key.user_id())
    }
}

#[async_trait]
impl LeaseStore for RedisStore {
    async fn acquire_lease(&self, request: &LeaseRequest) -> Result<LeaseState> {
        let (holder, until_micros, interrupts): (String, i64, i64) = scripts::LEASE_ACQUIRE
            .key(self.leases_of(&request.key))
            .arg(request.key.session_id())
            .arg(&request.holder)
            .arg(request.until_micros)
            .arg(request.now_micros)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("take a run lease", e))?;
        Ok(if holder == request.holder {
            LeaseState::Held { interrupt_requested: interrupts > 0 }
        } else {
            LeaseState::Busy { holder, until_micros }
        })
    }

    async fn release_lease(&self, key: &SessionKey, holder: &str) -> Result<bool> {
        let released: i64 = scripts::LEASE_RELEASE
            .key(self.leases_of(key))
            .arg(key.session_id())
            .arg(holder)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("give a run lease back", e))?;
        Ok(released > 0)
    }

    async fn interrupt_lease(&self, key: &SessionKey, now_micros: i64) -> Result<bool> {
        let interrupted: i64 = scripts::LEASE_INTERRUPT
            .key(self.leases_of(key))
            .arg(key.session_id())
            .arg(now_micros)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("interrupt a run", e))?;
        Ok(interrupted > 0)
    }
}
