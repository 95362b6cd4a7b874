//! Internal gRPC adapter of `lab.identity.v1.IdentityService`: every call needs a staff token
//! with the `identity.admin` role (verified by the platform interceptor).

use crate::domain::customer::{self, ApiKey, Customer, KeyRef, NewApiKey, NewCustomer};
use crate::service::IdentityService;
use platform::principal::roles;
use platform::time::to_timestamp;
use proto::identity as pb;
use proto::identity::identity_service_server::IdentityService as IdentityRpc;
use secrecy::ExposeSecret;
use tonic::{Request, Response, Status};

/// The tonic adapter over [`IdentityService`].
pub struct IdentityAdapter {
    service: IdentityService,
}

impl IdentityAdapter {
    pub fn new(service: IdentityService) -> Self {
        Self { service }
    }
}

fn require_admin<T>(request: &Request<T>) -> Result<(), Status> {
    let principal = platform::grpc::principal(request)?;
    principal.require_role(roles::IDENTITY_ADMIN)?;
    tracing::info!(staff = %principal.subject, "identity call");
    Ok(())
}

#[tonic::async_trait]
impl IdentityRpc for IdentityAdapter {
    async fn create_customer(
        &self,
        request: Request<pb::CreateCustomerRequest>,
    ) -> Result<Response<pb::CreateCustomerResponse>, Status> {
        require_admin(&request)?;
        let new = NewCustomer::parse(&request.get_ref().name, &request.get_ref().email)?;
        let (customer, created) = self.service.create_customer(new).await?;
        Ok(Response::new(pb::CreateCustomerResponse {
            customer: Some(customer_to_proto(customer)),
            created,
        }))
    }

    async fn list_customers(
        &self,
        request: Request<pb::ListCustomersRequest>,
    ) -> Result<Response<pb::ListCustomersResponse>, Status> {
        require_admin(&request)?;
        let customers = self.service.list_customers().await?;
        Ok(Response::new(pb::ListCustomersResponse {
            customers: customers.into_iter().map(customer_to_proto).collect(),
        }))
    }

    async fn create_api_key(
        &self,
        request: Request<pb::CreateApiKeyRequest>,
    ) -> Result<Response<pb::CreateApiKeyResponse>, Status> {
        require_admin(&request)?;
        let body = request.get_ref();
        let new = NewApiKey::parse(
            &body.customer_id,
            &body.name,
            &body.scopes,
            body.spend_limit_cents,
        )?;
        let created = self.service.create_api_key(new).await?;
        Ok(Response::new(pb::CreateApiKeyResponse {
            key: Some(key_to_proto(created.key)),
            plaintext: created.plaintext.expose_secret().to_owned(),
        }))
    }

    async fn list_api_keys(
        &self,
        request: Request<pb::ListApiKeysRequest>,
    ) -> Result<Response<pb::ListApiKeysResponse>, Status> {
        require_admin(&request)?;
        let customer_id = customer::parse_uuid("customerId", &request.get_ref().customer_id)?;
        let keys = self.service.list_api_keys(customer_id).await?;
        Ok(Response::new(pb::ListApiKeysResponse {
            keys: keys.into_iter().map(key_to_proto).collect(),
        }))
    }

    async fn revoke_api_key(
        &self,
        request: Request<pb::RevokeApiKeyRequest>,
    ) -> Result<Response<pb::RevokeApiKeyResponse>, Status> {
        require_admin(&request)?;
        let key = self
            .service
            .revoke_api_key(KeyRef::parse(&request.get_ref().key)?)
            .await?;
        Ok(Response::new(pb::RevokeApiKeyResponse {
            key: Some(key_to_proto(key)),
        }))
    }
}

fn customer_to_proto(customer: Customer) -> pb::Customer {
    pb::Customer {
        id: customer.id.to_string(),
        name: customer.name,
        email: customer.email,
        created_at: Some(to_timestamp(customer.created_at)),
    }
}

fn key_to_proto(key: ApiKey) -> pb::ApiKey {
    pb::ApiKey {
        id: key.id.to_string(),
        customer_id: key.customer_id.to_string(),
        public_id: key.public_id,
        name: key.name,
        scopes: key.scopes,
        spend_limit_cents: key.spend_limit_cents,
        created_at: Some(to_timestamp(key.created_at)),
        revoked_at: key.revoked_at.map(to_timestamp),
    }
}
