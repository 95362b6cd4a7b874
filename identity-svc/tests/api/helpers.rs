//! `spawn_app()`: identity-svc on a free port with a fresh database and a unique stream prefix,
//! and typed helpers for its gRPC API with a staff token.

use platform::principal::roles;
use platform::tokens::testing::DevTokens;
use proto::identity as pb;
use proto::identity::identity_service_client::IdentityServiceClient;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

/// A running identity-svc and what a test needs around it.
pub struct TestApp {
    pub url: String,
    pub database_url: String,
    pub stream_prefix: String,
    pub pool: sqlx::PgPool,
    /// Tokens addressed to identity-svc.
    pub keys: DevTokens,
    _shutdown: tokio_util::sync::DropGuard,
}

/// A customer with one API key.
pub struct KeyedCustomer {
    pub customer_id: String,
    pub key: pb::ApiKey,
    pub plaintext: String,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_on(platform::testing::fresh_database().await).await
}

/// identity-svc on an existing database (its first start migrates it).
pub async fn spawn_app_on(database_url: String) -> TestApp {
    let stream_prefix = platform::testing::unique_stream_prefix();
    let settings =
        identity_svc::Settings::local(&database_url, &platform::testing::redis_url(), &stream_prefix);
    let application = identity_svc::Application::build(settings)
        .await
        .expect("identity-svc builds");
    let url = format!("http://{}", application.local_addr());
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    TestApp {
        url,
        database_url,
        stream_prefix,
        pool,
        keys: DevTokens::new(platform::mesh::IDENTITY_SVC),
        _shutdown: shutdown.drop_guard(),
    }
}

impl TestApp {
    pub async fn identity(&self) -> IdentityServiceClient<Channel> {
        IdentityServiceClient::connect(self.url.clone()).await.unwrap()
    }

    pub fn staff_token(&self, roles: &[&str]) -> String {
        self.keys.staff("alice", roles)
    }

    /// `message` as an operator holding `identity.admin`.
    pub fn admin<T>(&self, message: T) -> tonic::Request<T> {
        platform::grpc::outgoing(message, &self.staff_token(&[roles::IDENTITY_ADMIN]))
    }

    pub async fn create_customer(&self, email: &str) -> pb::Customer {
        let request = pb::CreateCustomerRequest {
            name: "Acme Labs".into(),
            email: email.into(),
        };
        self.identity()
            .await
            .create_customer(self.admin(request))
            .await
            .unwrap()
            .into_inner()
            .customer
            .unwrap()
    }

    /// A new customer with a key holding `scopes` (spend limit 50,000 cents).
    pub async fn keyed_customer(&self, scopes: &[&str]) -> KeyedCustomer {
        let email = format!("{}@acme.example", uuid::Uuid::new_v4().simple());
        let customer = self.create_customer(&email).await;
        let request = pb::CreateApiKeyRequest {
            customer_id: customer.id.clone(),
            name: "agent".into(),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            spend_limit_cents: Some(50_000),
        };
        let created = self
            .identity()
            .await
            .create_api_key(self.admin(request))
            .await
            .unwrap()
            .into_inner();
        KeyedCustomer {
            customer_id: customer.id,
            key: created.key.unwrap(),
            plaintext: created.plaintext,
        }
    }
}
