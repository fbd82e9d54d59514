use std::path::PathBuf;
use std::sync::Arc;

use agentstate::{SessionService, SessionStore};
use agentstate_conformance::Alternating;
use agentstate_sql::SqlSessionService;

/// A fresh directory under the system temp dir, removed by the next CI run.
pub(crate) fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) async fn sqlite_file() -> Arc<dyn SessionService> {
    let url = format!("sqlite://{}/sessions.db", scratch_dir().display());
    Arc::new(SqlSessionService::connect(&url).await.unwrap())
}

async fn sqlite_memory() -> Arc<dyn SessionService> {
    Arc::new(SqlSessionService::connect("sqlite::memory:").await.unwrap())
}

mod file {
    agentstate_conformance::session_service_tests!(super::sqlite_file);
}

mod memory {
    agentstate_conformance::session_service_tests!(super::sqlite_memory);
}

#[test]
fn sqlite_agrees_with_the_model() {
    agentstate_conformance::check_against_model(sqlite_file, 48);
}

/// Two independent service instances on one database, used alternately: as two processes would.
pub(crate) async fn sqlite_two_instances() -> Arc<dyn SessionService> {
    let url = format!("sqlite://{}/sessions.db", scratch_dir().display());
    let a: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    let b: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    Arc::new(Alternating::new(vec![a, b]))
}

mod two_instances {
    agentstate_conformance::session_service_tests!(super::sqlite_two_instances);
}

#[test]
fn sqlite_two_instances_agree_with_the_model() {
    agentstate_conformance::check_against_model(sqlite_two_instances, 24);
}
