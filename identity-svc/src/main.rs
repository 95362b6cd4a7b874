//! identity-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.
//! `identity-svc bootstrap-operator NAME [ROLE,…|all]` instead registers one of a deployment's
//! first two admins (`identity.admin`, no lab role; `all` is every role but the lab roles) and
//! prints their credential once.

use identity_svc::{SERVICE_NAME, Settings};

/// The allocator of the binary (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments.first().map(String::as_str) == Some("bootstrap-operator") {
        return bootstrap(&arguments[1..]).await;
    }
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    identity_svc::run_from_env().await
}

async fn bootstrap(arguments: &[String]) -> anyhow::Result<()> {
    let (Some(name), roles) = (arguments.first(), arguments.get(1)) else {
        anyhow::bail!("usage: identity-svc bootstrap-operator NAME [ROLE,…|all]");
    };
    let roles: Vec<String> = roles
        .map(String::as_str)
        .unwrap_or("all")
        .split(',')
        .map(str::to_owned)
        .collect();
    let credential = identity_svc::bootstrap_operator(&Settings::from_env()?, name, &roles).await?;
    println!("{credential}");
    eprintln!(
        "operator {name} registered; the credential above is shown once (labctl reads it from LABCTL_CREDENTIAL)"
    );
    Ok(())
}
