//! Translation of the results use cases to `lab.results.v1.ResultsService` and of an order's lab
//! views to `lab.orders.v1.OrdersService`: published COAs and their analyte rows, an order's
//! samples (with the ids of their published COAs when the key may read results), custody and
//! ETA, and the public verification (no key; results-svc's rpc is public).

use super::{missing, service_error};
use crate::caller::Caller;
use crate::dto::lab::{
    Custody, CustodyData, CustodyEnvelope, Eta, EtaData, EtaEnvelope, OrderSamples, OrderSamplesEnvelope,
    Sample,
};
use crate::dto::orders::Order;
use crate::dto::results::{
    Analyte, AnalyteList, Coa, CoaEnvelope, CoaList, CoaSigningKeySet, ResultsQuery, Verification,
    VerificationEnvelope, VerificationList,
};
use crate::limits::ceiling::LookupCeiling;
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::outgoing;
use platform::mesh::{ORDERS_SVC, RESULTS_SVC};
use proto::{orders, results as pb};

/// A request to a public rpc: no principal token, only the trace context.
fn public<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    platform::grpc::inject_trace_context(request.metadata_mut());
    request
}

/// `GET /results`: one page of the customer's published COAs (document links under `site`).
pub async fn list_results(
    peers: &Peers,
    caller: &Caller,
    site: &str,
    query: ResultsQuery,
) -> Result<CoaList, ApiError> {
    let page = peers
        .results()
        .list_results(outgoing(
            pb::ListResultsRequest::from(query),
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .coas
        .into_iter()
        .map(|coa| Coa::try_from(coa).map(|coa| coa.with_site(site)))
        .collect::<Result<_, _>>()?;
    Ok(CoaList::new(data, page.next_cursor))
}

/// One COA by any reference: results-svc knows COA ids and accession numbers; an order-level
/// reference (order UUID or number, invoice number, tracking number) names the order's COA
/// through orders-svc when the order has exactly one in force (published), else the one COA it
/// has at all; several are 409 `ambiguous_reference` with their accession numbers, none the
/// same 404 as a missing COA.
pub(crate) async fn get_coa(peers: &Peers, caller: &Caller, reference: String) -> Result<Coa, ApiError> {
    let response = peers
        .results()
        .get_result(outgoing(
            pb::GetResultRequest {
                reference: reference.clone(),
            },
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(service_error);
    match response {
        Ok(response) => Coa::try_from(response.into_inner().coa.ok_or_else(|| missing("COA"))?),
        Err(error) if error.code == ErrorCode::NotFound && names_an_order(&reference) => {
            coa_of_order(peers, caller, reference, error).await
        }
        Err(error) => Err(error),
    }
}

/// Whether `reference` may name an order rather than a COA (an accession number is the
/// sample's, which results-svc resolves itself).
pub(crate) fn names_an_order(reference: &str) -> bool {
    !reference.trim().starts_with("ACC-")
}

/// The one COA of the order `reference` names (see [`get_coa`]); `not_found` answers when the
/// order is missing, another customer's, or has no COA.
async fn coa_of_order(
    peers: &Peers,
    caller: &Caller,
    reference: String,
    not_found: ApiError,
) -> Result<Coa, ApiError> {
    let order = match super::data_release(peers, caller, reference).await {
        Ok(order) => order,
        Err(error) if matches!(error.code, ErrorCode::NotFound | ErrorCode::InvalidRequest) => {
            return Err(not_found);
        }
        Err(error) => return Err(error),
    };
    let page = peers
        .results()
        .list_results(outgoing(
            pb::ListResultsRequest {
                order_id: Some(order.order_id),
                limit: Some(200),
                ..Default::default()
            },
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let coas = page
        .coas
        .into_iter()
        .map(Coa::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    let in_force: Vec<&Coa> = coas.iter().filter(|coa| coa.status == "published").collect();
    let candidates: Vec<&Coa> = if in_force.is_empty() {
        coas.iter().collect()
    } else {
        in_force
    };
    match candidates.as_slice() {
        [] => Err(not_found),
        [only] => {
            let id = only.id.clone();
            coas.into_iter()
                .find(|coa| coa.id == id)
                .ok_or_else(|| missing("COA"))
        }
        several => Err(crate::operations::ambiguous(
            "COAs",
            &order.order_number,
            several
                .iter()
                .map(|coa| serde_json::json!({ "id": coa.id, "accessionNumber": coa.accession_number }))
                .collect(),
        )),
    }
}

/// `GET /results/{reference}`: one published COA by COA id or accession number.
pub async fn get_result(
    peers: &Peers,
    caller: &Caller,
    site: &str,
    reference: String,
) -> Result<CoaEnvelope, ApiError> {
    Ok(get_coa(peers, caller, reference).await?.with_site(site).into())
}

/// `GET /api/v1/documents/coa/{coaId}`: the PDF behind a signed link (no key).
pub async fn coa_document(
    peers: &Peers,
    coa_id: String,
    expires: i64,
    signature: String,
) -> Result<(Vec<u8>, String), ApiError> {
    let response = peers
        .results()
        .render_coa_pdf(public(pb::RenderCoaPdfRequest {
            coa_id,
            expires,
            signature,
        }))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok((response.pdf, response.filename))
}

/// `GET /results/{reference}/analytes`: the normalized analyte rows of one published COA.
pub async fn list_analytes(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<AnalyteList, ApiError> {
    let coa = get_coa(peers, caller, reference).await?;
    let rows: Vec<Analyte> = coa.results;
    Ok(AnalyteList::new(rows, None))
}

/// `GET /orders/{reference}/samples`: the order's sample items with their published COAs.
pub async fn list_samples(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<OrderSamplesEnvelope, ApiError> {
    let response = peers
        .orders()
        .list_samples(outgoing(
            orders::ListSamplesRequest { reference },
            &caller.token(ORDERS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let order = Order::try_from(response.order.ok_or_else(|| missing("order"))?)?;
    let mut samples = response
        .samples
        .into_iter()
        .map(Sample::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    let may_read_results = caller
        .principal
        .scopes
        .iter()
        .any(|scope| scope == proto::scopes::RESULTS_READ);
    if may_read_results && samples.iter().any(|sample| sample.accession_number.is_some()) {
        let query = ResultsQuery {
            order_id: uuid::Uuid::parse_str(&order.id).ok(),
            limit: Some(platform::pagination::MAX_LIMIT),
            ..ResultsQuery::default()
        };
        for coa in list_results(peers, caller, "", query).await?.data {
            if let Some(sample) = samples
                .iter_mut()
                .find(|sample| sample.accession_number.as_deref() == Some(coa.accession_number.as_str()))
            {
                sample.coa_ids.push(coa.id);
            }
        }
    }
    Ok(OrderSamples::new(order, samples).into())
}

/// `GET /orders/{reference}/custody`: the hash-chained chain of custody.
pub async fn get_custody(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<CustodyEnvelope, ApiError> {
    let response = peers
        .orders()
        .get_custody(outgoing(
            orders::GetCustodyRequest { reference },
            &caller.token(ORDERS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok(CustodyEnvelope {
        data: CustodyData {
            custody: Custody::try_from(response)?,
        },
    })
}

/// `GET /orders/{reference}/eta`: stage-by-stage progress with a non-binding ETA.
pub async fn get_eta(peers: &Peers, caller: &Caller, reference: String) -> Result<EtaEnvelope, ApiError> {
    let response = peers
        .orders()
        .get_eta(outgoing(
            orders::GetOrderRequest { reference },
            &caller.token(ORDERS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok(EtaEnvelope {
        data: EtaData {
            eta: Eta::from(response),
        },
    })
}

/// Most accessions of one batch verification (results-svc refuses more).
pub const MAX_VERIFY_BATCH: usize = 100;

async fn verify_all(
    peers: &Peers,
    accessions: Vec<String>,
    code: Option<String>,
) -> Result<Vec<Verification>, ApiError> {
    let response = peers
        .results()
        .verify_coas(public(pb::VerifyCoasRequest {
            accession_numbers: accessions,
            verification_code: code,
        }))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok(response
        .verifications
        .into_iter()
        .map(Verification::from)
        .collect())
}

/// `GET`/`POST /verify`: the public check of one accession (with the code: compound and lot),
/// charged to the global lookup ceiling.
pub async fn verify(
    peers: &Peers,
    ceiling: &LookupCeiling,
    client: std::net::IpAddr,
    accession: Option<String>,
    code: Option<String>,
) -> Result<VerificationEnvelope, ApiError> {
    let accession = accession
        .filter(|accession| !accession.trim().is_empty())
        .ok_or_else(|| ApiError::field(ErrorCode::InvalidRequest, "accession", "accession is required"))?;
    ceiling.charge(client, 1).await?;
    let mut verifications = verify_all(peers, vec![accession], code).await?;
    let verification = verifications.pop().ok_or_else(|| missing("verification"))?;
    Ok(verification.into())
}

/// `GET`/`POST /verify/batch`: the public check of 1 to 100 accessions (no codes: authenticity
/// only), each charged to the global lookup ceiling (a list results-svc refuses is not charged).
pub async fn verify_batch(
    peers: &Peers,
    ceiling: &LookupCeiling,
    client: std::net::IpAddr,
    accessions: Vec<String>,
) -> Result<VerificationList, ApiError> {
    if (1..=MAX_VERIFY_BATCH).contains(&accessions.len()) {
        ceiling.charge(client, accessions.len()).await?;
    }
    Ok(VerificationList {
        data: verify_all(peers, accessions, None).await?,
    })
}

/// `GET /.well-known/coa-signing-key.json`: the JWK set of every key a COA may name, the current
/// key first.
pub async fn signing_keys(peers: &Peers) -> Result<CoaSigningKeySet, ApiError> {
    let response = peers
        .results()
        .get_signing_key(public(pb::GetSigningKeyRequest {}))
        .await
        .map_err(service_error)?
        .into_inner();
    if response.keys.is_empty() {
        return Err(ApiError::internal("results-svc answered no COA signing key"));
    }
    Ok(CoaSigningKeySet {
        keys: response.keys.into_iter().map(Into::into).collect(),
    })
}
