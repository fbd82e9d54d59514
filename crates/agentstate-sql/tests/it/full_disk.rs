//! SQLite on a small filesystem of its own (a size-limited tmpfs the test mounts): when the disk
//! fills in the middle of a write burst, appends fail with a retryable error that says so,
//! nothing acknowledged is lost, the file passes `PRAGMA integrity_check`, and writes succeed
//! again once space is freed. A read-only one refuses to start with an error naming the file.
//!
//! Mounting needs root (CI runs as root), or `sudo` without a password.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentstate::{Content, CreateSession, Error, Event, GetSessionConfig, SessionService};
use agentstate_sql::SqlStore;

use crate::sqlite::scratch_dir;

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

fn privileged(args: &[&str]) -> std::process::ExitStatus {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut command = if root { Command::new(args[0]) } else { Command::new("sudo") };
    if !root {
        command.args(["-n", args[0]]);
    }
    command.args(&args[1..]).status().unwrap_or_else(|e| panic!("running {args:?}: {e}"))
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = scratch_dir().join("small-disk");
        std::fs::create_dir_all(&dir).unwrap();
        let options = format!("size={size},mode=0777");
        let path = dir.to_str().unwrap();
        let status = privileged(&["mount", "-t", "tmpfs", "-o", &options, "tmpfs", path]);
        assert!(status.success(), "mounting a tmpfs at {path} needs root (or sudo without a password): {status}");
        Self(dir)
    }

    fn remount_read_only(&self) {
        let status = privileged(&["mount", "-o", "remount,ro", self.0.to_str().unwrap()]);
        assert!(status.success(), "remounting {} read-only: {status}", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = privileged(&["umount", "-l", self.0.to_str().unwrap()]);
    }
}

fn event(i: usize) -> Event {
    // About 2 KiB of text, so the disk fills within a few hundred appends.
    Event::new(format!("inv-{i}"))
        .author("agent")
        .content(Content::text("model", format!("{i:04} {}", "x".repeat(2000))))
}

fn integrity(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_full_disk_fails_appends_retryably_and_loses_nothing() {
    full_disk("");
}

/// The same where commits run on the caller's thread when the writer is idle.
#[test]
fn a_full_disk_fails_appends_retryably_and_loses_nothing_with_synchronous_normal() {
    full_disk("?synchronous=normal");
}

fn full_disk(options: &str) {
    let disk = Tmpfs::mount("4m");
    let db = disk.0.join("sessions.db");
    // Most of the space goes to a file that is removed later to free it.
    let filler = disk.0.join("filler");
    std::fs::write(&filler, vec![7u8; 3 << 20]).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let acked = runtime.block_on(async {
        let service =
            SessionService::new(SqlStore::connect(&format!("sqlite://{}{options}", db.display())).await.unwrap());
        let mut session = service.create_session(CreateSession::new("disk", "u").id("s")).await.unwrap();
        let mut acked = Vec::new();
        let mut refused = 0;
        for i in 0..5000 {
            match service.append_event(&mut session, event(i)).await {
                Ok(stored) => acked.push(stored.id),
                Err(e) => {
                    assert!(e.is_retryable(), "a full disk is retryable: {e}");
                    assert!(matches!(e, Error::Backend { .. }), "{e:?}");
                    assert!(e.to_string().contains("disk is full"), "the error says why: {e}");
                    refused += 1;
                    if refused == 20 {
                        break;
                    }
                }
            }
        }
        assert_eq!(refused, 20, "the disk never filled ({} appends acknowledged)", acked.len());
        assert!(acked.len() > 10, "only {} appends before the disk filled", acked.len());

        // Space freed: the same service writes again, without a restart.
        std::fs::remove_file(&filler).unwrap();
        for i in 5000..5020 {
            let stored =
                service.append_event(&mut session, event(i)).await.expect("writes succeed after space is freed");
            acked.push(stored.id);
        }
        acked
    });
    // A fresh connection sees every acknowledged event, and nothing else, in order.
    runtime.block_on(async {
        let service = SessionService::new(SqlStore::connect(&format!("sqlite://{}", db.display())).await.unwrap());
        let key = agentstate::SessionKey::new("disk", "u", "s").unwrap();
        let session = service.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
        let stored: Vec<&str> = session.events().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(stored, acked.iter().map(String::as_str).collect::<Vec<_>>());
    });
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn a_read_only_database_is_refused_at_start_naming_the_file() {
    let disk = Tmpfs::mount("4m");
    let db = disk.0.join("sessions.db");
    let url = format!("sqlite://{}", db.display());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let service = SessionService::new(SqlStore::connect(&url).await.unwrap());
        service.create_session(CreateSession::new("ro", "u").id("s")).await.unwrap();
    });
    disk.remount_read_only();
    let Err(refused) = runtime.block_on(SqlStore::connect(&url)) else { panic!("a read-only database is refused") };
    let message = refused.to_string();
    assert!(message.contains(&db.display().to_string()), "the error names the file: {message}");
    assert!(message.contains("read-only"), "the error says why: {message}");
    // A directory that does not exist: the same, naming the path.
    let missing = disk.0.join("no/such/dir/sessions.db");
    let Err(refused) = runtime.block_on(SqlStore::connect(&format!("sqlite://{}", missing.display()))) else {
        panic!("a missing directory is refused")
    };
    assert!(refused.to_string().contains(&missing.display().to_string()), "{refused}");
}
