#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Runtime tests: scripted agents over real session services, and the providers against local
//! mock servers.

mod artifacts;
mod callbacks;
mod compaction;
mod double_texting;
mod embeddings;
mod instructions;
mod memory;
mod providers;
mod rewind;
mod runs;
mod state;
mod support;
mod tools;
mod transfer;
mod workflows;
