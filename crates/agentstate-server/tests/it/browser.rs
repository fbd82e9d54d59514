//! The inspector in a real browser: `ui-tests/inspector.test.mjs` (Debian's chromium driven by
//! playwright-core) against this build of `agentstate serve`. `.ci/setup-browser` installs both.

use std::path::Path;
use std::process::Command;

#[test]
fn the_inspector_works_in_chromium() {
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui-tests");
    let browser = std::env::var("AGENTSTATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&browser).exists() && Path::new(tests).join("node_modules/playwright-core").exists(),
        "chromium ({browser}) and playwright-core (ui-tests/node_modules) are needed: run `bash .ci/setup-browser`"
    );
    let out = Command::new("node")
        .arg("inspector.test.mjs")
        .current_dir(tests)
        .env("AGENTSTATE_BIN", env!("CARGO_BIN_EXE_agentstate"))
        .output()
        .expect("node is installed (`bash .ci/setup-browser`)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the browser tests failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("all passed") && !stdout.contains("not ok"), "{stdout}");
}
