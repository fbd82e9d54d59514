//! agentstate-sql's integration tests: the conformance suite and the model-based property test
//! on every dialect, against real databases (throwaway files, and throwaway databases on the
//! local PostgreSQL and MariaDB servers).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod durability;
mod interop;
mod mysql;
mod postgres;
mod schema;
mod servers;
mod sqlite;
