//! `spawn_service()`: identity-svc on a free port with a fresh database and a unique stream
//! prefix, and typed helpers for its gRPC API.

use platform::principal::roles;
use platform::tokens::testing::DevTokens;
use proto::identity as pb;
use proto::identity::identity_service_client::IdentityServiceClient;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

/// A running identity-svc.
pub struct TestService {
    pub url: String,
    pub stream_prefix: String,
    /// Tokens addressed to identity-svc.
    pub keys: DevTokens,
    _shutdown: tokio_util::sync::DropGuard,
}

/// identity-svc on `database_url` (fresh when `None`).
pub async fn spawn_service_on(database_url: Option<String>) -> TestService {
    let database_url = match database_url {
        Some(url) => url,
        None => platform::testing::fresh_database().await,
    };
    let stream_prefix = platform::testing::unique_stream_prefix();
    let settings =
        identity_svc::Settings::local(&database_url, &platform::testing::redis_url(), &stream_prefix);
    let application = identity_svc::Application::build(settings)
        .await
        .expect("identity-svc builds");
    let url = format!("http://{}", application.local_addr());
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    TestService {
        url,
        stream_prefix,
        keys: DevTokens::new(platform::mesh::IDENTITY_SVC),
        _shutdown: shutdown.drop_guard(),
    }
}

pub async fn spawn_service() -> TestService {
    spawn_service_on(None).await
}

impl TestService {
    pub async fn client(&self) -> IdentityServiceClient<Channel> {
        IdentityServiceClient::connect(self.url.clone()).await.unwrap()
    }

    /// `message` as an operator holding `identity.admin`.
    pub fn admin<T>(&self, message: T) -> tonic::Request<T> {
        platform::grpc::outgoing(message, &self.keys.staff("alice", &[roles::IDENTITY_ADMIN]))
    }

    /// A customer with one key holding `scopes`: (the key's record, its plaintext).
    pub async fn keyed_customer(&self, email: &str, scopes: &[&str]) -> (pb::ApiKey, String) {
        let mut client = self.client().await;
        let customer = client
            .create_customer(self.admin(pb::CreateCustomerRequest {
                name: "Acme".into(),
                email: email.into(),
            }))
            .await
            .unwrap()
            .into_inner()
            .customer
            .unwrap();
        let created = client
            .create_api_key(self.admin(pb::CreateApiKeyRequest {
                customer_id: customer.id,
                name: "ci".into(),
                scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
                spend_limit_cents: Some(50_000),
            }))
            .await
            .unwrap()
            .into_inner();
        (created.key.unwrap(), created.plaintext)
    }
}
