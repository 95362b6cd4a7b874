//! `spawn_app()`: identity-svc on a free port with a fresh database and a unique stream prefix,
//! called through `platform::testing::identity` (customers and keys as an admin, shared with the
//! gateway's tests); `spawn_production()`: identity-svc outside development mode; and the
//! staff-token request the operator tests send.

use platform::testing::identity::IdentityAdmin;
use platform::tokens::SigningKey;
use proto::identity as pb;
use proto::identity::identity_service_client::IdentityServiceClient;
use tokio_util::sync::{CancellationToken, DropGuard};
use tonic::transport::Channel;

/// A running identity-svc and what a test needs around it.
pub struct TestApp {
    /// Its API as an admin calls it.
    pub identity: IdentityAdmin,
    pub database_url: String,
    pub stream_prefix: String,
    pub pool: sqlx::PgPool,
    _shutdown: DropGuard,
}

impl TestApp {
    /// Rotates the credential of the operator `name` as an admin; returns the new credential.
    pub async fn rotate_credential(&self, name: &str) -> String {
        let request = self
            .identity
            .admin(pb::RotateOperatorCredentialRequest { name: name.into() });
        let mut client = self.identity.client().await;
        let rotated = client.rotate_operator_credential(request).await.unwrap();
        rotated.into_inner().credential
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_on(platform::testing::fresh_database().await).await
}

/// identity-svc on an existing database (its first start migrates it).
pub async fn spawn_app_on(database_url: String) -> TestApp {
    let stream_prefix = platform::testing::unique_stream_prefix();
    let settings =
        identity_svc::Settings::local(&database_url, &platform::testing::redis_url(), &stream_prefix);
    let (url, shutdown) = serve(settings).await;
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    TestApp {
        identity: IdentityAdmin::new(url),
        database_url,
        stream_prefix,
        pool,
        _shutdown: shutdown,
    }
}

/// identity-svc outside development mode, as a deployment runs it; stops when dropped.
pub struct Production {
    pub url: String,
    /// The key it signs staff tokens with (trusted by itself, as `identity-svc`).
    pub signing_key: SigningKey,
    _shutdown: DropGuard,
}

impl Production {
    pub async fn client(&self) -> IdentityServiceClient<Channel> {
        IdentityServiceClient::connect(self.url.clone()).await.unwrap()
    }
}

/// identity-svc with a real pepper and signing key (development mode off) on `database_url`.
pub async fn spawn_production(database_url: &str, stream_prefix: &str) -> Production {
    let (signing_key, private) = SigningKey::generate("identity-1");
    let mut settings =
        identity_svc::Settings::local(database_url, &platform::testing::redis_url(), stream_prefix);
    settings.common.dev_mode = false;
    settings.api_key_pepper = "a-real-pepper-of-this-deployment".to_owned().into();
    settings.common.token_signing_key = Some(private);
    settings.common.token_trusted_keys = Some(
        serde_json::json!({ "keys": [signing_key.public_jwk(platform::mesh::IDENTITY_SVC)] }).to_string(),
    );
    let (url, shutdown) = serve(settings).await;
    Production {
        url,
        signing_key,
        _shutdown: shutdown,
    }
}

/// Builds identity-svc with `settings` and serves it until the guard is dropped: its URL.
async fn serve(settings: identity_svc::Settings) -> (String, DropGuard) {
    let application = identity_svc::Application::build(settings)
        .await
        .expect("identity-svc builds");
    let url = format!("http://{}", application.local_addr());
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    (url, shutdown.drop_guard())
}

/// A request for a staff token addressed to `audience` with `roles`, presenting `credential`.
pub fn issue(credential: &str, audience: &str, roles: &[&str]) -> pb::IssueStaffTokenRequest {
    pb::IssueStaffTokenRequest {
        credential: credential.into(),
        audience: audience.into(),
        roles: roles.iter().map(|role| (*role).to_owned()).collect(),
    }
}
