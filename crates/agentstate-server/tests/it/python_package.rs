//! The Python package (`python/`, `agentstate-adk`) against this build of `agentstate serve`: its
//! pytest suite, run with the virtualenv `.ci/setup-adk` makes (google-adk 2.13.0, the package
//! installed editable, pytest).

use std::process::Command;

#[test]
fn the_python_package_passes_its_suite() {
    let python = agentstate_conformance::reference::adk_python();
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/tests");
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", tests])
        .env("AGENTSTATE_BIN", env!("CARGO_BIN_EXE_agentstate"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pytest python/tests failed (run `bash .ci/setup-adk` to install the package and pytest):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed"), "{stdout}");
}
