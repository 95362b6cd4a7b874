//! gRPC adapter of `lab.results.v1.ResultsService`: who may call each rpc ([`ACCESS`], enforced
//! by the platform's access layer), then per rpc: principal, proto to domain, the use case,
//! domain back to proto (every staff step through the one [`answer`]). No business rule lives
//! here.

use crate::convert::{customer_coa, results_filter};
use crate::domain::analyte::UncheckedRow;
use crate::service::{ResultsService, Step};
use platform::access::{self, AccessTable};
use platform::error::ApiError;
use platform::grpc::principal;
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::results as pb;
use proto::results::results_service_server::ResultsService as ResultsApi;
use proto::scopes::RESULTS_READ;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: analysts record and submit, QA approves, sends back, publishes,
/// retracts and amends; any operator reads the lab view; API keys read published COAs; anyone
/// verifies, reads the signing key and downloads a document through a signed link.
pub const ACCESS: AccessTable = &[
    ("RecordResults", access::staff(roles::LAB_ANALYST)),
    ("SubmitResults", access::staff(roles::LAB_ANALYST)),
    ("ApproveResults", access::staff(roles::LAB_QA)),
    ("SendBack", access::staff(roles::LAB_QA)),
    ("PublishCoa", access::staff(roles::LAB_QA)),
    ("RetractCoa", access::staff(roles::LAB_QA)),
    ("AmendCoa", access::staff(roles::LAB_QA)),
    ("GetLabCoa", access::ANY_OPERATOR),
    ("ListResults", access::customer(&[RESULTS_READ])),
    ("GetResult", access::customer(&[RESULTS_READ])),
    ("RenderCoaPdf", access::PUBLIC),
    ("VerifyCoas", access::PUBLIC),
    ("GetSigningKey", access::PUBLIC),
];

/// The tonic service over the results use cases.
#[derive(Clone)]
pub struct ResultsGrpc {
    results: Arc<ResultsService>,
}

impl ResultsGrpc {
    pub fn new(results: Arc<ResultsService>) -> Self {
        Self { results }
    }
}

impl ResultsGrpc {
    /// A published COA as its customer reads it, with a fresh signed download link.
    fn customer_view(&self, coa: &crate::domain::coa::Coa) -> pb::Coa {
        let (path, expires) = self.results.document_link(coa, platform::time::now());
        pb::Coa {
            document_path: path,
            document_expires_at: Some(platform::time::to_timestamp(expires)),
            ..customer_coa(coa)
        }
    }
}

/// The answer of a workflow step: the COA as staff see it and whether the step had already
/// happened; a refused step is its error's status.
fn answer(step: Result<Step, ApiError>) -> Result<Response<pb::CoaResponse>, Status> {
    let step = step?;
    Ok(Response::new(pb::CoaResponse {
        coa: Some((&step.coa).into()),
        unchanged: step.unchanged,
    }))
}

#[tonic::async_trait]
impl ResultsApi for ResultsGrpc {
    async fn record_results(
        &self,
        request: Request<pb::RecordResultsRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let analyst = principal(&request)?.operator()?;
        let message = request.into_inner();
        let rows: Vec<UncheckedRow> = message.results.into_iter().map(Into::into).collect();
        answer(
            self.results
                .record_results(&analyst, &message.accession_number, rows)
                .await,
        )
    }

    async fn submit_results(
        &self,
        request: Request<pb::AccessionRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let analyst = principal(&request)?.operator()?;
        let accession = &request.get_ref().accession_number;
        answer(self.results.submit_results(&analyst, accession).await)
    }

    async fn approve_results(
        &self,
        request: Request<pb::AccessionRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let approver = principal(&request)?.operator()?;
        let accession = &request.get_ref().accession_number;
        answer(self.results.approve_results(&approver, accession).await)
    }

    async fn send_back(
        &self,
        request: Request<pb::ReasonRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let message = request.get_ref();
        answer(self.results.send_back(&message.reference, &message.reason).await)
    }

    async fn publish_coa(
        &self,
        request: Request<pb::AccessionRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        answer(
            self.results
                .publish_coa(&request.get_ref().accession_number)
                .await,
        )
    }

    async fn retract_coa(
        &self,
        request: Request<pb::ReasonRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let message = request.get_ref();
        answer(
            self.results
                .retract_coa(&message.reference, &message.reason)
                .await,
        )
    }

    async fn amend_coa(
        &self,
        request: Request<pb::ReasonRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let message = request.get_ref();
        answer(self.results.amend_coa(&message.reference, &message.reason).await)
    }

    async fn get_lab_coa(
        &self,
        request: Request<pb::AccessionRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let coa = self.results.lab_coa(&request.get_ref().accession_number).await;
        answer(coa.map(|coa| Step { coa, unchanged: true }))
    }

    async fn list_results(
        &self,
        request: Request<pb::ListResultsRequest>,
    ) -> Result<Response<pb::ListResultsResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.get_ref();
        let filter = results_filter(message)?;
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
        let page = self.results.list_results(customer_id, filter, &page).await?;
        Ok(Response::new(pb::ListResultsResponse {
            coas: page.items.iter().map(|coa| self.customer_view(coa)).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_result(
        &self,
        request: Request<pb::GetResultRequest>,
    ) -> Result<Response<pb::CoaResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let coa = self
            .results
            .get_result(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(pb::CoaResponse {
            coa: Some(self.customer_view(&coa)),
            unchanged: true,
        }))
    }

    async fn verify_coas(
        &self,
        request: Request<pb::VerifyCoasRequest>,
    ) -> Result<Response<pb::VerifyCoasResponse>, Status> {
        let message = request.get_ref();
        let verdicts = self
            .results
            .verify(&message.accession_numbers, message.verification_code.as_deref())
            .await?;
        Ok(Response::new(pb::VerifyCoasResponse {
            verifications: verdicts.iter().map(Into::into).collect(),
        }))
    }

    async fn get_signing_key(
        &self,
        _request: Request<pb::GetSigningKeyRequest>,
    ) -> Result<Response<pb::GetSigningKeyResponse>, Status> {
        let keys = self.results.keys();
        Ok(Response::new(pb::GetSigningKeyResponse {
            jwk_json: keys.signer().public_jwk().to_string(),
            keys: keys.public_keys().iter().map(Into::into).collect(),
        }))
    }

    async fn render_coa_pdf(
        &self,
        request: Request<pb::RenderCoaPdfRequest>,
    ) -> Result<Response<pb::RenderCoaPdfResponse>, Status> {
        let message = request.get_ref();
        let (pdf, filename) = self
            .results
            .render_document(&message.coa_id, message.expires, &message.signature)
            .await?;
        Ok(Response::new(pb::RenderCoaPdfResponse { pdf, filename }))
    }
}
