//! ADK for Java against this build of `agentstate serve` (`java/`, a Maven project with every
//! version pinned): `mvn test`, which runs ADK for Java's Agent Engine session client and its
//! Runner (against its InMemorySessionService) on SQLite, PostgreSQL and Redis. The artifacts come
//! from Maven Central (`.ci/setup-java` fetches them ahead).

use std::path::Path;
use std::process::Command;

#[test]
fn adk_for_java_passes_its_suite_against_the_server() {
    let project = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../java"));
    let out = Command::new("mvn")
        .args(["-B", "--no-transfer-progress", "-Dstyle.color=never", "test"])
        .current_dir(project)
        .env("AGENTSTATE_BIN", env!("CARGO_BIN_EXE_agentstate"))
        .env_remove("AGENTSTATE_URL")
        .output()
        .unwrap_or_else(|e| panic!("`mvn` could not start (is Maven installed?): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "mvn test (java/) failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let summary = stdout.lines().rev().find(|l| l.contains("Tests run:")).unwrap_or_default();
    assert!(summary.contains("Failures: 0, Errors: 0, Skipped: 0"), "{stdout}");
    assert!(!summary.contains("Tests run: 0,"), "{stdout}");
}
