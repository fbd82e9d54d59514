//! SQLite: a file of its own for every service (two instances share one), and the in-memory
//! database.

use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed by the next CI run.
pub(crate) fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn file_url() -> String {
    format!("sqlite://{}/sessions.db", scratch_dir().display())
}

mod file {
    sql_backend_tests!(url: super::file_url(), model_cases: 48, two_instances: 24);
}

mod memory {
    sql_backend_tests!(url: "sqlite::memory:", model_cases: 48);
}
