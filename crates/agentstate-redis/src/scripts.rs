//! The server-side scripts, loaded once per process and run by hash (`EVALSHA`; the client loads
//! a script again when Redis answers `NOSCRIPT`, after a restart).

use std::sync::LazyLock;

use redis::Script;

/// Each script: `lua/lib.lua`'s helpers, then its own file `lua/<file>.lua`.
macro_rules! scripts {
    ($($name:ident = $file:literal),* $(,)?) => {$(
        pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(include_str!("lua/lib.lua"), include_str!(concat!("lua/", $file, ".lua"))))
        });
    )*};
}

scripts! {
    CREATE = "create", COMMIT = "commit", GET = "get", EVENTS = "events", SNAPSHOT = "snapshot",
    PUT_SNAPSHOTS = "put_snapshots", SWEEP = "sweep", ERASE = "erase", DROP = "drop",
    SWAP = "swap", REWRITE = "rewrite", ATTRIBUTES = "attributes", VIEW = "view",
}

/// The run lease scripts, each its own file alone.
macro_rules! lease_scripts {
    ($($name:ident = $file:literal),* $(,)?) => {$(
        pub(crate) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("lua/", $file, ".lua"))));
    )*};
}

lease_scripts! { LEASE_ACQUIRE = "lease_acquire", LEASE_RELEASE = "lease_release", LEASE_INTERRUPT = "lease_interrupt" }

/// The memory scripts: `lua/memory_lib.lua`'s helpers, then the script's own file.
macro_rules! memory_scripts {
    ($($name:ident = $file:literal),* $(,)?) => {$(
        pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(include_str!("lua/memory_lib.lua"), include_str!(concat!("lua/", $file, ".lua"))))
        });
    )*};
}

memory_scripts! {
    MEMORY_PUT = "memory_put", MEMORY_SEARCH = "memory_search", MEMORY_LIST = "memory_list",
    MEMORY_DELETE = "memory_delete", MEMORY_ERASE = "memory_erase", MEMORY_EXPIRE = "memory_expire",
    MEMORY_COUNT = "memory_count", MEMORY_FIND = "memory_find",
}

/// The artifact scripts: `lua/artifact_lib.lua`'s helpers, then the script's own file.
macro_rules! artifact_scripts {
    ($($name:ident = $file:literal),* $(,)?) => {$(
        pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(include_str!("lua/artifact_lib.lua"), include_str!(concat!("lua/", $file, ".lua"))))
        });
    )*};
}

artifact_scripts! {
    ARTIFACT_PUT = "artifact_put", ARTIFACT_GET = "artifact_get", ARTIFACT_VERSIONS = "artifact_versions",
    ARTIFACT_DELETE = "artifact_delete", ARTIFACT_CLEAR = "artifact_clear", ARTIFACT_PRUNE = "artifact_prune",
    ARTIFACT_COPY = "artifact_copy",
}
