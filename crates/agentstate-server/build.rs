//! Compiles the gRPC protos (`proto/`) with protox, a protobuf compiler written in Rust, so a
//! fresh machine needs no `protoc`: the messages and services with prost and tonic, and their
//! proto3 JSON form (the REST surface's) with pbjson.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("CARGO_FEATURE_GRPC").is_none() {
        return Ok(());
    }
    println!("cargo:rerun-if-changed=proto");
    let files = [
        "google/cloud/aiplatform/v1beta1/session_service.proto",
        "google/cloud/aiplatform/v1beta1/memory_bank_service.proto",
        "google/longrunning/operations.proto",
    ];
    let descriptors = protox::compile(files, ["proto"])?;
    let bytes = prost::Message::encode_to_vec(&descriptors);
    tonic_prost_build::configure()
        .build_transport(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(descriptors)?;
    pbjson_build::Builder::new()
        .register_descriptors(&bytes)?
        .extern_path(".google.protobuf", "::pbjson_types")
        .ignore_unknown_fields()
        .build(&[".google.cloud.aiplatform.v1beta1"])?;
    Ok(())
}
