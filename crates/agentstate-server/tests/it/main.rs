//! agentstate-server's integration tests: the router without a socket, and the `agentstate`
//! binary as a child process.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[cfg(feature = "cli")]
mod adk_import;
#[cfg(all(feature = "agents", feature = "cli"))]
mod artifact_routes;
#[cfg(feature = "cli")]
mod binary;
#[cfg(feature = "cli")]
mod browser;
#[cfg(all(feature = "agents", feature = "cli"))]
mod differential;
#[cfg(all(feature = "agents", feature = "cli"))]
mod double_texting;
#[cfg(feature = "cli")]
mod failover;
#[cfg(feature = "cli")]
mod go_module;
#[cfg(feature = "grpc")]
mod grpc;
mod history_routes;
mod inspector;
#[cfg(feature = "cli")]
mod java_project;
#[cfg(feature = "cli")]
mod js_package;
#[cfg(feature = "grpc")]
mod jwt;
mod list_filters;
#[cfg(feature = "cli")]
mod load;
#[cfg(feature = "cli")]
mod memory_bank;
mod memory_bank_routes;
#[cfg(all(feature = "agents", feature = "cli"))]
mod memory_embeddings;
mod memory_routes;
#[cfg(feature = "cli")]
mod outage;
#[cfg(feature = "cli")]
mod python_package;
mod routes;
mod routes_access;
mod routes_lifecycle;
#[cfg(all(feature = "agents", feature = "cli"))]
mod run;
#[cfg(feature = "cli")]
mod scale_out;
mod support;
#[cfg(all(feature = "cli", feature = "grpc"))]
mod tls;
#[cfg(all(feature = "cli", feature = "grpc"))]
mod traces;
#[cfg(feature = "cli")]
mod transfer;
mod vertex;
mod vertex_client;
mod vertex_routes;
mod vertex_v1;
