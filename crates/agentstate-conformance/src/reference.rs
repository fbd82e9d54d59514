//! The reference implementation, ADK for Python (google-adk 2.13.0), for the tests that run it
//! next to agentstate: its Python comes from `AGENTSTATE_ADK_PYTHON`, else from the virtualenv
//! `.ci/setup-adk` makes at the workspace root (`.venv-adk`).
//!
//! For tests: a missing interpreter panics with the command that installs it.

use std::path::PathBuf;

/// The Python interpreter that has google-adk 2.13.0 installed.
pub fn adk_python() -> PathBuf {
    let path = std::env::var_os("AGENTSTATE_ADK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv-adk/bin/python")));
    assert!(path.exists(), "{} is missing: run `bash .ci/setup-adk` to install google-adk 2.13.0", path.display());
    path
}
