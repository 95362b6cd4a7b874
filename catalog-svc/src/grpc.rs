//! Thin tonic adapter of `lab.catalog.v1.CatalogService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer before any handler runs), then per rpc: take the
//! verified principal, convert the message, call the use case, convert the answer back.

use crate::service::CatalogService;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::principal::roles;
use proto::catalog as pb;
use proto::scopes::{CATALOG_READ, QUOTES_WRITE};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with their scope; orders-svc reads a customer's quote when
/// it places the order, shipping-svc when it derives the order's packing steps; operators with
/// `catalog.admin` import revisions.
pub const ACCESS: AccessTable = &[
    // orders-svc prices add-ons from an order's catalog revision.
    (
        "ListCatalogItems",
        access::customer(&[CATALOG_READ]).or_services(&["orders-svc"]),
    ),
    ("CreateQuote", access::customer(&[QUOTES_WRITE])),
    (
        "GetQuote",
        access::customer(&[QUOTES_WRITE]).or_services(&["orders-svc", "shipping-svc"]),
    ),
    ("ImportCatalog", access::staff(roles::CATALOG_ADMIN)),
];

/// The gRPC face of the [`CatalogService`].
#[derive(Clone)]
pub struct CatalogGrpc {
    service: Arc<CatalogService>,
}

impl CatalogGrpc {
    pub fn new(service: Arc<CatalogService>) -> Self {
        Self { service }
    }
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
        let key = IdempotencyKey::optional_from_grpc(&request)?;
        self.service
            .create_quote(customer_id, request.into_inner().into(), key)
            .await
            .into_response(|quote| pb::CreateQuoteResponse {
                quote: Some(quote.into()),
            })
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
