//! gRPC adapter of `lab.results.v1.ResultsService`: who may call each rpc ([`ACCESS`], enforced
//! by the platform's access layer), then per rpc: principal, proto to domain, the use case,
//! domain back to proto (every staff step through the one [`answer`]). No business rule lives
//! here.

use crate::convert::{customer_coa, results_filter};
use crate::data::{self, DataService};
use crate::domain::analyte::UncheckedRow;
use crate::service::{ResultsService, Step};
use platform::access::{self, AccessTable};
use platform::error::ApiError;
use platform::grpc::principal;
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::results as pb;
use proto::results::results_service_server::ResultsService as ResultsApi;
use proto::scopes::{INSTRUMENTS_READ, RAW_DATA_READ, RESULTS_READ};
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
    (
        "SimulateCoa",
        access::customer(&[proto::scopes::ORDERS_WRITE]).sandbox_only(),
    ),
    ("ListResults", access::customer(&[RESULTS_READ])),
    ("GetResult", access::customer(&[RESULTS_READ])),
    ("RenderCoaPdf", access::PUBLIC),
    ("VerifyCoas", access::PUBLIC),
    ("GetSigningKey", access::PUBLIC),
    ("ImportInstrumentFile", access::staff(roles::LAB_ANALYST)),
    ("ListImports", access::ANY_OPERATOR),
    ("GetRawDataManifest", access::customer(&[RAW_DATA_READ])),
    ("GetInstrumentData", access::customer(&[INSTRUMENTS_READ])),
    ("OpenDownload", access::PUBLIC),
    ("ExportCoas", access::customer(&[RESULTS_READ])),
    ("ExportInstrumentResults", access::customer(&[INSTRUMENTS_READ])),
];

/// The stream of one export page.
type ExportStream =
    std::pin::Pin<Box<dyn futures::Stream<Item = Result<pb::ExportChunk, Status>> + Send + 'static>>;

impl ResultsGrpc {
    /// One export page for the calling customer, streamed.
    fn export(
        &self,
        request: Request<pb::ExportRequest>,
        export: data::export::Export,
    ) -> Result<Response<ExportStream>, Status> {
        use data::export::{Format, Part, Start};
        let customer_id = principal(&request)?.customer()?;
        let message = request.into_inner();
        let format = Format::parse(&message.format)?;
        let since = match &message.since {
            Some(since) => Some(platform::time::from_timestamp(since).ok_or_else(|| {
                Status::from(ApiError::field(
                    platform::error::ErrorCode::InvalidRequest,
                    "since",
                    "since is an ISO 8601 time",
                ))
            })?),
            None => None,
        };
        let start = Start::new(since, message.cursor.as_deref())?;
        let receiver = self
            .data
            .export(export, format, customer_id, start, i64::from(message.limit));
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            let part = receiver.recv().await?;
            let chunk = part.map_err(Status::from).map(|part| match part {
                Part::Head(head) => pb::ExportChunk {
                    part: Some(pb::export_chunk::Part::Head(pb::ExportHead {
                        truncated: head.truncated,
                        next_since: head.next_since.map(platform::time::to_timestamp),
                        next_cursor: head.next_cursor,
                        row_count: i32::try_from(head.row_count).unwrap_or(i32::MAX),
                    })),
                },
                Part::Rows(rows) => pb::ExportChunk {
                    part: Some(pb::export_chunk::Part::Rows(rows)),
                },
            });
            Some((chunk, receiver))
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// The tonic service over the results use cases.
#[derive(Clone)]
pub struct ResultsGrpc {
    results: Arc<ResultsService>,
    data: Arc<DataService>,
}

impl ResultsGrpc {
    pub fn new(results: Arc<ResultsService>, data: Arc<DataService>) -> Self {
        Self { results, data }
    }
}

/// Bytes per message of a download stream.
const DOWNLOAD_CHUNK_BYTES: usize = 256 * 1024;

fn order_id(text: &str) -> Result<uuid::Uuid, Status> {
    Ok(platform::ids::parse_uuid("orderId", text)?)
}

/// Reads an import stream: the header first, then the file's chunks, then the bundle's, each
/// bounded by [`data::MAX_FILE_BYTES`].
async fn read_upload(mut stream: tonic::Streaming<pb::ImportChunk>) -> Result<data::Upload, Status> {
    use pb::import_chunk::Part;
    let invalid = |message: &str| -> Status {
        ApiError::field(
            platform::error::ErrorCode::InvalidRequest,
            "file",
            message.to_owned(),
        )
        .into()
    };
    let mut header = None;
    let mut file = bytes::BytesMut::new();
    let mut bundle: Option<bytes::BytesMut> = None;
    while let Some(chunk) = stream.message().await? {
        match (chunk.part, &header) {
            (Some(Part::Header(h)), None) => header = Some(*h),
            (Some(Part::Header(_)), Some(_)) => return Err(invalid("the stream carries a second header")),
            (_, None) => return Err(invalid("the stream's first message is the header")),
            (Some(Part::FileChunk(bytes)), Some(_)) if bundle.is_none() => {
                if file.len() + bytes.len() > data::MAX_FILE_BYTES {
                    return Err(invalid("the file is larger than the import limit (64 MiB)"));
                }
                file.extend_from_slice(&bytes);
            }
            (Some(Part::FileChunk(_)), Some(_)) => {
                return Err(invalid("the file's chunks come before the native bundle's"));
            }
            (Some(Part::BundleChunk(bytes)), Some(_)) => {
                let bundle = bundle.get_or_insert_with(bytes::BytesMut::new);
                if bundle.len() + bytes.len() > data::MAX_FILE_BYTES {
                    return Err(invalid(
                        "the native bundle is larger than the import limit (64 MiB)",
                    ));
                }
                bundle.extend_from_slice(&bytes);
            }
            (None, Some(_)) => {}
        }
    }
    let header = header.ok_or_else(|| invalid("the stream carries no header"))?;
    Ok(data::Upload {
        header: header.into(),
        file: file.freeze(),
        bundle: bundle.map(bytes::BytesMut::freeze),
    })
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
    type ExportCoasStream = ExportStream;
    type ExportInstrumentResultsStream = ExportStream;

    async fn export_coas(
        &self,
        request: Request<pb::ExportRequest>,
    ) -> Result<Response<ExportStream>, Status> {
        self.export(request, data::export::Export::Coas)
    }

    async fn export_instrument_results(
        &self,
        request: Request<pb::ExportRequest>,
    ) -> Result<Response<ExportStream>, Status> {
        self.export(request, data::export::Export::InstrumentResults)
    }

    type OpenDownloadStream =
        std::pin::Pin<Box<dyn futures::Stream<Item = Result<pb::DownloadChunk, Status>> + Send + 'static>>;

    async fn import_instrument_file(
        &self,
        request: Request<tonic::Streaming<pb::ImportChunk>>,
    ) -> Result<Response<pb::ImportResponse>, Status> {
        let analyst = principal(&request)?.operator()?;
        let upload = read_upload(request.into_inner()).await?;
        let (import, unchanged) = self.data.import(&analyst, upload).await?;
        Ok(Response::new(pb::ImportResponse {
            import: Some((&import).into()),
            unchanged,
        }))
    }

    async fn list_imports(
        &self,
        request: Request<pb::AccessionRequest>,
    ) -> Result<Response<pb::ListImportsResponse>, Status> {
        let imports = self
            .data
            .list_imports(&request.get_ref().accession_number)
            .await?;
        Ok(Response::new(pb::ListImportsResponse {
            imports: imports.iter().map(Into::into).collect(),
        }))
    }

    async fn get_raw_data_manifest(
        &self,
        request: Request<pb::RawDataRequest>,
    ) -> Result<Response<pb::RawDataManifest>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.into_inner();
        let manifest = self
            .data
            .manifest(customer_id, order_id(&message.order_id)?)
            .await?;
        Ok(Response::new(data::wire::manifest(
            message.order_id,
            message.order_number,
            &manifest,
        )))
    }

    async fn get_instrument_data(
        &self,
        request: Request<pb::InstrumentDataRequest>,
    ) -> Result<Response<pb::InstrumentData>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.into_inner();
        let (order, order_number, coa) = match (&message.coa_reference, &message.order_id) {
            (Some(reference), _) => {
                let coa = self.results.get_result(customer_id, reference).await?;
                (coa.order_id, coa.order_number.clone(), Some(coa.id))
            }
            (None, Some(id)) => (order_id(id)?, String::new(), None),
            (None, None) => {
                return Err(ApiError::field(
                    platform::error::ErrorCode::InvalidRequest,
                    "reference",
                    "name an order or a COA",
                )
                .into());
            }
        };
        let data = self
            .data
            .instrument_data(customer_id, order, coa, message.sign_downloads)
            .await?;
        Ok(Response::new(data::wire::instrument_data(order_number, &data)))
    }

    async fn open_download(
        &self,
        request: Request<pb::OpenDownloadRequest>,
    ) -> Result<Response<Self::OpenDownloadStream>, Status> {
        let message = request.into_inner();
        let download = self
            .data
            .open_download(&message.key, message.expires, &message.signature)
            .await?;
        let size = i64::try_from(download.bytes.len()).unwrap_or(i64::MAX);
        let mut chunks = Vec::new();
        let mut offset = 0;
        loop {
            let end = (offset + DOWNLOAD_CHUNK_BYTES).min(download.bytes.len());
            chunks.push(Ok(pb::DownloadChunk {
                data: download.bytes.slice(offset..end).to_vec(),
                filename: if offset == 0 {
                    download.filename.clone()
                } else {
                    String::new()
                },
                mime_type: if offset == 0 {
                    download.mime_type.clone()
                } else {
                    None
                },
                size_bytes: size,
            }));
            offset = end;
            if offset >= download.bytes.len() {
                break;
            }
        }
        Ok(Response::new(Box::pin(futures::stream::iter(chunks))))
    }

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

    async fn simulate_coa(
        &self,
        request: Request<pb::SimulateCoaRequest>,
    ) -> Result<Response<pb::SimulateCoaResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.get_ref();
        let scenario = crate::service::CoaScenario::parse(message.scenario.trim())?;
        let simulation = self
            .results
            .simulate_coa(customer_id, order_id(&message.order_id)?, scenario)
            .await?;
        Ok(Response::new(pb::SimulateCoaResponse {
            simulation: Some(simulation),
        }))
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
