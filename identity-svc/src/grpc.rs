//! gRPC adapter of `lab.identity.v1.IdentityService`: `IssueStaffToken` authenticates the
//! operator's credential itself; `VerifyApiKey` is the gateway's and `GetCustomer` shipping-svc's
//! (service tokens); every other rpc needs a staff token with `identity.admin` ([`ACCESS`],
//! enforced by the platform's access layer) and records the operator who called.

use crate::domain::customer::{ApiKey, Customer, KeyRef, NewApiKey, NewCustomer};
use crate::domain::operator::Operator;
use crate::service::{IdentityService, Verification};
use crate::staff::StaffService;
use platform::access::{self, AccessTable};
use platform::error::{ApiError, ErrorCode};
use platform::principal::{OperatorRef, roles};
use platform::time::to_timestamp;
use proto::identity as pb;
use proto::identity::identity_service_server::IdentityService as IdentityRpc;
use secrecy::ExposeSecret;
use tonic::{Request, Response, Status};

const ADMIN: access::Rule = access::staff(roles::IDENTITY_ADMIN);

/// Who may call each rpc.
pub const ACCESS: AccessTable = &[
    ("IssueStaffToken", access::PUBLIC),
    ("CreateOperator", ADMIN),
    ("ApproveOperator", ADMIN),
    ("ListOperators", ADMIN),
    ("RotateOperatorCredential", ADMIN),
    ("DisableOperator", ADMIN),
    ("CreateCustomer", ADMIN),
    ("ListCustomers", ADMIN),
    // shipping-svc addresses labels and their emails, acting for the customer it names.
    ("GetCustomer", access::services(&[platform::mesh::SHIPPING_SVC])),
    ("CreateApiKey", ADMIN),
    ("ListApiKeys", ADMIN),
    ("RevokeApiKey", ADMIN),
    ("SetCustomerSandbox", ADMIN),
    // The gateway's front door, on a miss of its key cache.
    ("VerifyApiKey", access::services(&[platform::mesh::GATEWAY])),
];

/// The tonic adapter over [`IdentityService`] and [`StaffService`].
pub struct IdentityGrpc {
    service: IdentityService,
    staff: StaffService,
}

impl IdentityGrpc {
    pub fn new(service: IdentityService, staff: StaffService) -> Self {
        Self { service, staff }
    }
}

/// The operator calling (the access layer admitted only operators with `identity.admin`).
fn operator<T>(request: &Request<T>) -> Result<OperatorRef, Status> {
    Ok(platform::grpc::principal(request)?.operator()?)
}

#[tonic::async_trait]
impl IdentityRpc for IdentityGrpc {
    async fn issue_staff_token(
        &self,
        request: Request<pb::IssueStaffTokenRequest>,
    ) -> Result<Response<pb::IssueStaffTokenResponse>, Status> {
        let body = request.get_ref();
        let issued = self
            .staff
            .issue_token(&body.credential, &body.audience, &body.roles)
            .await?;
        Ok(Response::new(pb::IssueStaffTokenResponse {
            token: issued.token,
            expires_at: Some(to_timestamp(issued.expires_at)),
            operator: issued.operator,
        }))
    }

    async fn create_operator(
        &self,
        request: Request<pb::CreateOperatorRequest>,
    ) -> Result<Response<pb::CreateOperatorResponse>, Status> {
        let by = operator(&request)?;
        let body = request.get_ref();
        let created = self.staff.create_operator(&by, &body.name, &body.roles).await?;
        Ok(Response::new(pb::CreateOperatorResponse {
            operator: Some(operator_to_proto(created.operator)),
            credential: created
                .credential
                .map(|credential| credential.expose_secret().to_owned())
                .unwrap_or_default(),
        }))
    }

    async fn approve_operator(
        &self,
        request: Request<pb::ApproveOperatorRequest>,
    ) -> Result<Response<pb::ApproveOperatorResponse>, Status> {
        let by = operator(&request)?;
        let approved = self.staff.approve_operator(&by, &request.get_ref().name).await?;
        Ok(Response::new(pb::ApproveOperatorResponse {
            operator: Some(operator_to_proto(approved.operator)),
            credential: approved.credential.expose_secret().to_owned(),
        }))
    }

    async fn list_operators(
        &self,
        _request: Request<pb::ListOperatorsRequest>,
    ) -> Result<Response<pb::ListOperatorsResponse>, Status> {
        let operators = self.staff.list_operators().await?;
        Ok(Response::new(pb::ListOperatorsResponse {
            operators: operators.into_iter().map(operator_to_proto).collect(),
        }))
    }

    async fn rotate_operator_credential(
        &self,
        request: Request<pb::RotateOperatorCredentialRequest>,
    ) -> Result<Response<pb::RotateOperatorCredentialResponse>, Status> {
        let by = operator(&request)?;
        let rotated = self.staff.rotate_credential(&by, &request.get_ref().name).await?;
        Ok(Response::new(pb::RotateOperatorCredentialResponse {
            operator: Some(operator_to_proto(rotated.operator)),
            credential: rotated.credential.expose_secret().to_owned(),
        }))
    }

    async fn disable_operator(
        &self,
        request: Request<pb::DisableOperatorRequest>,
    ) -> Result<Response<pb::DisableOperatorResponse>, Status> {
        let by = operator(&request)?;
        let disabled = self.staff.disable_operator(&by, &request.get_ref().name).await?;
        Ok(Response::new(pb::DisableOperatorResponse {
            operator: Some(operator_to_proto(disabled)),
        }))
    }

    async fn create_customer(
        &self,
        request: Request<pb::CreateCustomerRequest>,
    ) -> Result<Response<pb::CreateCustomerResponse>, Status> {
        let operator = operator(&request)?;
        let new = NewCustomer::parse(&request.get_ref().name, &request.get_ref().email)?;
        let (customer, created) = self.service.create_customer(&operator.name, new).await?;
        Ok(Response::new(pb::CreateCustomerResponse {
            customer: Some(customer_to_proto(customer)),
            created,
        }))
    }

    async fn list_customers(
        &self,
        _request: Request<pb::ListCustomersRequest>,
    ) -> Result<Response<pb::ListCustomersResponse>, Status> {
        let customers = self.service.list_customers().await?;
        Ok(Response::new(pb::ListCustomersResponse {
            customers: customers.into_iter().map(customer_to_proto).collect(),
        }))
    }

    async fn get_customer(
        &self,
        request: Request<pb::GetCustomerRequest>,
    ) -> Result<Response<pb::GetCustomerResponse>, Status> {
        // A service acts for one customer: it reads that customer only.
        let acting_for = platform::grpc::principal(&request)?.customer()?;
        if request.get_ref().customer_id != acting_for.to_string() {
            return Err(ApiError::new(ErrorCode::NotFound, "customer not found").into());
        }
        let customer = self.service.get_customer(acting_for).await?;
        Ok(Response::new(pb::GetCustomerResponse {
            customer: Some(customer_to_proto(customer)),
        }))
    }

    async fn create_api_key(
        &self,
        request: Request<pb::CreateApiKeyRequest>,
    ) -> Result<Response<pb::CreateApiKeyResponse>, Status> {
        let operator = operator(&request)?;
        let body = request.get_ref();
        let new = NewApiKey::parse(
            &body.customer_id,
            &body.name,
            &body.scopes,
            body.spend_limit_cents,
        )?;
        let created = self.service.create_api_key(&operator.name, new).await?;
        Ok(Response::new(pb::CreateApiKeyResponse {
            key: Some(key_to_proto(created.key)),
            plaintext: created.plaintext.expose_secret().to_owned(),
        }))
    }

    async fn list_api_keys(
        &self,
        request: Request<pb::ListApiKeysRequest>,
    ) -> Result<Response<pb::ListApiKeysResponse>, Status> {
        let customer_id = platform::ids::parse_uuid("customerId", &request.get_ref().customer_id)?;
        let keys = self.service.list_api_keys(customer_id).await?;
        Ok(Response::new(pb::ListApiKeysResponse {
            keys: keys.into_iter().map(key_to_proto).collect(),
        }))
    }

    async fn revoke_api_key(
        &self,
        request: Request<pb::RevokeApiKeyRequest>,
    ) -> Result<Response<pb::RevokeApiKeyResponse>, Status> {
        let operator = operator(&request)?;
        let key = self
            .service
            .revoke_api_key(&operator.name, KeyRef::parse(&request.get_ref().key)?)
            .await?;
        Ok(Response::new(pb::RevokeApiKeyResponse {
            key: Some(key_to_proto(key)),
        }))
    }

    async fn set_customer_sandbox(
        &self,
        request: Request<pb::SetCustomerSandboxRequest>,
    ) -> Result<Response<pb::SetCustomerSandboxResponse>, Status> {
        let operator = operator(&request)?;
        let body = request.get_ref();
        let (customer, changed) = self
            .service
            .set_customer_sandbox(&operator.name, &body.customer, body.sandbox)
            .await?;
        Ok(Response::new(pb::SetCustomerSandboxResponse {
            customer: Some(customer_to_proto(customer)),
            changed,
        }))
    }

    async fn verify_api_key(
        &self,
        request: Request<pb::VerifyApiKeyRequest>,
    ) -> Result<Response<pb::VerifyApiKeyResponse>, Status> {
        use pb::verify_api_key_response::Outcome;
        let (outcome, key) = match self.service.verify_api_key(&request.get_ref().key).await? {
            Verification::Valid(key) => (Outcome::Valid, Some(key_to_proto(key))),
            Verification::Unknown => (Outcome::Unknown, None),
            Verification::WrongSecret => (Outcome::WrongSecret, None),
            Verification::Revoked => (Outcome::Revoked, None),
        };
        Ok(Response::new(pb::VerifyApiKeyResponse {
            outcome: outcome as i32,
            key,
        }))
    }
}

fn operator_to_proto(operator: Operator) -> pb::Operator {
    let status = match operator.disabled_at {
        Some(_) => "disabled",
        None => operator.status.as_str(),
    };
    pb::Operator {
        id: operator.id.to_string(),
        name: operator.name,
        roles: operator.roles,
        public_id: operator.public_id.unwrap_or_default(),
        created_at: Some(to_timestamp(operator.created_at)),
        created_by: operator.created_by,
        disabled_at: operator.disabled_at.map(to_timestamp),
        status: status.to_owned(),
        approved_by: operator.approved_by,
        approved_at: operator.approved_at.map(to_timestamp),
    }
}

fn customer_to_proto(customer: Customer) -> pb::Customer {
    pb::Customer {
        id: customer.id.to_string(),
        name: customer.name,
        email: customer.email,
        created_at: Some(to_timestamp(customer.created_at)),
        sandbox: customer.sandbox,
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
        sandbox: key.sandbox,
    }
}
