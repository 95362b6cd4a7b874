//! Translation of each REST use case to its gRPC call: JSON shapes in, the service call with
//! the caller's principal token (and idempotency key), JSON shapes out. REST handlers and the
//! MCP tools (`crate::mcp::call`) call these, so every use case has exactly one mapping to gRPC. The webhook
//! use cases are in [`webhooks`], payment preparation and the pay page's calls in [`checkout`],
//! the instrument and method registries in [`registry`].

pub mod checkout;
pub mod data;
pub mod notifications;
pub mod registry;
pub mod results;
pub mod sandbox;
pub mod shipping;
pub mod support;
pub mod webhooks;

use crate::caller::Caller;
use crate::dto::billing::{
    Invoice, InvoiceEnvelope, InvoiceList, InvoicesQuery, Payment, PaymentEnvelope, PaymentList,
    PaymentsQuery,
};
use crate::dto::catalog::{CatalogPage, CatalogQuery};
use crate::dto::orders::{
    AddonEnvelope, AddonRequestBody, CancelRequestBody, CancellationEnvelope, CancellationRequest,
    CreateOrderRequest, Order, OrderAddon, OrderEnvelope, OrderList, OrdersQuery,
};
use crate::dto::quotes::{CreateQuoteRequest, Quote, QuoteEnvelope};
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::{IDEMPOTENT_REPLAYED, outgoing, outgoing_idempotent};
use platform::mesh::{CATALOG_SVC, ORDERS_SVC, PAYMENTS_SVC};
use proto::{catalog, orders, payments};

/// The answer of an idempotent mutation, and whether it is the stored replay of an earlier
/// request (the service marked it `idempotent-replayed: true`).
pub struct Replayable<T> {
    pub body: T,
    pub replayed: bool,
}

/// Whether a service marked its answer as the stored replay of an earlier request.
pub fn is_replay<T>(response: &tonic::Response<T>) -> bool {
    response
        .metadata()
        .get(IDEMPOTENT_REPLAYED)
        .is_some_and(|value| value == "true")
}

/// Converts a service's gRPC status. A service refusing the gateway's own principal token is
/// the gateway's fault (secrets out of step), not the client's: it becomes an internal error.
pub fn service_error(status: tonic::Status) -> ApiError {
    let error = ApiError::from_status(&status);
    if error.code == ErrorCode::Unauthenticated {
        return ApiError::internal(format!(
            "a service refused the principal token: {}",
            status.message()
        ));
    }
    error
}

/// The internal error of a service answer that lacks a field it must carry.
pub fn missing(what: &str) -> ApiError {
    ApiError::internal(format!("a service answered without the {what}"))
}

/// `GetDataRelease`: the order a reference (UUID, `ORD-`, `INV-`, `ACC-` or tracking number)
/// names for the caller; another customer's answers `not_found` like a missing one.
pub async fn data_release(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<orders::DataRelease, ApiError> {
    Ok(peers
        .orders()
        .get_data_release(outgoing(
            orders::GetOrderRequest { reference },
            &caller.token(ORDERS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner())
}

/// 409 `ambiguous_reference`: the order `order_number` has several `what`; `candidates` name
/// each by its own reference.
pub fn ambiguous(what: &str, order_number: &str, candidates: Vec<serde_json::Value>) -> ApiError {
    ApiError::new(
        ErrorCode::AmbiguousReference,
        format!("order {order_number} has several {what}: ask with one of details.candidates"),
    )
    .with_details(serde_json::json!({ "orderNumber": order_number, "candidates": candidates }))
}

/// `GET /catalog`: one page of the catalog.
pub async fn list_catalog(
    peers: &Peers,
    caller: &Caller,
    query: CatalogQuery,
) -> Result<CatalogPage, ApiError> {
    let includes = query.includes();
    let request = catalog::ListCatalogItemsRequest {
        category: query.category,
        query: query.query,
        include: includes.clone(),
        limit: query.limit,
        cursor: query.cursor,
        catalog_revision: None,
    };
    let page = peers
        .catalog()
        .list_catalog_items(outgoing(request, &caller.token(CATALOG_SVC)))
        .await
        .map_err(service_error)?;
    Ok(CatalogPage::from_proto(page.into_inner(), &includes))
}

/// `POST /quotes`: a server-priced quote.
pub async fn create_quote(
    peers: &Peers,
    caller: &Caller,
    body: CreateQuoteRequest,
) -> Result<QuoteEnvelope, ApiError> {
    let request = catalog::CreateQuoteRequest::from(body);
    let response = peers
        .catalog()
        .create_quote(outgoing(request, &caller.token(CATALOG_SVC)))
        .await
        .map_err(service_error)?;
    let quote = response.into_inner().quote.ok_or_else(|| missing("quote"))?;
    Ok(Quote::try_from(quote)?.into())
}

/// `POST /orders`: places an order from a quote under an idempotency key.
pub async fn create_order(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    body: CreateOrderRequest,
) -> Result<Replayable<CreatedOrder>, ApiError> {
    let request = orders::CreateOrderRequest::from(body);
    let response = peers
        .orders()
        .create_order(outgoing_idempotent(
            request,
            &caller.token(ORDERS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let response = response.into_inner();
    // The read model's document, as `GET /orders/{reference}` answers it: the shipping block of
    // a card or bank order included (its label, or the pending block).
    if let Some(view) = response.view {
        return Ok(Replayable {
            body: CreatedOrder::Document(order_document(peers, caller, view).await?),
            replayed,
        });
    }
    let order = response.order.ok_or_else(|| missing("order"))?;
    let mut order = Order::try_from(order)?;
    show_pay_link_to_payments_keys(&mut order, caller);
    Ok(Replayable {
        body: CreatedOrder::Fields(Box::new(order.into())),
        replayed,
    })
}

/// The answer of `POST /orders`: the order's read-model document (the same bytes
/// `GET /orders/{reference}` answers), or, from an orders-svc that sends none, the order built
/// from its fields.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum CreatedOrder {
    Document(OrderDocument),
    Fields(Box<OrderEnvelope>),
}

/// Files a cancellation request for one of the caller's orders (a human decides it).
pub async fn request_cancellation(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    reference: String,
    body: CancelRequestBody,
) -> Result<Replayable<CancellationEnvelope>, ApiError> {
    let derived;
    let idempotency_key = match idempotency_key {
        Some(key) => key,
        None => {
            derived = cancel_request_key(&caller.principal.subject, &reference, &body);
            derived.as_str()
        }
    };
    let request = orders::RequestCancellationRequest {
        reference,
        reason: body.reason,
        confirm: body.confirm,
    };
    let response = peers
        .orders()
        .request_cancellation(outgoing_idempotent(
            request,
            &caller.token(ORDERS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let request = response
        .into_inner()
        .cancel_request
        .ok_or_else(|| missing("cancel_request"))?;
    Ok(Replayable {
        body: CancellationRequest::try_from(request)?.into(),
        replayed,
    })
}

/// An answer that is either a read (200: a preview) or a creation (201, replayable).
pub struct Staged<T> {
    pub outcome: Replayable<T>,
    pub created: bool,
}

/// `POST /orders/{reference}/addons`: prices add-on tests on a line's retained sample
/// (`confirm` false: 200, nothing stored) or orders them (`confirm: true`, `Idempotency-Key`
/// required: 201, a replay answers the same with `Idempotent-Replayed: true`).
pub async fn request_addon(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    reference: String,
    body: AddonRequestBody,
) -> Result<Staged<AddonEnvelope>, ApiError> {
    let confirm = body.confirm;
    let request = orders::RequestAddonRequest {
        reference,
        line_number: body.line_number,
        test_ids: body.test_ids,
        confirm,
    };
    let token = caller.token(ORDERS_SVC);
    let call = match (confirm, idempotency_key) {
        (true, None) => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyMissing,
                "ordering an add-on (confirm: true) requires the Idempotency-Key header (idempotencyKey in MCP)",
            )
            .with_details(serde_json::json!({ "field": "Idempotency-Key" })));
        }
        (true, Some(key)) => outgoing_idempotent(request, &token, key),
        (false, _) => outgoing(request, &token),
    };
    let response = peers.orders().request_addon(call).await.map_err(service_error)?;
    let replayed = is_replay(&response);
    let addon = response.into_inner().addon.ok_or_else(|| missing("addon"))?;
    let mut addon = OrderAddon::from(addon);
    if !sees_pay_links(caller)
        && let Some(invoice) = addon.invoice.as_mut()
    {
        invoice.hosted_url = None;
    }
    Ok(Staged {
        outcome: Replayable {
            body: addon.into(),
            replayed,
        },
        created: confirm,
    })
}

/// The idempotency key of a cancellation request sent without one: a digest of the API key's
/// subject, the reference and the whole body, 71 visible ASCII characters. The same request sent
/// again is the same request; filing again after a decline needs another reason or a key.
pub fn cancel_request_key(subject: &str, reference: &str, body: &CancelRequestBody) -> String {
    let confirm = if body.confirm { "true" } else { "false" };
    derived_key("cancel:", &[subject, reference, &body.reason, confirm])
}

/// The idempotency key of a request sent without one, where the spec leaves the header optional:
/// `prefix` and the SHA-256 (hex) of `parts`, each followed by a 0 byte (visible ASCII, 64
/// characters plus the prefix).
pub fn derived_key(prefix: &str, parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut key = String::with_capacity(prefix.len() + 64);
    key.push_str(prefix);
    for byte in digest {
        key.push_str(&format!("{byte:02x}"));
    }
    key
}

/// Whether the caller's key holds a payments scope (`payments:read` or `payments:write`): only
/// such keys see an order's `payment.hostedUrl`, the link that takes a card payment.
fn sees_pay_links(caller: &Caller) -> bool {
    caller
        .principal
        .scopes
        .iter()
        .any(|scope| scope == "payments:read" || scope == "payments:write")
}

/// Blanks `payment.hostedUrl` for a key without a payments scope.
fn show_pay_link_to_payments_keys(order: &mut Order, caller: &Caller) {
    if !sees_pay_links(caller)
        && let Some(payment) = order.payment.as_mut()
    {
        payment.hosted_url = None;
    }
    if !sees_pay_links(caller) {
        for invoice in order.addons.iter_mut().filter_map(|addon| addon.invoice.as_mut()) {
            invoice.hosted_url = None;
        }
    }
}

/// `GET /orders`: one page of the customer's orders.
pub async fn list_orders(peers: &Peers, caller: &Caller, query: OrdersQuery) -> Result<OrderList, ApiError> {
    let request = orders::ListOrdersRequest {
        status: query.status,
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .orders()
        .list_orders(outgoing(request, &caller.token(ORDERS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .orders
        .into_iter()
        .map(|order| {
            let mut order = Order::try_from(order)?;
            show_pay_link_to_payments_keys(&mut order, caller);
            Ok(order)
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(OrderList::new(data, page.next_cursor))
}

/// `GET /orders/{reference}`'s answer: `{"data":{"order":…}}` around the `order` object that
/// orders-svc's read model rendered (the shape of [`Order`], byte for byte). The gateway neither
/// parses nor re-serializes it; it keeps the order's bytes as they came, and each front end
/// writes the envelope around them where it writes its answer.
#[derive(Debug)]
pub struct OrderDocument {
    order: String,
}

impl serde::Serialize for OrderDocument {
    /// `{"data":{"order":…}}` with the order's bytes as they came (for answers built by serde,
    /// such as the replayable answer of `POST /orders`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Envelope<'a> {
            data: Data<'a>,
        }
        #[derive(serde::Serialize)]
        struct Data<'a> {
            order: &'a serde_json::value::RawValue,
        }
        let order: &serde_json::value::RawValue =
            serde_json::from_str(&self.order).map_err(serde::ser::Error::custom)?;
        Envelope { data: Data { order } }.serialize(serializer)
    }
}

impl OrderDocument {
    const HEAD: &'static str = "{\"data\":{\"order\":";
    const TAIL: &'static str = "}}";

    fn new(order: Vec<u8>) -> Result<Self, ApiError> {
        let order = String::from_utf8(order).map_err(|_| missing("order as UTF-8 JSON"))?;
        Ok(Self { order })
    }

    /// The JSON body in its three pieces (envelope head, order, envelope tail), which joined
    /// are [`OrderDocument::into_json`].
    pub fn pieces(&self) -> [&str; 3] {
        [Self::HEAD, &self.order, Self::TAIL]
    }

    /// The JSON body.
    pub fn into_json(self) -> String {
        [Self::HEAD, &self.order, Self::TAIL].concat()
    }
}

/// `GET /orders/{reference}`: one order by UUID, order number, invoice number, accession number
/// or tracking number, with its `shipping` block once the label exists: one call to orders-svc,
/// which answers from its read model (the block included, its label URL signed for this read).
pub async fn get_order(peers: &Peers, caller: &Caller, reference: String) -> Result<OrderDocument, ApiError> {
    let view = match read_order_view(peers, caller, reference.clone()).await {
        Err(error) if error.code == ErrorCode::NotFound => {
            // Not a reference orders-svc knows: maybe the tracking number of an order labelled
            // before the read model kept tracking numbers.
            let Some(order_id) = shipping::order_of_tracking_number(peers, caller, &reference).await? else {
                return Err(error);
            };
            read_order_view(peers, caller, order_id).await?
        }
        other => other?,
    };
    order_document(peers, caller, view).await
}

/// The answer of a read-model document: the pay link blanked for a key without a payments
/// scope, and the shipping block of an order labelled before the read model kept blocks
/// spliced in from shipping-svc.
async fn order_document(
    peers: &Peers,
    caller: &Caller,
    view: orders::GetOrderViewResponse,
) -> Result<OrderDocument, ApiError> {
    let mut json = view.json;
    let mut at = usize::try_from(view.shipping_offset).unwrap_or(usize::MAX);
    if !sees_pay_links(caller) {
        // The order's link and each add-on's: every `"hostedUrl":"…"` becomes null.
        while let Some((position, removed)) = crate::dto::orders::blank_hosted_url(&mut json) {
            if at > position && at != usize::MAX {
                at -= removed;
            }
        }
    }
    if !view.shipping_unknown {
        return OrderDocument::new(json);
    }
    // An order labelled before orders-svc kept shipping blocks: its block comes from
    // shipping-svc, spliced in place of the `null` at `shipping_offset`.
    if json.get(at..at + 4) != Some(b"null".as_slice()) {
        return Err(missing("order's shipping offset"));
    }
    if let Some(label) = shipping::order_shipping(peers, caller, &view.order_id).await? {
        let block = serde_json::to_vec(&label).map_err(ApiError::internal)?;
        json.splice(at..at + 4, block);
    }
    OrderDocument::new(json)
}

async fn read_order_view(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<orders::GetOrderViewResponse, ApiError> {
    let request = orders::GetOrderRequest { reference };
    Ok(peers
        .orders()
        .get_order_view(outgoing(request, &caller.token(ORDERS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner())
}

/// `GET /invoices`: one page of the customer's invoices.
pub async fn list_invoices(
    peers: &Peers,
    caller: &Caller,
    query: InvoicesQuery,
) -> Result<InvoiceList, ApiError> {
    let request = payments::ListInvoicesRequest {
        status: query.status,
        order_id: query.order_id.map(|id| id.to_string()),
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .payments()
        .list_invoices(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .invoices
        .into_iter()
        .map(Invoice::try_from)
        .collect::<Result<_, _>>()?;
    Ok(InvoiceList::new(data, page.next_cursor))
}

/// `GET /invoices/{reference}`: one invoice by UUID, invoice number or order id.
pub async fn get_invoice(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<InvoiceEnvelope, ApiError> {
    // payments-svc knows invoice UUIDs, INV- numbers and order UUIDs; an order number, accession
    // or tracking number names the order's invoice through orders-svc.
    let reference = if uuid::Uuid::parse_str(reference.trim()).is_ok() || reference.trim().starts_with("INV-")
    {
        reference
    } else {
        data_release(peers, caller, reference).await?.order_id
    };
    let request = payments::GetInvoiceRequest { reference };
    let response = peers
        .payments()
        .get_invoice(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error)?;
    let invoice = response.into_inner().invoice.ok_or_else(|| missing("invoice"))?;
    Ok(Invoice::try_from(invoice)?.into())
}

/// `GET /payments`: one page of the customer's payments.
pub async fn list_payments(
    peers: &Peers,
    caller: &Caller,
    query: PaymentsQuery,
) -> Result<PaymentList, ApiError> {
    let request = payments::ListPaymentsRequest {
        invoice_id: query.invoice_id.map(|id| id.to_string()),
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .payments()
        .list_payments(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .payments
        .into_iter()
        .map(Payment::try_from)
        .collect::<Result<_, _>>()?;
    Ok(PaymentList::new(data, page.next_cursor))
}

/// `GET /payments/{reference}`: one payment by UUID.
pub async fn get_payment(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<PaymentEnvelope, ApiError> {
    let request = payments::GetPaymentRequest {
        reference: reference.clone(),
    };
    let response = peers
        .payments()
        .get_payment(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error);
    let payment = match response {
        Ok(response) => response.into_inner().payment.ok_or_else(|| missing("payment"))?,
        Err(error) if error.code == ErrorCode::NotFound => {
            payment_of_order(peers, caller, reference, error).await?
        }
        Err(error) => return Err(error),
    };
    Ok(Payment::try_from(payment)?.into())
}

/// The one payment of the order an order-level reference names (order UUID or number, invoice,
/// tracking or accession number), on the order's own invoice: 409 `ambiguous_reference` with
/// the payment ids when there are several, the same 404 as a missing payment when none (or the
/// order is missing or another customer's).
async fn payment_of_order(
    peers: &Peers,
    caller: &Caller,
    reference: String,
    not_found: ApiError,
) -> Result<payments::Payment, ApiError> {
    let order = match data_release(peers, caller, reference).await {
        Ok(order) => order,
        Err(error) if matches!(error.code, ErrorCode::NotFound | ErrorCode::InvalidRequest) => {
            return Err(not_found);
        }
        Err(error) => return Err(error),
    };
    let token = caller.token(PAYMENTS_SVC);
    let invoice = match peers
        .payments()
        .get_invoice(outgoing(
            payments::GetInvoiceRequest {
                reference: order.order_id.clone(),
            },
            &token,
        ))
        .await
        .map_err(service_error)
    {
        Ok(answer) => answer.into_inner().invoice.ok_or_else(|| missing("invoice"))?,
        Err(error) if error.code == ErrorCode::NotFound => return Err(not_found),
        Err(error) => return Err(error),
    };
    let listed = peers
        .payments()
        .list_payments(outgoing(
            payments::ListPaymentsRequest {
                invoice_id: Some(invoice.id),
                limit: Some(100),
                cursor: None,
            },
            &token,
        ))
        .await
        .map_err(service_error)?
        .into_inner()
        .payments;
    match <[payments::Payment; 1]>::try_from(listed) {
        Ok([only]) => Ok(only),
        Err(listed) if listed.is_empty() => Err(not_found),
        Err(listed) => Err(ambiguous(
            "payments",
            &order.order_number,
            listed
                .iter()
                .map(|payment| serde_json::json!({ "id": payment.id }))
                .collect(),
        )),
    }
}
