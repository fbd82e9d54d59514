//! Finds ADK-Rust's published session contract (`tests/common/session_contract.rs` of the
//! adk-session package the workspace's `Cargo.lock` pins) in Cargo's registry sources, so that
//! the tests run it as ADK-Rust wrote it: nothing of it is kept in this repository.

use std::path::PathBuf;

fn main() {
    if let Err(why) = run() {
        eprintln!("ADK-Rust's session contract cannot be had: {why}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from).ok_or(format!("{name} is not set"));
    let lock_path = var("CARGO_MANIFEST_DIR")?.join("../../Cargo.lock");
    let lock = std::fs::read_to_string(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let version = locked_version(&lock, "adk-session").ok_or("Cargo.lock pins no adk-session")?;
    let cargo_home = var("CARGO_HOME").or_else(|_| var("HOME").map(|home| home.join(".cargo")))?;
    let sources = cargo_home.join("registry/src");
    let relative = format!("adk-session-{version}/tests/common/session_contract.rs");
    let contract = std::fs::read_dir(&sources)
        .map_err(|e| format!("{}: {e}", sources.display()))?
        .flatten()
        .map(|registry| registry.path().join(&relative))
        .find(|path| path.exists())
        .ok_or_else(|| format!("{relative} is not under {}", sources.display()))?;
    let text = std::fs::read_to_string(&contract).map_err(|e| format!("{}: {e}", contract.display()))?;
    let out = var("OUT_DIR")?.join("session_contract.rs");
    std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("cargo::rerun-if-changed={}", contract.display());
    println!("cargo::rerun-if-changed={}", lock_path.display());
    println!("cargo::rerun-if-changed=build.rs");
    Ok(())
}

/// The version `Cargo.lock` pins for `package`.
fn locked_version(lock: &str, package: &str) -> Option<String> {
    let name = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    lines.find(|line| *line == name)?;
    let version = lines.next()?.strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(version.to_owned())
}
