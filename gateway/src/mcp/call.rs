//! `tools/call`: the arguments of a tool become the inputs of its REST twin (path and query
//! parameters, body, `Idempotency-Key`), refused with the same error codes as REST, and the tool
//! calls the same function of `crate::operations` that the REST handler calls. The answer is the
//! REST body, serialized once.

use super::tools::Tool;
use crate::caller::Caller;
use crate::dto::results::{VerifyBatchQuery, VerifyBatchRequest, VerifyQuery, VerifyRequest};
use crate::dto::webhooks::EmptyBody;
use crate::http::extract::{from_value, query_from_value};
use crate::limits::ceiling::LookupCeiling;
use crate::operations::{self, Replayable, results, shipping, webhooks};
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

/// A tool's answer: the REST body as JSON text, and whether it is the stored replay of an earlier
/// call with the same idempotency key.
pub struct Output {
    pub json: Json,
    pub replayed: bool,
}

/// The REST body of a tool's answer: serialized here, or the order as orders-svc rendered it
/// (kept in pieces, so that the answer is the one copy of it).
pub enum Json {
    Serialized(Vec<u8>),
    Order(operations::OrderDocument),
}

impl Json {
    /// The body's bytes in pieces that joined are the JSON text.
    pub fn pieces(&self) -> [&[u8]; 3] {
        match self {
            Json::Serialized(json) => [json, b"", b""],
            Json::Order(document) => document.pieces(),
        }
    }
}

/// Runs `tool` for `caller` with `arguments` (already checked by the input rules).
pub async fn call(
    tool: &Tool,
    peers: &Peers,
    verify_lookups: &LookupCeiling,
    client: std::net::IpAddr,
    site: &str,
    caller: &Caller,
    arguments: Map<String, Value>,
) -> Result<Output, ApiError> {
    let mut arguments = Arguments(arguments);
    // Every tool but `svc.order.get` (the hot read) awaits its operation in a box: this future is
    // then about as large as REST's `get_order` (2.4 KB) instead of the largest tool's (5.5 KB),
    // and it is moved into the handler's box on every call.
    match tool.name {
        "svc.catalog.search" => {
            let query = arguments.query()?;
            read(Box::pin(operations::list_catalog(peers, caller, query)).await?)
        }
        "svc.quote.create" => {
            let body = arguments.body()?;
            read(Box::pin(operations::create_quote(peers, caller, body)).await?)
        }
        "svc.order.create" => {
            let key = arguments.idempotency_key()?;
            let body = arguments.body()?;
            replayable(Box::pin(operations::create_order(peers, caller, &key, body)).await?)
        }
        "svc.order.list" => {
            let query = arguments.query()?;
            read(Box::pin(operations::list_orders(peers, caller, query)).await?)
        }
        "svc.order.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            // The REST body as orders-svc rendered it: no JSON parsed or re-serialized.
            Ok(Output {
                json: Json::Order(operations::get_order(peers, caller, reference).await?),
                replayed: false,
            })
        }
        "svc.invoice.list" => {
            let query = arguments.query()?;
            read(Box::pin(operations::list_invoices(peers, caller, query)).await?)
        }
        "svc.invoice.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(operations::get_invoice(peers, caller, reference)).await?)
        }
        "svc.payment.list" => {
            let query = arguments.query()?;
            read(Box::pin(operations::list_payments(peers, caller, query)).await?)
        }
        "svc.payment.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(operations::get_payment(peers, caller, reference)).await?)
        }
        "svc.shipment.list" => {
            let query = arguments.query()?;
            read(Box::pin(shipping::list_shipments(peers, caller, query)).await?)
        }
        "svc.shipment.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(shipping::get_shipment(peers, caller, reference)).await?)
        }
        "svc.shipment.label.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(shipping::get_label(peers, caller, reference)).await?)
        }
        "svc.pickup.options" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(shipping::pickup_options(peers, caller, reference)).await?)
        }
        "svc.pickup.request" => {
            let key = arguments.idempotency_key()?;
            let reference = arguments.reference()?;
            let body = arguments.body()?;
            replayable(Box::pin(shipping::request_pickup(peers, caller, &key, reference, body)).await?)
        }
        "svc.payment.card.checkout" => {
            let key = arguments.idempotency_key()?;
            let body = arguments.body()?;
            replayable(Box::pin(operations::checkout::prepare_payment(peers, caller, &key, body)).await?)
        }
        "svc.payment.stablecoin.request" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(
                Box::pin(operations::checkout::get_stablecoin_payment(
                    peers, caller, reference,
                ))
                .await?,
            )
        }
        "svc.payment.stablecoin.submit" => {
            let key = arguments.idempotency_key()?;
            let body = arguments.body()?;
            replayable(
                Box::pin(operations::checkout::submit_stablecoin_transaction(
                    peers, caller, &key, body,
                ))
                .await?,
            )
        }
        "svc.spend.envelope.get" => {
            arguments.nothing_else()?;
            read(Box::pin(operations::checkout::spend_envelope(peers, caller)).await?)
        }
        "svc.webhook.list" => {
            let query = arguments.query()?;
            read(Box::pin(webhooks::list_endpoints(peers, caller, query)).await?)
        }
        "svc.webhook.create" => {
            let key = arguments.idempotency_key()?;
            let body = arguments.body()?;
            replayable(Box::pin(webhooks::create_endpoint(peers, caller, &key, body)).await?)
        }
        "svc.webhook.delete" => {
            let (endpoint_id, key) = arguments.endpoint_mutation()?;
            replayable(Box::pin(webhooks::delete_endpoint(peers, caller, &key, endpoint_id)).await?)
        }
        "svc.webhook.secret.rotate" => {
            let (endpoint_id, key) = arguments.endpoint_mutation()?;
            replayable(Box::pin(webhooks::rotate_secret(peers, caller, &key, endpoint_id)).await?)
        }
        "svc.webhook.test" => {
            let (endpoint_id, key) = arguments.endpoint_mutation()?;
            replayable(Box::pin(webhooks::send_test_delivery(peers, caller, &key, endpoint_id)).await?)
        }
        "svc.webhook.delivery.list" => {
            let endpoint_id = arguments.endpoint_id()?;
            let query = arguments.query()?;
            read(Box::pin(webhooks::list_deliveries(peers, caller, endpoint_id, query)).await?)
        }
        "svc.order.sample.list" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(results::list_samples(peers, caller, reference)).await?)
        }
        "svc.order.custody.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(results::get_custody(peers, caller, reference)).await?)
        }
        "svc.order.eta.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(results::get_eta(peers, caller, reference)).await?)
        }
        // Document links are absolute under the configured site URL, as over REST.
        "svc.result.list" => {
            let query = arguments.query()?;
            read(Box::pin(results::list_results(peers, caller, site, query)).await?)
        }
        "svc.result.get" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(results::get_result(peers, caller, site, reference)).await?)
        }
        "svc.result.analyte.list" => {
            let reference = arguments.reference()?;
            arguments.nothing_else()?;
            read(Box::pin(results::list_analytes(peers, caller, reference)).await?)
        }
        "svc.coa.verify" => {
            let query: VerifyQuery = arguments.query()?;
            read(
                Box::pin(results::verify(
                    peers,
                    verify_lookups,
                    client,
                    query.accession,
                    query.code,
                ))
                .await?,
            )
        }
        "svc.coa.verify.post" => {
            let body: VerifyRequest = arguments.body()?;
            read(
                Box::pin(results::verify(
                    peers,
                    verify_lookups,
                    client,
                    Some(body.accession),
                    body.code,
                ))
                .await?,
            )
        }
        "svc.coa.verify.batch" => {
            let query: VerifyBatchQuery = arguments.query()?;
            read(
                Box::pin(results::verify_batch(
                    peers,
                    verify_lookups,
                    client,
                    query.split(),
                ))
                .await?,
            )
        }
        "svc.coa.verify.batch.post" => {
            let body: VerifyBatchRequest = arguments.body()?;
            read(
                Box::pin(results::verify_batch(
                    peers,
                    verify_lookups,
                    client,
                    body.accessions,
                ))
                .await?,
            )
        }
        other => Err(ApiError::internal(format!(
            "the tool {other} has no call in gateway/src/mcp/call.rs"
        ))),
    }
}

fn read(body: impl Serialize) -> Result<Output, ApiError> {
    Ok(Output {
        json: Json::Serialized(serialize(&body)?),
        replayed: false,
    })
}

fn replayable<T: Serialize>(outcome: Replayable<T>) -> Result<Output, ApiError> {
    Ok(Output {
        json: Json::Serialized(serialize(&outcome.body)?),
        replayed: outcome.replayed,
    })
}

/// The REST body as JSON bytes, written once into a buffer sized for a typical answer (an order
/// is a few KiB) so that it seldom grows.
fn serialize(body: &impl Serialize) -> Result<Vec<u8>, ApiError> {
    let mut json = Vec::with_capacity(4096);
    serde_json::to_writer(&mut json, body)
        .map_err(|error| ApiError::internal(format!("serializing a tool result: {error}")))?;
    Ok(json)
}

/// The arguments of one call, taken apart like a REST request.
struct Arguments(Map<String, Value>);

impl Arguments {
    /// `idempotencyKey`, required (the `Idempotency-Key` header of REST, with its rules).
    fn idempotency_key(&mut self) -> Result<String, ApiError> {
        let field = serde_json::json!({ "field": "idempotencyKey" });
        match self.0.remove("idempotencyKey") {
            None | Some(Value::Null) => Err(ApiError::new(
                ErrorCode::IdempotencyKeyMissing,
                "the idempotencyKey argument is required (the Idempotency-Key of REST)",
            )
            .with_details(field)),
            Some(Value::String(key)) => {
                platform::grpc::validate_idempotency_key(&key).map_err(|error| {
                    ApiError::new(
                        error.code,
                        "the idempotencyKey argument must be 8 to 255 visible ASCII characters",
                    )
                    .with_details(field)
                })?;
                Ok(key)
            }
            Some(_) => Err(ApiError::new(
                ErrorCode::IdempotencyKeyInvalid,
                "the idempotencyKey argument must be a string of 8 to 255 visible ASCII characters",
            )
            .with_details(field)),
        }
    }

    /// `reference` (a UUID or a public reference; the service resolves it), required.
    fn reference(&mut self) -> Result<String, ApiError> {
        match self.0.remove("reference") {
            Some(Value::String(reference)) if !reference.is_empty() => Ok(reference),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "reference",
                "the reference argument is required: a UUID or a public reference",
            )),
        }
    }

    /// `endpointId`, a UUID (the REST path segment's rule).
    fn endpoint_id(&mut self) -> Result<Uuid, ApiError> {
        let id = match self.0.remove("endpointId") {
            Some(Value::String(id)) => Uuid::try_parse(&id).ok(),
            _ => None,
        };
        id.ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "endpointId",
                "endpointId must be a UUID",
            )
        })
    }

    /// The endpoint id and idempotency key of delete, rotate-secret and test, which take no body.
    fn endpoint_mutation(&mut self) -> Result<(Uuid, String), ApiError> {
        let endpoint_id = self.endpoint_id()?;
        let key = self.idempotency_key()?;
        let EmptyBody {} = self.take_body()?;
        Ok((endpoint_id, key))
    }

    /// Refuses any argument left (a read by reference takes nothing else).
    fn nothing_else(&self) -> Result<(), ApiError> {
        match self.0.keys().next() {
            None => Ok(()),
            Some(name) => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                name,
                format!("invalid query parameter {name}: unknown field `{name}`"),
            )),
        }
    }

    /// The remaining arguments as the twin's query (unknown names refused).
    fn query<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        query_from_value(Value::Object(std::mem::take(&mut self.0)))
    }

    /// The remaining arguments as the twin's JSON body (unknown names refused).
    fn body<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        self.take_body()
    }

    fn take_body<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        from_value(Value::Object(std::mem::take(&mut self.0)))
    }
}
