#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Runtime tests: scripted agents over real session services, and the providers against local
//! mock servers.

mod providers;
mod runner;
mod support;
