//! gateway process: telemetry, settings, build, serve REST and the internal operations gRPC
//! until SIGTERM or SIGINT. (Registering a deployment's first admins moved to identity-svc:
//! `identity-svc bootstrap-operator`.)

/// The allocator of the binary (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(gateway::SERVICE_NAME);
    gateway::run_from_env().await
}
