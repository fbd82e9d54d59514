//! The repository's own tasks (`cargo xtask …`, the cargo-xtask convention).
//!
//! `cargo xtask dist` builds what users install without Rust into a flat `target/dist/`:
//! - `agentstate_server-<v>-py3-none-manylinux_2_34_x86_64.whl`: the server binary in a wheel
//!   (maturin, `bindings = "bin"`), so `pip install agentstate-server` puts `agentstate` on PATH;
//! - `agentstate_adk-<v>-py3-none-any.whl`: the Python client, its `server` extra requiring the
//!   wheel above at the same version;
//! - `agentstate-adk-<v>.tgz` (the TypeScript client, with a launcher named `agentstate`) and
//!   `agentstate-adk-linux-x64-<v>.tgz` (the binary, taken by the first through
//!   `optionalDependencies`);
//! - `agentstate-<v>-x86_64-unknown-linux-gnu.tar.gz`: the binary, README.md and LICENSE;
//! - `SHA256SUMS` of every other file, in `sha256sum`'s format.
//!
//! One binary goes everywhere (built once, with paths remapped and the commit's time as
//! `SOURCE_DATE_EPOCH`, so two builds of one commit give the same bytes); the tools it needs from
//! PyPI (maturin, build) go into a virtualenv under `target/`.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use clap::{Parser, Subcommand};
use sha2::{Digest as _, Sha256};

#[derive(Parser)]
#[command(about = "agentstate's repository tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Builds the wheels, the npm tarballs and the release archive into target/dist/.
    Dist {
        /// Build from a tree with uncommitted changes (the result then names no commit).
        #[arg(long)]
        allow_dirty: bool,
        /// The cargo profile of the binary. `release` is what users get; `dev` reuses the debug
        /// build of `cargo test` (CI's install test, where what is checked is the packaging).
        #[arg(long, value_enum, default_value_t = Profile::Release)]
        profile: Profile,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Profile {
    Release,
    Dev,
}

/// Pinned so that two runs use the same tools.
const MATURIN: &str = "maturin==1.16.0";
const BUILD: &str = "build==1.6.1";
const HATCHLING: &str = "hatchling==1.33.0";
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The oldest glibc the binary allows, built on this machine (Debian 12).
const MANYLINUX: &str = "manylinux_2_34";

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Dist { allow_dirty, profile } => dist(allow_dirty, profile),
    }
}

/// The repository's root (xtask lives one level down).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn step(what: &str) {
    eprintln!("\n==> {what}");
}

/// Runs `command`, failing with its name and status; its output goes to ours.
fn run(command: &mut Command) -> anyhow::Result<()> {
    let shown = format!("{command:?}");
    let status = command.status().with_context(|| format!("starting {shown}"))?;
    ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}

/// Runs `command` and answers what it printed.
fn output(command: &mut Command) -> anyhow::Result<String> {
    let shown = format!("{command:?}");
    let out = command.output().with_context(|| format!("starting {shown}"))?;
    ensure!(out.status.success(), "{shown} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Every tool the build runs, checked before anything starts.
fn check_tools() -> anyhow::Result<()> {
    let mut missing = Vec::new();
    for (tool, why) in [
        ("git", "the commit's time and a clean tree"),
        ("python3", "a virtualenv for maturin and build (python3 with venv and pip)"),
        ("npm", "the npm tarballs (Node 20 or later)"),
    ] {
        if Command::new(tool).arg("--version").output().is_err() {
            missing.push(format!("{tool}: {why}"));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        bail!("cargo xtask dist needs tools this machine lacks:\n  {}", missing.join("\n  "))
    }
}

fn dist(allow_dirty: bool, profile: Profile) -> anyhow::Result<()> {
    let root = root();
    check_tools()?;
    let dirty = output(Command::new("git").args(["status", "--porcelain"]).current_dir(&root))?;
    if !dirty.is_empty() && !allow_dirty {
        bail!("the tree has uncommitted changes (commit them, or pass --allow-dirty):\n{dirty}");
    }
    let version = workspace_version(&root)?;
    same_version_everywhere(&root, &version)?;
    let epoch = output(Command::new("git").args(["log", "-1", "--format=%ct"]).current_dir(&root))?;
    let dist = root.join("target/dist");
    if dist.exists() {
        fs::remove_dir_all(&dist).with_context(|| format!("emptying {}", dist.display()))?;
    }
    fs::create_dir_all(&dist)?;

    step(&format!("tools: {MATURIN}, {BUILD}, {HATCHLING} (target/dist-tools)"));
    let python = tools(&root)?;

    step(&format!("the server's wheel and binary (agentstate {version}, {MANYLINUX})"));
    // maturin builds the binary (`cargo build`) and wheels it; the archive and npm take the same
    // file.
    let mut maturin = Command::new(&python);
    maturin
        .args(["-m", "maturin", "build", "--locked", "--strip", "--compatibility", MANYLINUX, "--out"])
        .arg(&dist)
        .env("SOURCE_DATE_EPOCH", &epoch)
        .current_dir(root.join("packaging/agentstate-server"));
    let built = match profile {
        Profile::Release => {
            let home = std::env::var("HOME").unwrap_or_default();
            let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
            // The same bytes from any checkout: no absolute paths in the binary, the commit's time.
            let rustflags =
                format!("--remap-path-prefix={}=/agentstate --remap-path-prefix={cargo_home}=/cargo", root.display());
            run(maturin.arg("--release").env("RUSTFLAGS", &rustflags).env("CARGO_INCREMENTAL", "0"))?;
            "release"
        }
        // The flags of `cargo test`'s build, so that its artifacts serve.
        Profile::Dev => {
            run(&mut maturin)?;
            "debug"
        }
    };
    let binary = target_dir(&root)?.join(built).join("agentstate");
    let reported = output(Command::new(&binary).arg("--version"))?;
    ensure!(reported.ends_with(&version), "the binary says {reported:?}, the workspace {version}");

    step("the client's wheel (agentstate-adk, extra `server`)");
    run(Command::new(&python)
        .args(["-m", "build", "--wheel", "--no-isolation", "--outdir"])
        .arg(&dist)
        .arg(root.join("python"))
        .env("SOURCE_DATE_EPOCH", &epoch))?;

    step("the npm tarballs (agentstate-adk, agentstate-adk-linux-x64)");
    npm(&root, &dist, &binary, &version)?;

    step("the release archive");
    let archive = dist.join(format!("agentstate-{version}-{TARGET}.tar.gz"));
    archive_to(&archive, &format!("agentstate-{version}-{TARGET}"), &binary, &root, epoch.parse()?)?;

    step("SHA256SUMS");
    let sums = checksums(&dist)?;
    fs::write(dist.join("SHA256SUMS"), &sums)?;
    eprint!("{sums}");
    eprintln!("\ndone: {}", dist.display());
    Ok(())
}

/// Where cargo (and maturin through it) builds: `target/` unless `CARGO_TARGET_DIR` or a cargo
/// config says otherwise, as `cargo metadata` answers.
fn target_dir(root: &Path) -> anyhow::Result<PathBuf> {
    let metadata =
        output(Command::new("cargo").args(["metadata", "--format-version", "1", "--no-deps"]).current_dir(root))?;
    let metadata: serde_json::Value = serde_json::from_str(&metadata)?;
    metadata["target_directory"].as_str().map(PathBuf::from).context("cargo metadata names no target_directory")
}

/// `[workspace.package] version` of the root Cargo.toml.
fn workspace_version(root: &Path) -> anyhow::Result<String> {
    let manifest: toml::Table = fs::read_to_string(root.join("Cargo.toml"))?.parse()?;
    manifest
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("version"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
        .context("no [workspace.package] version in Cargo.toml")
}

/// The Python and npm packages say the workspace's version, and the client's `server` extra
/// pins the server wheel of that version.
fn same_version_everywhere(root: &Path, version: &str) -> anyhow::Result<()> {
    let python: toml::Table = fs::read_to_string(root.join("python/pyproject.toml"))?.parse()?;
    let project = python.get("project").context("python/pyproject.toml has no [project]")?;
    let said = project.get("version").and_then(toml::Value::as_str);
    ensure!(said == Some(version), "python/pyproject.toml says version {said:?}, the workspace {version}");
    let server = project.get("optional-dependencies").and_then(|o| o.get("server")).and_then(toml::Value::as_array);
    let pinned = format!("agentstate-server=={version}");
    ensure!(
        server.is_some_and(|s| s.iter().any(|d| d.as_str() == Some(&pinned))),
        "python/pyproject.toml's extra `server` must require {pinned}"
    );
    let js: serde_json::Value = serde_json::from_str(&fs::read_to_string(root.join("js/package.json"))?)?;
    ensure!(js["version"] == version, "js/package.json says version {}, the workspace {version}", js["version"]);
    Ok(())
}

/// A virtualenv holding the pinned Python tools; its interpreter.
fn tools(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/dist-tools");
    let python = venv.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    run(Command::new(&python).args(["-m", "pip", "install", "--quiet", MATURIN, BUILD, HATCHLING]))?;
    Ok(python)
}

/// The platform package holding the binary, and the client with its launcher, packed.
fn npm(root: &Path, dist: &Path, binary: &Path, version: &str) -> anyhow::Result<()> {
    let stage = root.join("target/dist-stage/npm");
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    // The platform package: its binary, for Linux on x64 only.
    let platform = stage.join("agentstate-adk-linux-x64");
    fs::create_dir_all(platform.join("bin"))?;
    fs::copy(binary, platform.join("bin/agentstate"))?;
    let manifest = serde_json::json!({
        "name": "agentstate-adk-linux-x64",
        "version": version,
        "description": "The agentstate server binary for Linux x64, used by agentstate-adk's `agentstate` command.",
        "license": "Apache-2.0",
        "os": ["linux"],
        "cpu": ["x64"],
        "files": ["bin"],
        "preferUnplugged": true,
    });
    fs::write(platform.join("package.json"), serde_json::to_string_pretty(&manifest)? + "\n")?;
    fs::copy(root.join("LICENSE"), platform.join("LICENSE"))?;

    // The client: built, then its manifest given the launcher and the platform package.
    let js = root.join("js");
    run(Command::new("npm").args(["run", "--silent", "build"]).current_dir(&js))?;
    let client = stage.join("agentstate-adk");
    for dir in ["dist", "src", "bin"] {
        copy_tree(&js.join(dir), &client.join(dir))?;
    }
    fs::copy(js.join("README.md"), client.join("README.md"))?;
    fs::copy(root.join("LICENSE"), client.join("LICENSE"))?;
    let mut manifest: serde_json::Value = serde_json::from_str(&fs::read_to_string(js.join("package.json"))?)?;
    let object = manifest.as_object_mut().context("js/package.json is not an object")?;
    for field in ["devDependencies", "overrides", "scripts"] {
        object.remove(field);
    }
    object.insert("bin".into(), serde_json::json!({ "agentstate": "bin/agentstate.js" }));
    object.insert("files".into(), serde_json::json!(["dist", "src", "bin"]));
    object.insert("optionalDependencies".into(), serde_json::json!({ "agentstate-adk-linux-x64": version }));
    fs::write(client.join("package.json"), serde_json::to_string_pretty(&manifest)? + "\n")?;

    for package in [&platform, &client] {
        run(Command::new("npm").args(["pack", "--silent", "--pack-destination"]).arg(dist).current_dir(package))?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A gzipped tar of `top/` holding the binary, README.md and LICENSE, with fixed times and owners.
fn archive_to(archive: &Path, top: &str, binary: &Path, root: &Path, epoch: u64) -> anyhow::Result<()> {
    let file = fs::File::create(archive)?;
    // No name and time in the gzip header either: the same bytes every time.
    let gzip = flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::best());
    let mut tar = tar::Builder::new(gzip);
    for (name, path, mode) in [
        ("agentstate", binary.to_path_buf(), 0o755),
        ("README.md", root.join("README.md"), 0o644),
        ("LICENSE", root.join("LICENSE"), 0o644),
    ] {
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_mtime(epoch);
        header.set_uid(0);
        header.set_gid(0);
        header.set_cksum();
        tar.append_data(&mut header, format!("{top}/{name}"), bytes.as_slice())?;
    }
    tar.into_inner()?.finish()?.flush()?;
    Ok(())
}

/// `sha256sum`'s lines for every file of `dist`, by name.
fn checksums(dist: &Path) -> anyhow::Result<String> {
    let mut names: Vec<String> = fs::read_dir(dist)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.retain(|n| n != "SHA256SUMS");
    names.sort();
    let mut sums = String::new();
    for name in names {
        let digest = Sha256::digest(fs::read(dist.join(&name))?);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(sums, "{hex}  {name}")?;
    }
    Ok(sums)
}
