//! agentstate-redis's integration tests, against the local Redis (`AGENTSTATE_TEST_REDIS`,
//! default `redis://127.0.0.1:6379/0`) under a key prefix of this run's own, and against Redis
//! servers the tests start themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod cluster;
mod conformance;
mod erasure;
mod expiry;
mod import;
mod memory_index;
mod restart;
mod servers;
