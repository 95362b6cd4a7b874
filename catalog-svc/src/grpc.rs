//! Thin tonic adapter of `lab.catalog.v1.CatalogService`: takes the principal the interceptor
//! verified, converts the message, calls the use case and converts the answer back.

use crate::service::{Idempotency, OP_CREATE_QUOTE, Service};
use platform::grpc::{IDEMPOTENCY_KEY, principal};
use prost::Message;
use proto::catalog as pb;
use std::sync::Arc;
use tonic::{Request, Response, Status};

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
        let principal = principal(&request)?;
        let page = self
            .service
            .list_items(&principal, request.into_inner().into())
            .await?;
        Ok(Response::new(page.into()))
    }

    async fn create_quote(
        &self,
        request: Request<pb::CreateQuoteRequest>,
    ) -> Result<Response<pb::CreateQuoteResponse>, Status> {
        let principal = principal(&request)?;
        let idempotency = idempotency(&request, OP_CREATE_QUOTE)?;
        let outcome = self
            .service
            .create_quote(&principal, request.into_inner().into(), idempotency)
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
        let principal = principal(&request)?;
        let quote = self
            .service
            .get_quote(&principal, &request.get_ref().quote_id)
            .await?;
        Ok(Response::new(pb::GetQuoteResponse {
            quote: Some(quote.into()),
        }))
    }

    async fn import_catalog(
        &self,
        request: Request<pb::ImportCatalogRequest>,
    ) -> Result<Response<pb::ImportCatalogResponse>, Status> {
        let principal = principal(&request)?;
        let message = request.get_ref();
        let outcome = self
            .service
            .import(&principal, &message.document_json, &message.note)
            .await?;
        Ok(Response::new(outcome.into()))
    }
}
