//! The versions of the Agent Engine REST API served (`/{version}/…`): the same surface under
//! each, the version carried into the resource types and operation names it answers. A leaf
//! module: the router, the OpenAPI document and the error middleware all ask it.

/// The versions served.
pub(crate) const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The Agent Engine API version a path is under, if it is under one.
pub(crate) fn version_of(path: &str) -> Option<&'static str> {
    let first = path.strip_prefix('/')?.split('/').next()?;
    VERSIONS.into_iter().find(|v| *v == first)
}
