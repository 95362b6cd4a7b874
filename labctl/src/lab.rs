//! The lab's commands: receiving samples, starting tests and disposing of retained samples
//! (orders-svc, lab.technician), and
//! the COA workflow (results-svc: lab.analyst records and submits, lab.qa approves, sends back,
//! publishes, retracts and amends; any operator shows).

use crate::client::{request, status_error, timestamp};
use crate::{Connection, ResultsCommand, SamplesCommand};
use anyhow::Context;
use platform::principal::roles;
use proto::common::OrderStatus;
use proto::enums::shown;
use proto::orders::orders_service_client::OrdersServiceClient;
use proto::results::results_service_client::ResultsServiceClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

pub(crate) async fn orders_client(connection: &Connection) -> anyhow::Result<OrdersServiceClient<Channel>> {
    connection
        .channel(&connection.orders_addr)
        .await
        .map(OrdersServiceClient::new)
        .with_context(|| format!("cannot reach orders-svc at {}", connection.orders_addr))
}

pub(crate) async fn results_client(connection: &Connection) -> anyhow::Result<ResultsServiceClient<Channel>> {
    connection
        .channel(&connection.results_addr)
        .await
        .map(ResultsServiceClient::new)
        .with_context(|| format!("cannot reach results-svc at {}", connection.results_addr))
}

/// The role a results command needs.
pub(crate) fn role_of(command: &ResultsCommand) -> &'static str {
    match command {
        ResultsCommand::Record { .. } | ResultsCommand::Submit { .. } => roles::LAB_ANALYST,
        ResultsCommand::Show { .. } => "",
        _ => roles::LAB_QA,
    }
}

/// Parses `LINE:UNITS:CONDITION:LOCATION:CONTAINERS`.
pub(crate) fn parse_sample(text: &str) -> anyhow::Result<proto::orders::SampleReceipt> {
    let parts: Vec<&str> = text.splitn(5, ':').collect();
    anyhow::ensure!(
        parts.len() == 5,
        "--sample must be LINE:UNITS:CONDITION:LOCATION:CONTAINERS, got {text:?}"
    );
    Ok(proto::orders::SampleReceipt {
        line_number: parts[0]
            .trim()
            .parse()
            .context("--sample: LINE must be a number")?,
        units: parts[1]
            .trim()
            .parse()
            .context("--sample: UNITS must be a number")?,
        condition: parts[2].trim().to_owned(),
        storage_location: parts[3].trim().to_owned(),
        containers: parts[4].trim().to_owned(),
    })
}

pub(crate) fn sample_json(sample: &proto::orders::Sample) -> Value {
    json!({
        "accessionNumber": sample.accession_number, "lineNumber": sample.line_number,
        "compoundName": sample.compound_name, "lotNumber": sample.lot_number, "units": sample.units,
        "containers": sample.containers, "condition": sample.condition,
        "storageLocation": sample.storage_location, "receivedAt": timestamp(sample.received_at.as_ref()),
        "receivedBy": sample.received_by, "testIds": sample.test_ids, "testNames": sample.test_names,
        "retainUntil": timestamp(sample.retain_until.as_ref()),
        "disposedAt": timestamp(sample.disposed_at.as_ref()),
    })
}

pub(crate) fn coa_json(coa: &proto::results::Coa, unchanged: bool) -> Value {
    let results: Vec<Value> = coa
        .results
        .iter()
        .map(|row| {
            json!({
                "analyte": row.analyte, "testId": row.test_id, "value": row.value, "qualifier": row.qualifier,
                "unit": row.unit, "specification": row.specification, "outcome": row.outcome,
                "method": row.method, "instrument": row.instrument, "analyst": row.analyst,
            })
        })
        .collect();
    json!({
        "id": coa.id, "accessionNumber": coa.accession_number, "orderNumber": coa.order_number,
        "compound": coa.compound, "lotNumber": coa.lot_number, "status": coa.status, "version": coa.version,
        "approvedBy": coa.approved_by, "publishedAt": timestamp(coa.published_at.as_ref()),
        "amends": coa.amends, "supersededBy": coa.superseded_by, "retractionReason": coa.retraction_reason,
        "sendBackReason": coa.send_back_reason, "verificationCode": coa.verification_code,
        "results": results, "unchanged": unchanged,
    })
}

pub(crate) async fn samples(
    connection: &Connection,
    token: &str,
    command: SamplesCommand,
) -> anyhow::Result<Value> {
    let mut client = orders_client(connection).await?;
    match command {
        SamplesCommand::Receive {
            order,
            tracking,
            samples,
        } => {
            let samples = samples
                .iter()
                .map(|text| parse_sample(text))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let message = proto::orders::ReceiveSamplesRequest {
                order_reference: order,
                tracking_number: tracking,
                samples,
            };
            let response = client
                .receive_samples(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            let order = response.order.unwrap_or_default();
            Ok(json!({
                "orderNumber": order.order_number, "status": shown::<OrderStatus>(order.status, order.legacy_status), "paymentState": order.payment_state,
                "alreadyReceived": response.already_received,
                "samples": response.samples.iter().map(sample_json).collect::<Vec<_>>(),
            }))
        }
        SamplesCommand::StartTesting { order } => {
            let message = proto::orders::StartTestingRequest {
                order_reference: order,
            };
            let response = client
                .start_testing(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            let order = response.order.unwrap_or_default();
            Ok(json!({
                "orderNumber": order.order_number, "status": shown::<OrderStatus>(order.status, order.legacy_status),
                "alreadyStarted": response.already_started,
            }))
        }
        SamplesCommand::Addons { order } => {
            let message = proto::orders::GetOrderRequest { reference: order };
            let order = client
                .get_lab_order(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner()
                .order
                .unwrap_or_default();
            Ok(json!({
                "orderNumber": order.order_number,
                "addons": order.addons.iter().map(addon_json).collect::<Vec<_>>(),
            }))
        }
        SamplesCommand::Dispose { accession, method } => {
            let message = proto::orders::DisposeSampleRequest {
                accession_number: accession,
                method,
            };
            let response = client
                .dispose_sample(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            let order = response.order.unwrap_or_default();
            let sample = response.sample.unwrap_or_default();
            Ok(json!({
                "orderNumber": order.order_number, "accessionNumber": sample.accession_number,
                "disposedAt": timestamp(sample.disposed_at.as_ref()),
                "alreadyDisposed": response.already_disposed,
            }))
        }
    }
}

/// One add-on as `samples addons` shows it.
fn addon_json(addon: &proto::orders::Addon) -> Value {
    let invoice = addon.invoice.as_ref();
    json!({
        "id": addon.id, "lineNumber": addon.line_number, "accessionNumber": addon.accession_number,
        "status": addon.status,
        "testIds": addon.tests.iter().map(|test| test.test_id.as_str()).collect::<Vec<_>>(),
        "totalCents": addon.total_cents,
        "invoiceNumber": invoice.map(|invoice| invoice.invoice_number.as_str()),
        "requestedAt": timestamp(addon.requested_at.as_ref()),
        "paidAt": timestamp(addon.paid_at.as_ref()),
        "reportedAt": timestamp(addon.reported_at.as_ref()),
    })
}

/// Parses the JSON rows of `results record`.
pub(crate) fn parse_rows(text: &str) -> anyhow::Result<Vec<proto::results::AnalyteResult>> {
    let rows: Vec<Value> = serde_json::from_str(text).context("--results-json must be a JSON array")?;
    let field = |row: &Value, name: &str| row[name].as_str().map(str::to_owned);
    rows.iter()
        .map(|row| {
            let measured_at = match field(row, "measuredAt") {
                Some(text) => Some(platform::time::to_timestamp(
                    chrono::DateTime::parse_from_rfc3339(&text)
                        .context("measuredAt must be RFC 3339")?
                        .to_utc(),
                )),
                None => None,
            };
            Ok(proto::results::AnalyteResult {
                analyte: field(row, "analyte").unwrap_or_default(),
                test_id: field(row, "testId").unwrap_or_default(),
                value: field(row, "value"),
                qualifier: field(row, "qualifier"),
                unit: field(row, "unit").unwrap_or_default(),
                loq: field(row, "loq"),
                lod: field(row, "lod"),
                specification: field(row, "specification"),
                outcome: field(row, "outcome"),
                method: field(row, "method").unwrap_or_default(),
                instrument: field(row, "instrument").unwrap_or_default(),
                analyst: String::new(),
                measured_at,
            })
        })
        .collect()
}

pub(crate) async fn results(
    connection: &Connection,
    token: &str,
    command: ResultsCommand,
) -> anyhow::Result<Value> {
    use proto::results::{AccessionRequest, ReasonRequest, RecordResultsRequest};
    let mut client = results_client(connection).await?;
    let accession = |accession: String| {
        request(
            AccessionRequest {
                accession_number: accession,
            },
            token,
        )
    };
    let reasoned = |reference: String, reason: String| request(ReasonRequest { reference, reason }, token);
    let response = match command {
        ResultsCommand::Record {
            accession,
            results_json,
        } => {
            let message = RecordResultsRequest {
                accession_number: accession,
                results: parse_rows(&results_json)?,
            };
            client.record_results(request(message, token)).await
        }
        ResultsCommand::Submit { accession: value } => client.submit_results(accession(value)).await,
        ResultsCommand::Approve { accession: value } => client.approve_results(accession(value)).await,
        ResultsCommand::SendBack {
            accession: value,
            reason,
        } => client.send_back(reasoned(value, reason)).await,
        ResultsCommand::Publish { accession: value } => client.publish_coa(accession(value)).await,
        ResultsCommand::Retract { coa, reason } => client.retract_coa(reasoned(coa, reason)).await,
        ResultsCommand::Amend { coa, reason } => client.amend_coa(reasoned(coa, reason)).await,
        ResultsCommand::Show { accession: value } => client.get_lab_coa(accession(value)).await,
    }
    .map_err(status_error)?
    .into_inner();
    Ok(coa_json(&response.coa.unwrap_or_default(), response.unchanged))
}
