//! gRPC adapter of `lab.results.v1.RegistryService`: who may call each rpc ([`ACCESS`]), then
//! per rpc: proto to domain (`registry::convert`), the use case, domain back to proto. No
//! business rule lives here.

use crate::registry::RegistryService;
use crate::registry::convert::{self, instrument};
use crate::registry::instrument::{InstrumentDraft, InstrumentFilter, InstrumentStatus};
use crate::registry::method::{MethodDraft, MethodFilter};
use platform::access::{self, AccessTable, Rule};
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::results as pb;
use proto::results::registry_service_server::RegistryService as RegistryApi;
use proto::scopes::CATALOG_READ;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Reads: API keys that may browse the catalog (the gateway's `GET /instruments` and
/// `GET /methods`), and any operator (`labctl instruments|methods list|show`).
const READ: Rule = Rule {
    any_operator: true,
    ..access::customer(&[CATALOG_READ])
};

/// Who may call each rpc: customers with `catalog:read` and any operator read; QA maintains.
pub const ACCESS: AccessTable = &[
    ("ListInstruments", READ),
    ("GetInstrument", READ),
    ("ListMethods", READ),
    ("GetMethod", READ),
    ("UpsertInstrument", access::staff(roles::LAB_QA)),
    ("RecordCalibration", access::staff(roles::LAB_QA)),
    ("SetInstrumentStatus", access::staff(roles::LAB_QA)),
    ("UpsertMethod", access::staff(roles::LAB_QA)),
];

/// The tonic service over the registry use cases.
#[derive(Clone)]
pub struct RegistryGrpc {
    registry: Arc<RegistryService>,
}

impl RegistryGrpc {
    pub fn new(registry: Arc<RegistryService>) -> Self {
        Self { registry }
    }
}

fn instrument_answer(
    found: &crate::registry::instrument::Instrument,
    created: bool,
) -> Response<pb::InstrumentResponse> {
    Response::new(pb::InstrumentResponse {
        instrument: Some(instrument(found, platform::time::now())),
        created,
    })
}

fn method_answer(found: &crate::registry::method::Method, created: bool) -> Response<pb::MethodResponse> {
    Response::new(pb::MethodResponse {
        method: Some(found.into()),
        created,
    })
}

#[tonic::async_trait]
impl RegistryApi for RegistryGrpc {
    async fn list_instruments(
        &self,
        request: Request<pb::ListInstrumentsRequest>,
    ) -> Result<Response<pb::ListInstrumentsResponse>, Status> {
        let message = request.get_ref();
        let filter = InstrumentFilter::try_from(message)?;
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
        let page = self.registry.list_instruments(filter, &page).await?;
        let now = platform::time::now();
        Ok(Response::new(pb::ListInstrumentsResponse {
            instruments: page.items.iter().map(|found| instrument(found, now)).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_instrument(
        &self,
        request: Request<pb::GetInstrumentRequest>,
    ) -> Result<Response<pb::InstrumentResponse>, Status> {
        let found = self.registry.get_instrument(&request.get_ref().id).await?;
        Ok(instrument_answer(&found, false))
    }

    async fn upsert_instrument(
        &self,
        request: Request<pb::UpsertInstrumentRequest>,
    ) -> Result<Response<pb::InstrumentResponse>, Status> {
        let draft = InstrumentDraft::try_from(request.into_inner())?;
        let (found, created) = self.registry.upsert_instrument(draft).await?;
        Ok(instrument_answer(&found, created))
    }

    async fn record_calibration(
        &self,
        request: Request<pb::RecordCalibrationRequest>,
    ) -> Result<Response<pb::InstrumentResponse>, Status> {
        let message = request.get_ref();
        let calibration = convert::calibration(message, platform::time::now())?;
        let found = self.registry.record_calibration(&message.id, calibration).await?;
        Ok(instrument_answer(&found, false))
    }

    async fn set_instrument_status(
        &self,
        request: Request<pb::SetInstrumentStatusRequest>,
    ) -> Result<Response<pb::InstrumentResponse>, Status> {
        let message = request.into_inner();
        let status = InstrumentStatus::parse_field("status", &message.status)?;
        let found = self
            .registry
            .set_instrument_status(&message.id, status, message.reason)
            .await?;
        Ok(instrument_answer(&found, false))
    }

    async fn list_methods(
        &self,
        request: Request<pb::ListMethodsRequest>,
    ) -> Result<Response<pb::ListMethodsResponse>, Status> {
        let message = request.get_ref();
        let filter = MethodFilter::try_from(message)?;
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
        let page = self.registry.list_methods(filter, &page).await?;
        Ok(Response::new(pb::ListMethodsResponse {
            methods: page.items.iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_method(
        &self,
        request: Request<pb::GetMethodRequest>,
    ) -> Result<Response<pb::MethodResponse>, Status> {
        let found = self.registry.get_method(&request.get_ref().id).await?;
        Ok(method_answer(&found, false))
    }

    async fn upsert_method(
        &self,
        request: Request<pb::UpsertMethodRequest>,
    ) -> Result<Response<pb::MethodResponse>, Status> {
        let draft = MethodDraft::try_from(request.into_inner())?;
        let (found, created) = self.registry.upsert_method(draft).await?;
        Ok(method_answer(&found, created))
    }
}
