//! Thin tonic adapter of `lab.catalog.v1.CatalogService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer before any handler runs), then per rpc: take the
//! verified principal, convert the message, call the use case, convert the answer back.

use crate::service::{Idempotency, OP_CREATE_QUOTE, Service};
use platform::access::{self, AccessTable};
use platform::grpc::{IDEMPOTENCY_KEY, principal};
use platform::principal::roles;
use prost::Message;
use proto::catalog as pb;
use proto::scopes::{CATALOG_READ, QUOTES_WRITE};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with their scope; orders-svc reads a customer's quote when
/// it places the order; operators with `catalog.admin` import revisions.
pub const ACCESS: AccessTable = &[
    ("ListCatalogItems", access::customer(&[CATALOG_READ])),
    ("CreateQuote", access::customer(&[QUOTES_WRITE])),
    (
        "GetQuote",
        access::customer(&[QUOTES_WRITE]).or_services(&["orders-svc"]),
    ),
    ("ImportCatalog", access::staff(roles::CATALOG_ADMIN)),
];

/// The gRPC face of the [`Service`].
#[derive(Clone)]
pub struct CatalogGrpc {
    service: Arc<Service>,
}

impl CatalogGrpc {
    pub fn new(service: Arc<Service>) -> Self {
        Self { service }
    }
}

/// The optional idempotency key of a request with the fingerprint of its message.
fn idempotency<T: Message>(request: &Request<T>, operation: &str) -> Result<Option<Idempotency>, Status> {
    if request.metadata().get(IDEMPOTENCY_KEY).is_none() {
        return Ok(None);
    }
    let key = platform::grpc::idempotency_key(request)?;
    let fingerprint = platform::idempotency::fingerprint(operation, &request.get_ref().encode_to_vec());
    Ok(Some(Idempotency { key, fingerprint }))
}

#[tonic::async_trait]
impl pb::catalog_service_server::CatalogService for CatalogGrpc {
    async fn list_catalog_items(
        &self,
        request: Request<pb::ListCatalogItemsRequest>,
    ) -> Result<Response<pb::ListCatalogItemsResponse>, Status> {
        let page = self.service.list_items(request.into_inner().into()).await?;
        Ok(Response::new(page.into()))
    }

    async fn create_quote(
        &self,
        request: Request<pb::CreateQuoteRequest>,
    ) -> Result<Response<pb::CreateQuoteResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let idempotency = idempotency(&request, OP_CREATE_QUOTE)?;
        let outcome = self
            .service
            .create_quote(customer_id, request.into_inner().into(), idempotency)
            .await?;
        let mut response = Response::new(pb::CreateQuoteResponse {
            quote: Some(outcome.quote.into()),
        });
        if outcome.replayed {
            platform::grpc::mark_replayed(&mut response);
        }
        Ok(response)
    }

    async fn get_quote(
        &self,
        request: Request<pb::GetQuoteRequest>,
    ) -> Result<Response<pb::GetQuoteResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let quote = self
            .service
            .get_quote(customer_id, &request.get_ref().quote_id)
            .await?;
        Ok(Response::new(pb::GetQuoteResponse {
            quote: Some(quote.into()),
        }))
    }

    async fn import_catalog(
        &self,
        request: Request<pb::ImportCatalogRequest>,
    ) -> Result<Response<pb::ImportCatalogResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.get_ref();
        let outcome = self
            .service
            .import_document(&message.document_json, &message.note, &operator)
            .await?;
        Ok(Response::new(outcome.into()))
    }
}
