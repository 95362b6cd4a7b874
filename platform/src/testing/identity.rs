//! identity-svc's API as a test's admin calls it: customers and their API keys created by the
//! operator [`ADMIN_OPERATOR`] holding `identity.admin`, with development staff tokens. The
//! gateway's tests (which run identity-svc beside a gateway) and identity-svc's own share it.

use crate::principal::roles;
use crate::tokens::testing::DevTokens;
use proto::identity as pb;
use proto::identity::identity_service_client::IdentityServiceClient;
use tonic::transport::Channel;

/// The operator a test's admin requests name (so that audit columns can be checked).
pub const ADMIN_OPERATOR: &str = "alice";
/// The spend limit of a [`IdentityAdmin::keyed_customer`]'s key.
pub const KEYED_CUSTOMER_SPEND_LIMIT_CENTS: i64 = 500_000;

/// identity-svc at `url`, called as an admin.
#[derive(Clone, Debug)]
pub struct IdentityAdmin {
    pub url: String,
    /// Tokens addressed to identity-svc.
    pub keys: DevTokens,
}

/// A customer with one API key.
pub struct KeyedCustomer {
    pub customer_id: String,
    pub key: pb::ApiKey,
    /// The key as its holder presents it (shown once, at creation).
    pub plaintext: String,
}

impl IdentityAdmin {
    /// identity-svc listening at `url` (`http://host:port`).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            keys: DevTokens::new(crate::mesh::IDENTITY_SVC),
        }
    }

    /// A client of identity-svc's API.
    pub async fn client(&self) -> IdentityServiceClient<Channel> {
        IdentityServiceClient::connect(self.url.clone())
            .await
            .expect("identity-svc accepts a connection")
    }

    /// A staff token of [`ADMIN_OPERATOR`] holding `roles`.
    pub fn staff_token(&self, roles: &[&str]) -> String {
        self.keys.staff(ADMIN_OPERATOR, roles)
    }

    /// `message` as [`ADMIN_OPERATOR`] holding `identity.admin`.
    pub fn admin<T>(&self, message: T) -> tonic::Request<T> {
        crate::grpc::outgoing(message, &self.staff_token(&[roles::IDENTITY_ADMIN]))
    }

    /// Registers the customer `Acme Labs` with `email`.
    pub async fn create_customer(&self, email: &str) -> pb::Customer {
        let request = pb::CreateCustomerRequest {
            name: "Acme Labs".into(),
            email: email.into(),
        };
        self.client()
            .await
            .create_customer(self.admin(request))
            .await
            .expect("the customer is created")
            .into_inner()
            .customer
            .expect("the answer holds the customer")
    }

    /// Creates a key named `agent` of `customer_id` holding `scopes`: the key and its plaintext.
    pub async fn create_key(
        &self,
        customer_id: &str,
        scopes: &[&str],
        spend_limit_cents: Option<i64>,
    ) -> (pb::ApiKey, String) {
        let request = pb::CreateApiKeyRequest {
            customer_id: customer_id.into(),
            name: "agent".into(),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            spend_limit_cents,
        };
        let created = self
            .client()
            .await
            .create_api_key(self.admin(request))
            .await
            .expect("the key is created")
            .into_inner();
        (created.key.expect("the answer holds the key"), created.plaintext)
    }

    /// A new customer (an email of its own) with a key holding `scopes` and a spend limit of
    /// [`KEYED_CUSTOMER_SPEND_LIMIT_CENTS`].
    pub async fn keyed_customer(&self, scopes: &[&str]) -> KeyedCustomer {
        let email = format!("{}@acme.example", uuid::Uuid::new_v4().simple());
        let customer = self.create_customer(&email).await;
        let (key, plaintext) = self
            .create_key(&customer.id, scopes, Some(KEYED_CUSTOMER_SPEND_LIMIT_CENTS))
            .await;
        KeyedCustomer {
            customer_id: customer.id,
            key,
            plaintext,
        }
    }
}
