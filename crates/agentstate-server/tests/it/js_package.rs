//! The TypeScript package (`js/`, `agentstate-adk` for ADK for TypeScript) against this build of
//! `agentstate serve`: its `node --test` suite, after `npm run build` (tsc --strict), with the
//! packages `.ci/setup-js` installs (@google/adk 2.0, @google/adk-devtools) and, for the tests that
//! cross languages, the virtualenv `.ci/setup-adk` makes (ADK for Python with `agentstate-adk`).

use std::path::Path;
use std::process::Command;

#[test]
fn the_typescript_package_builds_and_passes_its_suite() {
    let js = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../js"));
    assert!(
        js.join("node_modules/@google/adk").exists(),
        "js/node_modules is missing: run `bash .ci/setup-js` to install the package's dependencies"
    );
    let build = Command::new("npm").args(["run", "--silent", "build"]).current_dir(js).output().unwrap();
    assert!(
        build.status.success(),
        "npm run build (tsc --strict) failed:\n{}{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let python = agentstate_conformance::reference::adk_python();
    let out = Command::new("node")
        .args(["--test", "--test-reporter=spec", "test/"])
        .current_dir(js)
        .env("AGENTSTATE_BIN", env!("CARGO_BIN_EXE_agentstate"))
        .env("AGENTSTATE_ADK_PYTHON", &python)
        .env_remove("AGENTSTATE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node --test (js/) failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("ℹ pass") && stdout.contains("ℹ fail 0"), "{stdout}");
    assert!(!stdout.contains("ℹ skipped ") || stdout.contains("ℹ skipped 0"), "no test may be skipped here:\n{stdout}");
}
