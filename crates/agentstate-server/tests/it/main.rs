//! agentstate-server's integration tests: the router without a socket, and the `agentstate`
//! binary as a child process.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod adk_import;
mod binary;
mod differential;
mod routes;
mod run;
mod scale_out;
mod transfer;
