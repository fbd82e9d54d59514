//! ADK for Go against this build of `agentstate serve` (`go/`, module
//! `github.com/agentstate/agentstate/go`): `go test`, which runs ADK for Go's published session
//! suite through its Agent Engine client, its Runner against its in-memory service, 16 concurrent
//! Runners, and ADK for Go's database service beside agentstate, on SQLite, PostgreSQL and Redis;
//! and ADK for Go's Memory Bank service through an HTTPS proxy (`go/memorybank`).
//! The modules come from go.sum (`.ci/setup-go` downloads them ahead).

use std::path::Path;
use std::process::Command;

#[test]
fn adk_for_go_passes_its_suites_against_the_server() {
    let module = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../go"));
    let out = Command::new("go")
        .args(["test", "-count=1", "-v", "./..."])
        .current_dir(module)
        .env("AGENTSTATE_BIN", env!("CARGO_BIN_EXE_agentstate"))
        .env_remove("AGENTSTATE_ADDR")
        .output()
        .unwrap_or_else(|e| panic!("`go test` could not start (is Go installed?): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go test ./... (go/) failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("--- PASS: TestADKGoSessionSuite"), "{stdout}");
    assert!(stdout.contains("--- PASS: TestADKGoMemoryBankServiceOnAgentstate"), "{stdout}");
    assert!(!stdout.contains("--- SKIP"), "no test may be skipped here:\n{stdout}");
}
