//! One service of the mesh as its own process, for the end-to-end tests that run the mesh as
//! separate processes (`tests::processes`): `lab-process <gateway|identity-svc|catalog-svc|
//! orders-svc|payments-svc|shipping-svc|results-svc|webhooks-svc>` does exactly what that service's own
//! binary does (the same `run_from_env`), configured by the same environment variables. One
//! binary of the tests crate, so that cargo builds it for the tests (the services' own
//! binaries belong to other packages).

/// The allocator of the binary (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Some(service) = std::env::args().nth(1) else {
        anyhow::bail!("usage: lab-process SERVICE");
    };
    let _telemetry = platform::telemetry::init(&service);
    match service.as_str() {
        "gateway" => gateway::run_from_env().await,
        "identity-svc" => identity_svc::run_from_env().await,
        "catalog-svc" => catalog_svc::run_from_env().await,
        "orders-svc" => orders_svc::run_from_env().await,
        "payments-svc" => payments_svc::run_from_env().await,
        "shipping-svc" => shipping_svc::run_from_env().await,
        "results-svc" => results_svc::run_from_env().await,
        "webhooks-svc" => webhooks_svc::run_from_env().await,
        other => anyhow::bail!("unknown service {other}"),
    }
}
