//! The server-side scripts, loaded once per process and run by hash (`EVALSHA`; the client loads
//! a script again when Redis answers `NOSCRIPT`, after a restart).

use std::sync::LazyLock;

use redis::Script;

/// A script: `lua/lib.lua`'s helpers, then the script's own file.
macro_rules! script {
    ($name:ident, $file:literal) => {
        pub(crate) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(concat!(include_str!("lua/lib.lua"), include_str!($file))));
    };
}

script!(CREATE, "lua/create.lua");
script!(COMMIT, "lua/commit.lua");
script!(GET, "lua/get.lua");
script!(EVENTS, "lua/events.lua");
script!(SNAPSHOT, "lua/snapshot.lua");
script!(PUT_SNAPSHOTS, "lua/put_snapshots.lua");
script!(SWEEP, "lua/sweep.lua");
script!(ERASE, "lua/erase.lua");
script!(DROP, "lua/drop.lua");
script!(EXPIRE, "lua/expire.lua");
script!(SWAP, "lua/swap.lua");
script!(REWRITE, "lua/rewrite.lua");
