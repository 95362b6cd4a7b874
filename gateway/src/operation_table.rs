//! The operation table: every REST operation of the agent area declared once, with everything
//! the four views need. [`operation_table!`] hands the declarations to a callback macro, and each
//! view takes its part:
//!
//! - `crate::scopes` builds the scope table (`scopes::BUILT`: method, path, scopes or public,
//!   idempotency, whether the scope is our decision or the operation our addition);
//! - `crate::http::api` generates each REST handler with its `#[utoipa::path]` attribute (the
//!   doc comment, method, path and `openapi` part) and the router, so the OpenAPI document comes
//!   from the same declaration;
//! - `crate::mcp::tools` builds the tool table (`tools/list` derives the schemas from the
//!   OpenAPI document) and `crate::mcp::call` the `tools/call` dispatch.
//!
//! One declaration reads:
//!
//! ```text
//! {
//!     route: get "/orders/{reference}",          // HTTP method and path (relative to /api/v1/agent)
//!     tool: {                                    // the MCP tool
//!         name: "svc.order.get", title: "…", annotations: READ, guard: "", description: "…",
//!     },
//!     scope: { access: [ORDERS_READ], origin: spec, idempotency: none },
//!     rest: {
//!         /// The REST description (utoipa: first line summary, the rest description).
//!         handler: get_order,                    // name of the generated REST handler
//!         openapi: (tag = "orders", operation_id = "getOrder", params(…), responses(…)),
//!     },
//!     call: {
//!         answer: order,
//!         run: |cx, caller: Caller, reference: Reference| operations::get_order(cx.peers, &caller, reference),
//!     },
//! }
//! ```
//!
//! Each view reads the parts it needs (`route` and `tool` the tool table, `route` and `scope` the
//! scope table, `route`, `rest` and `call` the REST handler, `tool` and `call` the dispatch):
//!
//! - `access`: `[SCOPE, …]` (a key holding every scope) or `public`;
//! - `origin`: `spec` (the spec's table names the scope), `decided` (the spec leaves it open: our
//!   decision, docs/scopes.md) or `addition` (not in the spec's table);
//! - `idempotency`: `required` (the spec requires `Idempotency-Key`), `optional` or `none`;
//! - `run`: the inputs, in the order they are checked, and the call of the operation function
//!   (`crate::operations*`) that maps the use case to gRPC. Each input is an [`Input`]: a REST
//!   extractor that also knows its MCP argument (`IdempotencyKey` is `idempotencyKey`,
//!   `Reference` is `reference`, `ApiQuery`/`ApiJson` are the remaining arguments, `Caller` is
//!   the caller). `cx` is the [`Context`];
//! - `answer`: `json` (200), `created` (201), `replayable(STATUS)` (the stored answer of an
//!   idempotent mutation, `Idempotent-Replayed` on a replay), `secret(STATUS)` (the same, marked
//!   `Cache-Control: no-store`) or `order` (the order as orders-svc rendered it, passed through
//!   without re-serializing; its MCP call is not boxed, it is the hot read).
//!
//! The declarations are in the order of the canonical flow, which is the order of `tools/list`.
//! Operations of the spec that are not built yet are `crate::scopes::NOT_BUILT`.
//!
//! Type and function names in the declarations resolve through [`prelude`] where the callbacks
//! expand.

use crate::caller::Caller;
use crate::http::extract::{
    ApiJson, ApiQuery, ConsentId, EndpointId, IdempotencyKey, OptionalApiJson, OptionalIdempotencyKey,
    Reference, TicketId, from_value, query_from_value,
};
use crate::limits::ceiling::LookupCeiling;
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::net::IpAddr;
use uuid::Uuid;

/// The names the declarations use, for the modules where the callbacks expand.
pub mod prelude {
    pub use super::{Context, Input, McpInput};
    pub use crate::caller::Caller;
    pub use crate::dto::billing::{
        InvoiceEnvelope, InvoiceList, InvoicesQuery, PaymentEnvelope, PaymentList, PaymentsQuery,
        PreparePaymentRequest, PreparedPaymentEnvelope, SpendEnvelopeEnvelope,
    };
    pub use crate::dto::catalog::{CatalogPage, CatalogQuery};
    pub use crate::dto::data::{InstrumentDataEnvelope, RawDataEnvelope};
    pub use crate::dto::export::{CoaExportPage, ExportQuery, InstrumentExportPage};
    pub use crate::dto::lab::{CustodyEnvelope, EtaEnvelope, OrderSamplesEnvelope};
    pub use crate::dto::notifications::{
        CoaEmailEnvelope, ConsentEnvelope, ConsentList, ConsentsQuery, RecordConsentRequest,
        SendCoaEmailRequest,
    };
    pub use crate::dto::orders::{
        AddonEnvelope, AddonRequestBody, CancelRequestBody, CancellationEnvelope, CreateOrderRequest,
        OrderEnvelope, OrderList, OrdersQuery,
    };
    pub use crate::dto::quotes::{CreateQuoteRequest, QuoteEnvelope};
    pub use crate::dto::registry::{InstrumentList, InstrumentsQuery, MethodList, MethodsQuery};
    pub use crate::dto::results::{
        AnalyteList, CoaEnvelope, CoaList, ResultsQuery, VerificationEnvelope, VerificationList,
        VerifyBatchQuery, VerifyBatchRequest, VerifyQuery, VerifyRequest,
    };
    pub use crate::dto::sandbox::{SimulateRequest, SimulationEnvelope};
    pub use crate::dto::shipping::{
        LabelEnvelope, PickupEnvelope, PickupOptionsEnvelope, PickupRequest, ShipmentEnvelope, ShipmentList,
        ShipmentsQuery,
    };
    pub use crate::dto::stablecoin::{StablecoinPaymentEnvelope, SubmitStablecoinRequest};
    pub use crate::dto::support::{
        OpenTicketRequest, ReplyToTicketRequest, TicketEnvelope, TicketList, TicketsQuery,
    };
    pub use crate::dto::webhooks::{
        CreateWebhookRequest, DeliveriesQuery, EmptyBody, WebhookDeliveryEnvelope, WebhookDeliveryList,
        WebhookEndpointEnvelope, WebhookEndpointList, WebhookSecretEnvelope, WebhooksQuery,
    };
    pub use crate::http::extract::{
        ApiJson, ApiQuery, ConsentId, EndpointId, IdempotencyKey, OptionalApiJson, OptionalIdempotencyKey,
        Reference, TicketId,
    };
    pub use crate::operations::data::ExportKind;
    pub use crate::operations::{
        self, checkout, data, notifications, registry, results, sandbox, shipping, support, webhooks,
    };
}

/// What an operation may use besides its inputs.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub peers: &'a Peers,
    /// The configured public site root (absolute document links are built from it).
    pub site: &'a str,
    /// The global ceiling of the public verification's lookups.
    pub verify_lookups: &'a LookupCeiling,
    /// The client's address (the verification's lookups are charged to it).
    pub client: IpAddr,
}

/// An input of an operation: a REST extractor that also reads its MCP argument, so that both
/// front ends refuse the same input with the same error code.
pub trait Input: Sized {
    /// What the operation gets from REST.
    type Rest;
    /// What the operation gets from MCP.
    type Mcp<'a>;
    /// The extracted value.
    fn rest(self) -> Self::Rest;
    /// Takes the input from a tool call's arguments.
    fn mcp<'a>(input: &mut McpInput<'a>) -> Result<Self::Mcp<'a>, ApiError>;
}

/// A tool call's caller and its arguments, taken apart like a REST request.
pub struct McpInput<'a> {
    pub caller: &'a Caller,
    pub arguments: Map<String, Value>,
}

impl<'a> McpInput<'a> {
    pub fn new(caller: &'a Caller, arguments: Map<String, Value>) -> Self {
        Self { caller, arguments }
    }

    /// `idempotencyKey` (the `Idempotency-Key` of REST, with its rules); `None` when absent.
    fn idempotency_key(&mut self) -> Result<Option<String>, ApiError> {
        let field = serde_json::json!({ "field": "idempotencyKey" });
        match self.arguments.remove("idempotencyKey") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(key)) => {
                platform::grpc::validate_idempotency_key(&key).map_err(|error| {
                    ApiError::new(
                        error.code,
                        "the idempotencyKey argument must be 8 to 255 visible ASCII characters",
                    )
                    .with_details(field)
                })?;
                Ok(Some(key))
            }
            Some(_) => Err(ApiError::new(
                ErrorCode::IdempotencyKeyInvalid,
                "the idempotencyKey argument must be a string of 8 to 255 visible ASCII characters",
            )
            .with_details(field)),
        }
    }

    /// Refuses any argument left (a read by reference takes nothing else).
    pub fn nothing_else(&self) -> Result<(), ApiError> {
        match self.arguments.keys().next() {
            None => Ok(()),
            Some(name) => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                name,
                format!("invalid query parameter {name}: unknown field `{name}`"),
            )),
        }
    }

    /// The remaining arguments, taken.
    fn rest_of(&mut self) -> Value {
        Value::Object(std::mem::take(&mut self.arguments))
    }
}

impl Input for Caller {
    type Rest = Caller;
    type Mcp<'a> = &'a Caller;
    fn rest(self) -> Caller {
        self
    }
    fn mcp<'a>(input: &mut McpInput<'a>) -> Result<&'a Caller, ApiError> {
        Ok(input.caller)
    }
}

impl Input for IdempotencyKey {
    type Rest = String;
    type Mcp<'a> = String;
    fn rest(self) -> String {
        self.0
    }
    /// `idempotencyKey`, required.
    fn mcp(input: &mut McpInput<'_>) -> Result<String, ApiError> {
        input.idempotency_key()?.ok_or_else(|| {
            ApiError::new(
                ErrorCode::IdempotencyKeyMissing,
                "the idempotencyKey argument is required (the Idempotency-Key of REST)",
            )
            .with_details(serde_json::json!({ "field": "idempotencyKey" }))
        })
    }
}

impl Input for OptionalIdempotencyKey {
    type Rest = Option<String>;
    type Mcp<'a> = Option<String>;
    fn rest(self) -> Option<String> {
        self.0
    }
    fn mcp(input: &mut McpInput<'_>) -> Result<Option<String>, ApiError> {
        input.idempotency_key()
    }
}

impl Input for Reference {
    type Rest = String;
    type Mcp<'a> = String;
    fn rest(self) -> String {
        self.0
    }
    /// `reference` (a UUID or a public reference; the service resolves it), required.
    fn mcp(input: &mut McpInput<'_>) -> Result<String, ApiError> {
        match input.arguments.remove("reference") {
            Some(Value::String(reference)) if !reference.is_empty() => Ok(reference),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "reference",
                "the reference argument is required: a UUID or a public reference",
            )),
        }
    }
}

impl Input for TicketId {
    type Rest = String;
    type Mcp<'a> = String;
    fn rest(self) -> String {
        self.0
    }
    /// `ticketId` (the ticket UUID or number; orders-svc resolves it), required.
    fn mcp(input: &mut McpInput<'_>) -> Result<String, ApiError> {
        match input.arguments.remove("ticketId") {
            Some(Value::String(ticket)) if !ticket.is_empty() => Ok(ticket),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "ticketId",
                "the ticketId argument is required: a ticket UUID or number (TKT-…)",
            )),
        }
    }
}

impl Input for ConsentId {
    type Rest = String;
    type Mcp<'a> = String;
    fn rest(self) -> String {
        self.0
    }
    /// `consentId` (the consent's UUID; results-svc resolves it), required.
    fn mcp(input: &mut McpInput<'_>) -> Result<String, ApiError> {
        match input.arguments.remove("consentId") {
            Some(Value::String(consent)) if !consent.is_empty() => Ok(consent),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "consentId",
                "the consentId argument is required: a consent UUID",
            )),
        }
    }
}

impl Input for EndpointId {
    type Rest = Uuid;
    type Mcp<'a> = Uuid;
    fn rest(self) -> Uuid {
        self.0
    }
    /// `endpointId`, a UUID (the REST path segment's rule).
    fn mcp(input: &mut McpInput<'_>) -> Result<Uuid, ApiError> {
        let id = match input.arguments.remove("endpointId") {
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
}

impl<T: DeserializeOwned> Input for ApiQuery<T> {
    type Rest = T;
    type Mcp<'a> = T;
    fn rest(self) -> T {
        self.0
    }
    /// The remaining arguments as the twin's query (unknown names refused).
    fn mcp(input: &mut McpInput<'_>) -> Result<T, ApiError> {
        query_from_value(input.rest_of())
    }
}

impl<T: DeserializeOwned> Input for ApiJson<T> {
    type Rest = T;
    type Mcp<'a> = T;
    fn rest(self) -> T {
        self.0
    }
    /// The remaining arguments as the twin's JSON body (unknown names refused).
    fn mcp(input: &mut McpInput<'_>) -> Result<T, ApiError> {
        from_value(input.rest_of())
    }
}

impl<T: DeserializeOwned + Default> Input for OptionalApiJson<T> {
    type Rest = T;
    type Mcp<'a> = T;
    fn rest(self) -> T {
        self.0
    }
    /// The remaining arguments as the twin's optional body.
    fn mcp(input: &mut McpInput<'_>) -> Result<T, ApiError> {
        from_value(input.rest_of())
    }
}

/// `"GET"` for `get`: the HTTP method of a declaration.
macro_rules! method_name {
    (get) => {
        "GET"
    };
    (post) => {
        "POST"
    };
    (put) => {
        "PUT"
    };
    (patch) => {
        "PATCH"
    };
    (delete) => {
        "DELETE"
    };
}
pub(crate) use method_name;

/// Every operation's declaration, handed to `$callback!` (see the module documentation).
macro_rules! operation_table {
    ($callback:ident) => {
        $callback! {
            {
                route: get "/catalog",
                tool: {
                    name: "svc.catalog.search",
                    title: "Search the test catalog",
                    annotations: READ,
                    guard: "",
                    description: "Reads one page of the laboratory's authoritative catalog of tests and bundles with \
                            their prices (integer USD cents per sample line). Start every order here: keep the returned \
                            `catalogRevision`, and pass `include: \"categories,turnarounds,requirements\"` (or \"all\") to learn \
                            the category ids, turnaround ids and sample requirements that svc.quote.create needs. Filter \
                            with `category` and `query`; page with `limit` (1-200) and `cursor` (pass back \
                            `pagination.nextCursor` unchanged). Read-only.",
                },
                scope: { access: [CATALOG_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one cursor page of the authoritative catalog.
                    ///
                    /// The page carries the `catalogRevision` to retain for the order flow; a cursor pins the
                    /// revision of the page it came from.
                    handler: list_catalog,
                    openapi: (tag = "catalog", operation_id = "listCatalog", params(CatalogQuery),
                        responses((status = 200, description = "one page of catalog items", body = CatalogPage))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<CatalogQuery>| operations::list_catalog(cx.peers, &caller, query),
                },
            }
            {
                route: get "/instruments",
                tool: {
                    name: "svc.instrument.list",
                    title: "List the lab's instruments",
                    annotations: READ,
                    guard: "",
                    description: "Lists the laboratory's instrument registry in id order: each instrument (HPLC-UV, LC-MS/MS, \
                            GC-MS headspace, ICP-MS, NMR, Karl Fischer, LAL reader, incubators, …) with manufacturer, model, \
                            location, status (in_service, out_of_service, retired), calibration status (calibrated, due, \
                            overdue: derived from the due date when read), last and next calibration, and its linked \
                            equipment (autosampler, column, detector, balance, …). Filter by `kind` and `status`; page with \
                            `limit` and `cursor`. A COA row's `instrument` names one of these. Read-only.",
                },
                scope: { access: [CATALOG_READ], origin: decided, idempotency: none },
                rest: {
                    /// Lists the lab-wide instrument registry with linked equipment and calibration state.
                    ///
                    /// The calibration status is derived at the time of the answer: `overdue` once past the
                    /// due date, `due` within 30 days of it (or when never calibrated or so recorded).
                    handler: list_instruments,
                    openapi: (tag = "registry", operation_id = "listInstruments", params(InstrumentsQuery),
                        responses((status = 200, description = "one page of instruments", body = InstrumentList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<InstrumentsQuery>| registry::list_instruments(cx.peers, &caller, query),
                },
            }
            {
                route: get "/methods",
                tool: {
                    name: "svc.method.list",
                    title: "List the lab's methods",
                    annotations: READ,
                    guard: "",
                    description: "Lists the laboratory's validated method registry in id order: technique, version, the \
                            instrument kinds it runs on, the catalog matrices and tests it serves, its analytes with unit, \
                            LOQ and LOD (decimal strings), validation status (validated, in_validation, withdrawn: withdrawn \
                            methods stay listed) and reference (USP <233>, USP <467>, …). Filter by `technique`, `matrix` \
                            (catalog matrix id), `analyte` (part of the name, case-insensitive) and `validationStatus`; page \
                            with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [CATALOG_READ], origin: decided, idempotency: none },
                rest: {
                    /// Lists the lab-wide method registry with analytes, limits and validation status.
                    ///
                    /// A withdrawn method stays listed with its status; a method's version goes up when its
                    /// analytes or matrices change.
                    handler: list_methods,
                    openapi: (tag = "registry", operation_id = "listMethods", params(MethodsQuery),
                        responses((status = 200, description = "one page of methods", body = MethodList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<MethodsQuery>| registry::list_methods(cx.peers, &caller, query),
                },
            }
            {
                route: post "/quotes",
                tool: {
                    name: "svc.quote.create",
                    title: "Create a server-priced quote",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: false,
                        idempotent_hint: false,
                        open_world_hint: false,
                    },
                    guard: "server-priced; expires",
                    description: "Creates an immutable, server-priced quote for one category: each compound in \
                            `compoundNames` becomes its own sample line, and every test or bundle id in `testIds` is applied \
                            to every line. Prices are computed by the server; you never send a price. The quote expires \
                            (normally after 15 minutes, see `expiresAt`) and is consumed by svc.order.create with its `id` as \
                            `quoteId`. Creating a quote commits to nothing.",
                },
                scope: { access: [QUOTES_WRITE], origin: spec, idempotency: none },
                rest: {
                    /// Creates an immutable, server-priced quote that expires (normally after 15 minutes).
                    handler: create_quote,
                    openapi: (tag = "catalog", operation_id = "createQuote", request_body = CreateQuoteRequest,
                        responses((status = 201, description = "the quote", body = QuoteEnvelope))),
                },
                call: {
                    answer: created,
                    run: |cx, caller: Caller, body: ApiJson<CreateQuoteRequest>| operations::create_quote(cx.peers, &caller, body),
                },
            }
            {
                route: post "/orders",
                tool: {
                    name: "svc.order.create",
                    title: "Place an order from a quote",
                    annotations: GUARDED_WRITE,
                    guard: "`confirm: true`, unexpired unused quote, spend limit, `idempotencyKey`",
                    description: "Places a laboratory order from an unexpired quote and commits the customer to pay its \
                            total. Guards: `confirm` must be true (only set it when the user has approved the quoted total), \
                            the quote must belong to this customer and be unused, the total must fit the API key's spending \
                            limit, and `idempotencyKey` (8-255 visible ASCII characters) is required: generate one unique key \
                            per intended order and reuse the same key when you retry after a timeout or error, so that the \
                            order is never placed twice (the retry returns the first result, marked \
                            `_meta.lab/idempotentReplayed`). `paymentMethod` is `bank_invoice` (the order answer carries the \
                            invoice number and bank transfer instructions in `payment`). Card and bank orders are ship-first: \
                            the answer's `shipping` block already holds the prepaid label, tracking and packing steps (rarely \
                            `{\"status\":\"label_pending\"}` when the carrier is slow: read the order again shortly). One \
                            quote makes one order.",
                },
                scope: { access: [ORDERS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Places an order from a quote (`confirm: true`, `Idempotency-Key` required).
                    ///
                    /// A replay of the same key and body answers like the first response (201, the same order as
                    /// it stands now) plus `Idempotent-Replayed: true`; the same key with another body is 409
                    /// `idempotency_key_reused`. Card and bank orders are ship-first: the label is bought while the
                    /// request waits (up to a few seconds), so `shipping` holds it; past that wait `shipping` is
                    /// `{"status":"label_pending"}` and `shipment.label_created` follows.
                    handler: create_order,
                    openapi: (tag = "orders", operation_id = "createOrder", request_body = CreateOrderRequest,
                        responses((status = 201, description = "the order (also for a replay, with Idempotent-Replayed: true)", body = OrderEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: IdempotencyKey, body: ApiJson<CreateOrderRequest>| operations::create_order(cx.peers, &caller, &key, body),
                },
            }
            {
                route: get "/orders",
                tool: {
                    name: "svc.order.list",
                    title: "List orders",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's orders, newest first, optionally only those in one `status` \
                            (invoice_sent, overdue, paid, label_generated, in_transit, sample_received, in_lab, reporting, \
                            completed, cancelled). Page with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's orders, newest first.
                    handler: list_orders,
                    openapi: (tag = "orders", operation_id = "listOrders", params(OrdersQuery),
                        responses((status = 200, description = "one page of orders", body = OrderList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<OrdersQuery>| operations::list_orders(cx.peers, &caller, query),
                },
            }
            {
                route: get "/orders/{reference}",
                tool: {
                    name: "svc.order.get",
                    title: "Read one order",
                    annotations: READ,
                    guard: "",
                    description: "Reads one order with its status, full status history, sample lines, charges and \
                            payment block. `reference` is the order UUID, the order number (ORD-…) or the invoice number \
                            (INV-…). Poll this to follow an order after placing it. An order of another customer is \
                            reported exactly like a missing one (not_found). Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one order (status, status history, lines, charges, payment block).
                    handler: get_order,
                    openapi: (tag = "orders", operation_id = "getOrder",
                        params(("reference" = String, Path, description = "order UUID, order number (ORD-…), invoice number (INV-…), accession number (ACC-…) or tracking number")),
                        responses((status = 200, description = "the order", body = OrderEnvelope))),
                },
                call: {
                    answer: order,
                    run: |cx, caller: Caller, reference: Reference| operations::get_order(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/invoices",
                tool: {
                    name: "svc.invoice.list",
                    title: "List invoices",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's invoices (metadata, lines, amounts due and paid), newest first; \
                            filter by `status` (open, paid, void) or `orderId`. Page with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [INVOICES_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's invoices, newest first.
                    handler: list_invoices,
                    openapi: (tag = "billing", operation_id = "listInvoices", params(InvoicesQuery),
                        responses((status = 200, description = "one page of invoices", body = InvoiceList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<InvoicesQuery>| operations::list_invoices(cx.peers, &caller, query),
                },
            }
            {
                route: get "/invoices/{reference}",
                tool: {
                    name: "svc.invoice.get",
                    title: "Read one invoice",
                    annotations: READ,
                    guard: "",
                    description: "Reads one invoice with its lines, amounts and, on the bank rail, the transfer \
                            instructions. `reference` is the invoice UUID, the invoice number (INV-…), or the order's UUID, order number, \
                            accession number (ACC-…) or tracking number. \
                            Read-only.",
                },
                scope: { access: [INVOICES_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one invoice.
                    handler: get_invoice,
                    openapi: (tag = "billing", operation_id = "getInvoice",
                        params(("reference" = String, Path, description = "invoice UUID or number (INV-…), or the order's UUID, number (ORD-…), accession (ACC-…) or tracking number")),
                        responses((status = 200, description = "the invoice", body = InvoiceEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| operations::get_invoice(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/payments",
                tool: {
                    name: "svc.payment.list",
                    title: "List payments",
                    annotations: READ,
                    guard: "",
                    description: "Lists the payments received against the customer's invoices, newest first; filter \
                            by `invoiceId`. Page with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [PAYMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's payments, newest first.
                    handler: list_payments,
                    openapi: (tag = "billing", operation_id = "listPayments", params(PaymentsQuery),
                        responses((status = 200, description = "one page of payments", body = PaymentList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<PaymentsQuery>| operations::list_payments(cx.peers, &caller, query),
                },
            }
            {
                route: get "/payments/{reference}",
                tool: {
                    name: "svc.payment.get",
                    title: "Read one payment",
                    annotations: READ,
                    guard: "",
                    description: "Reads one payment state by its UUID, or the one payment of an order by the order's \
                            reference (UUID, number, invoice, tracking or accession number; several payments: \
                            ambiguous_reference lists them). Read-only.",
                },
                scope: { access: [PAYMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one payment state.
                    handler: get_payment,
                    openapi: (tag = "billing", operation_id = "getPayment",
                        params(("reference" = String, Path, description = "payment UUID; or an order-level reference (order UUID or number, invoice, tracking or accession number) naming the order's one payment (409 ambiguous_reference with the candidates when it has several)")),
                        responses((status = 200, description = "the payment", body = PaymentEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| operations::get_payment(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/shipments",
                tool: {
                    name: "svc.shipment.list",
                    title: "List shipments",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's shipments (prepaid inbound labels and their tracking), newest first: \
                            tracking number, carrier and service codes, normalized status (pre_transit, in_transit, exception, \
                            out_for_delivery, delivered, returned, lost), carrier event history and any door pickup. Filter \
                            with `status` and `orderId`; page with `limit` (1-200) and `cursor` (pass back \
                            `pagination.nextCursor` unchanged). Read-only.",
                },
                scope: { access: [SHIPMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's shipments (labels and tracking), newest first.
                    handler: list_shipments,
                    openapi: (tag = "shipping", operation_id = "listShipments", params(ShipmentsQuery),
                        responses((status = 200, description = "one page of shipments", body = ShipmentList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<ShipmentsQuery>| shipping::list_shipments(cx.peers, &caller, query),
                },
            }
            {
                route: get "/shipments/{reference}",
                tool: {
                    name: "svc.shipment.get",
                    title: "Track a shipment",
                    annotations: READ,
                    guard: "",
                    description: "Reads one shipment with its carrier event history (status code, description, \
                            occurred-at, location, oldest first) and normalized status. `reference` is the shipment id, the \
                            tracking number, or the order's id, order, invoice or accession number. Use it to follow a sample to the lab; \
                            svc.order.get shows the order moving to in_transit on the first acceptance scan. Read-only.",
                },
                scope: { access: [SHIPMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one shipment with its tracking number, carrier and service codes, normalized status and
                    /// carrier event history.
                    handler: get_shipment,
                    openapi: (tag = "shipping", operation_id = "getShipment",
                        params(("reference" = String, Path, description = "shipment UUID, tracking number, or the order's UUID, number (ORD-…), invoice (INV-…) or accession (ACC-…) number")),
                        responses((status = 200, description = "the shipment", body = ShipmentEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| shipping::get_shipment(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/shipments/{reference}/label",
                tool: {
                    name: "svc.shipment.label.get",
                    title: "Get the prepaid shipping label",
                    annotations: READ,
                    guard: "",
                    description: "Returns the prepaid inbound label of an order's shipment: a signed URL of the 4x6 in PDF \
                            (valid one hour; call again for a fresh one, never store it), the tracking number and URL, the \
                            ship-to address (the lab) and the packing steps with the exact containers per sample line. \
                            `reference` is the shipment id, tracking number, or the order's id, order number, invoice number \
                            or accession number. Read-only.",
                },
                scope: { access: [SHIPMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads the prepaid inbound label: a signed, expiring URL of the 4×6 in PDF, the tracking
                    /// number and URL, the ship-to address and the packing steps.
                    handler: get_label,
                    openapi: (tag = "shipping", operation_id = "getShipmentLabel",
                        params(("reference" = String, Path, description = "shipment UUID, tracking number, or the order's UUID, number (ORD-…), invoice (INV-…) or accession (ACC-…) number")),
                        responses((status = 200, description = "the label", body = LabelEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| shipping::get_label(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/orders/{reference}/pickup",
                tool: {
                    name: "svc.pickup.options",
                    title: "List door-pickup options",
                    annotations: READ,
                    guard: "",
                    description: "Lists door-pickup options of a paid order's shipment: dates (business days, no holidays, \
                            today only before the cut-off), windows, the price in integer USD cents and a signed `quoteToken` \
                            that expires after 15 minutes. Pass the token, one date and one window id to svc.pickup.request. \
                            An unpaid order answers `order_not_paid`; a shipment with a pickup answers \
                            `pickup_already_requested`. Read-only.",
                },
                scope: { access: [SHIPMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists door-pickup options of a paid order: dates, windows, the price and a signed
                    /// `quoteToken` (expires after 15 minutes). An unpaid order is 409 `order_not_paid`; a shipment
                    /// that has a pickup is 409 `pickup_already_requested`.
                    handler: pickup_options,
                    openapi: (tag = "shipping", operation_id = "getPickupOptions",
                        params(("reference" = String, Path, description = "order UUID, order number or tracking number")),
                        responses((status = 200, description = "the pickup options", body = PickupOptionsEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| shipping::pickup_options(cx.peers, &caller, reference),
                },
            }
            {
                route: post "/orders/{reference}/pickup",
                tool: {
                    name: "svc.pickup.request",
                    title: "Request a paid door pickup",
                    annotations: GUARDED_WRITE,
                    guard: "`confirm: true`, signed unexpired `quoteToken`, paid order, spend limit, one pickup per shipment, optional `idempotencyKey`",
                    description: "Requests a door pickup of a paid order's samples on one of the dates and windows that \
                            svc.pickup.options offered, with its `quoteToken` and `confirm: true`. The price must fit the key's \
                            spending envelope. The answer's `payUrl` is a single-use, amount-locked hosted payment page for the \
                            pickup, valid until `payExpiresAt`: the account owner pays there, then the pickup is booked with the \
                            carrier and a confirmation number appears on the shipment. Retry with the same `idempotencyKey`; expired or edited tokens, \
                            past or unoffered dates and a second pickup are refused.",
                },
                scope: { access: [ORDERS_WRITE], origin: spec, idempotency: optional },
                rest: {
                    /// Requests a door pickup (`confirm: true`) on one of the offered dates and windows with the
                    /// options' `quoteToken`. `Idempotency-Key` is optional (the spec does not require it): without
                    /// one, the same request (same API key, reference and body) sent again is answered like the
                    /// first, with `Idempotent-Replayed: true`. The price must fit the key's spending
                    /// envelope (403 `spend_limit_exceeded`). The answer's `payUrl` is the site's hosted checkout
                    /// page for the pickup (single use, amount-locked, valid until `payExpiresAt`); once paid the
                    /// pickup is booked with the carrier and `shipment.updated` (status `pickup_booked`) carries the
                    /// confirmation number. A link that expires unpaid ends the pickup (`payment_expired`) and a new
                    /// one may be requested. Refusals: 400 `pickup_quote_invalid` (tampered or foreign token), 409
                    /// `pickup_quote_expired`, 400 `pickup_date_unavailable` (past, over or not offered), 409
                    /// `order_not_paid`, 409 `pickup_already_requested`.
                    handler: request_pickup,
                    openapi: (tag = "shipping", operation_id = "requestPickup",
                        params(("reference" = String, Path, description = "order UUID, order number or tracking number")),
                        request_body = PickupRequest,
                        responses((status = 201, description = "the requested pickup (also for a replay, with Idempotent-Replayed: true)", body = PickupEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, reference: Reference, body: ApiJson<PickupRequest>| shipping::request_pickup(cx.peers, &caller, key.as_deref(), reference, body),
                },
            }
            {
                route: post "/payments/prepare",
                tool: {
                    name: "svc.payment.card.checkout",
                    title: "Prepare an order's payment (card checkout link)",
                    annotations: GUARDED_WRITE,
                    guard: "`idempotencyKey`, spend limit for a fresh link",
                    description: "Returns how to pay an order now, named by `orderReference` (order UUID, order \
                            number ORD-… or invoice number INV-…). For a card_checkout order it mints the single-use, \
                            amount-locked hosted checkout URL (`checkout.hostedUrl`) for the account owner to pay at: \
                            the current link while it can still be paid, or a fresh one after it expired (which commits \
                            the order's spend to the key's envelope again: 403 spend_limit_exceeded when it no longer \
                            fits). A paid order answers `state: paid`; a bank order its remittance details. Never \
                            charges a card. Needs `idempotencyKey`; retry with the same key to get the same answer.",
                },
                scope: { access: [PAYMENTS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Prepares the payment of an order: how to pay it now.
                    ///
                    /// Needs `payments:write` and `Idempotency-Key`. The body names the order by its UUID, order
                    /// number or invoice number (`orderReference`); another customer's order is 404 `not_found`.
                    /// `state` is `paid` (nothing to pay: the answer carries the paid invoice), `void`, or
                    /// `awaiting_payment`: on the card rail `checkout` is the link to use now (the current one
                    /// while it can be paid, else a fresh single-use session locked to the amount due and lasting
                    /// 15 minutes); on the bank rail `bankInstructions` carry the remittance details. Replaying the
                    /// same request with the same key answers the stored answer with `Idempotent-Replayed: true`.
                    handler: prepare_payment,
                    openapi: (tag = "billing", operation_id = "preparePayment",
                        request_body = PreparePaymentRequest,
                        responses((status = 200, description = "how to pay the order now", body = PreparedPaymentEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(OK),
                    run: |cx, caller: Caller, key: IdempotencyKey, body: ApiJson<PreparePaymentRequest>| checkout::prepare_payment(cx.peers, &caller, &key, body),
                },
            }
            {
                route: get "/payments/stablecoin/{reference}",
                tool: {
                    name: "svc.payment.stablecoin.request",
                    title: "Read an order's stablecoin payment request",
                    annotations: READ,
                    guard: "",
                    description: "Returns how to pay a chain_stablecoin order (`reference`: order UUID, order number \
                            ORD-… or invoice number INV-…): the transfer target (`amount.targetAddress`, the lab's treasury), \
                            the token contract (`amount.tokenAddress`, USDC by default), the exact amount as \
                            `amount.decimal` (exactly six decimals) and `amount.atomic` (integer atomic units), the permanent \
                            sub-cent reference `amount.referenceAtomic`, the expected payer, the expiry, the state \
                            (awaiting_transfer, confirming, confirmed, expired) and, once confirmed, the settlement proof. The \
                            payer must send exactly this amount from their own self-custodied wallet (never round; no exchange \
                            withdrawal), then submit the hash with svc.payment.stablecoin.submit. The service never asks for a \
                            key and never signs. An expired request is renewed by svc.payment.card.checkout \
                            (POST /payments/prepare). Read-only.",
                },
                scope: { access: [PAYMENTS_READ], origin: addition, idempotency: none },
                rest: {
                    /// Reads the stablecoin payment request of an order (our addition; the twin of MCP
                    /// `svc.payment.stablecoin.request`): the token, the treasury address to send to, the exact
                    /// amount (`amount.atomic`, `amount.decimal` with exactly six decimals, `amount.referenceAtomic`)
                    /// with its no-rounding notice, the expected payer, the expiry, the state (`awaiting_transfer`,
                    /// `confirming`, `confirmed`, `expired`), the observed transfer and, once confirmed, the
                    /// settlement proof. `reference` is the order UUID, order number or invoice number; another
                    /// customer's order is 404 `not_found`; an order on another rail is 404 `not_found`. Needs
                    /// `payments:read`. An expired request is renewed by `POST /payments/prepare`.
                    handler: get_stablecoin_payment,
                    openapi: (tag = "billing",
                        operation_id = "getStablecoinPayment",
                        params(("reference" = String, Path, description = "order UUID, order number (ORD-…) or invoice number (INV-…)")),
                        responses((status = 200, description = "the stablecoin payment request", body = StablecoinPaymentEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| checkout::get_stablecoin_payment(cx.peers, &caller, reference),
                },
            }
            {
                route: post "/payments/stablecoin/submit",
                tool: {
                    name: "svc.payment.stablecoin.submit",
                    title: "Submit a stablecoin transaction hash",
                    annotations: GUARDED_WRITE,
                    guard: "`idempotencyKey`; read-only chain verification (never signs or broadcasts)",
                    description: "Submits the hash of the transfer the payer broadcast (`transactionHash`: 0x and 64 hex \
                            digits) for the order named by `reference` (order UUID, ORD-… or INV-…). Verification is read-only \
                            against two independent chain providers that must agree: the receipt must succeed and carry a \
                            Transfer of the requested token from the expected payer to the treasury of exactly `amount.atomic`. \
                            A match answers `status: confirming`; the request becomes `confirmed` (invoice and order paid, \
                            `payment.confirmed`, the shipping label bought) once the transfer is finalized - poll \
                            svc.payment.stablecoin.request. Refusals name the problem: transfer_amount_mismatch (under or \
                            over), transfer_wrong_sender, transfer_wrong_token, transfer_not_found, transaction_reverted, \
                            transaction_not_found, payment_request_expired; chain_unavailable (retry later). Never asks for or \
                            accepts a private key. Needs `idempotencyKey`.",
                },
                scope: { access: [PAYMENTS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Submits the hash of a stablecoin transfer for read-only verification. The service never
                    /// signs or broadcasts: the payer sends the transfer from their self-custodied wallet, then
                    /// submits `{ "reference": "<order UUID, ORD-… or INV-…>", "transactionHash": "0x<64 hex>" }`.
                    ///
                    /// The receipt is read from two independent providers that must agree; a log counts only when
                    /// its contract is the token, its sender the expected payer, its recipient the treasury and its
                    /// value the exact atomic amount. A match answers the request in `confirming` (events
                    /// `payment.observed`, `payment.confirming`); it becomes `confirmed` (the invoice and the order
                    /// paid, `payment.confirmed`) once the finalized-log scanner and both providers see it at or
                    /// below the `finalized` block with the same block hash. Refusals: 409
                    /// `transfer_amount_mismatch` (`details.reason` `underpaid`/`overpaid`, `details.receivedAtomic`),
                    /// `transfer_wrong_sender`, `transfer_wrong_token`, `transfer_not_found`,
                    /// `transaction_reverted`, `transfer_already_applied`, `payment_request_expired` (a late
                    /// transfer, recorded for staff), `conflict` (already paid by another transfer); 404
                    /// `transaction_not_found` (unknown or not yet mined hash) and `not_found` (no such order of
                    /// yours); 503 `chain_unavailable` with `Retry-After` (a provider is down, they disagree, or
                    /// one serves another chain id: `details.reason`; nothing recorded, retry). Needs `payments:write` and `Idempotency-Key`; 503 answers are not
                    /// stored under the key.
                    handler: submit_stablecoin_transaction,
                    openapi: (tag = "billing",
                        operation_id = "submitStablecoinTransaction",
                        request_body = SubmitStablecoinRequest,
                        responses((status = 200, description = "the payment request after verification", body = StablecoinPaymentEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(OK),
                    run: |cx, caller: Caller, key: IdempotencyKey, body: ApiJson<SubmitStablecoinRequest>| checkout::submit_stablecoin_transaction(cx.peers, &caller, &key, body),
                },
            }
            {
                route: get "/spend-envelope",
                tool: {
                    name: "svc.spend.envelope.get",
                    title: "Read the key's spend envelope",
                    annotations: READ,
                    guard: "",
                    description: "Reads the calling API key's spending envelope: its per-order, daily and monthly \
                            caps (UTC calendar day and month), what it committed today and this month, and the \
                            remaining amounts. Check it before placing orders that could exceed a cap. Read-only.",
                },
                scope: { access: [PAYMENTS_READ], origin: addition, idempotency: none },
                rest: {
                    /// Reads the calling key's spend envelope: its per-order, daily and monthly caps (UTC calendar:
                    /// the day starts at 00:00 UTC, the month on the first at 00:00 UTC), what it committed today and
                    /// this month, and the remainders. Spend is committed when an order is created and released when
                    /// the order is cancelled or its card payment expires unpaid. An order over a cap is 403
                    /// `spend_limit_exceeded` with `details.cap` and the remainders. Needs `payments:read` (our
                    /// addition).
                    handler: spend_envelope,
                    openapi: (tag = "billing", operation_id = "getSpendEnvelope",
                        responses((status = 200, description = "the key's envelope and remainders", body = SpendEnvelopeEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller| checkout::spend_envelope(cx.peers, &caller),
                },
            }
            {
                route: get "/webhooks",
                tool: {
                    name: "svc.webhook.list",
                    title: "List webhook endpoints",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's webhook endpoints as safe metadata (URL, subscribed events, \
                            status); signing secrets are never listed. Page with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [WEBHOOKS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's endpoints as safe metadata (never a signing secret).
                    handler: list_endpoints,
                    openapi: (tag = "webhooks", operation_id = "listWebhookEndpoints",
                        params(WebhooksQuery),
                        responses((status = 200, description = "one page of endpoints", body = WebhookEndpointList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<WebhooksQuery>| webhooks::list_endpoints(cx.peers, &caller, query),
                },
            }
            {
                route: post "/webhooks",
                tool: {
                    name: "svc.webhook.create",
                    title: "Register a webhook endpoint",
                    annotations: Annotations {
                        open_world_hint: true,
                        ..GUARDED_WRITE
                    },
                    guard: "read scope of every selected event, public HTTPS URL, `idempotencyKey`",
                    description: "Registers a public HTTPS endpoint that receives signed lifecycle events. `events` \
                            selects the event types (default [\"coa.published\"]); the key needs the read scope of every \
                            selected event. The answer carries the plaintext `signingSecret` once: store it. Requires \
                            `idempotencyKey`; replaying the identical call with the same key returns the same secret.",
                },
                scope: { access: [WEBHOOKS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Registers a public HTTPS endpoint and returns its signing secret.
                    ///
                    /// Besides `webhooks:write`, the key must hold the read scope of every selected event
                    /// (`coa.published` → `results:read` when `events` is absent), else 403 `insufficient_scope` with
                    /// `details.required` and `details.missing`. An unknown event type is 400 `unknown_event` with
                    /// `details.field` = `events[i]`; an address that is not public HTTPS is 400
                    /// `invalid_webhook_url`. A customer has at most 20 endpoints (deleted ones do not count): the
                    /// next registration is 409 `webhook_endpoint_limit_reached` with `details.limit` (not stored for
                    /// replay: retried after a deletion, the same request runs again). The secret is shown here
                    /// only; replaying the identical request with the same `Idempotency-Key` (same API key) answers
                    /// the same 201 with the same secret and `Idempotent-Replayed: true` while the replay record is
                    /// retained.
                    handler: create_endpoint,
                    openapi: (tag = "webhooks", operation_id = "createWebhookEndpoint",
                        request_body = CreateWebhookRequest,
                        responses((status = 201, description = "the endpoint and its signing secret (also for a replay, with Idempotent-Replayed: true)",
                            body = WebhookSecretEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: secret(CREATED),
                    run: |cx, caller: Caller, key: IdempotencyKey, body: ApiJson<CreateWebhookRequest>| webhooks::create_endpoint(cx.peers, &caller, &key, body),
                },
            }
            {
                route: delete "/webhooks/{endpointId}",
                tool: {
                    name: "svc.webhook.delete",
                    title: "Delete a webhook endpoint",
                    annotations: Annotations {
                        destructive_hint: true,
                        ..GUARDED_WRITE
                    },
                    guard: "`idempotencyKey`",
                    description: "Deletes a webhook endpoint; its pending deliveries are abandoned. Requires \
                            `idempotencyKey`. Irreversible.",
                },
                scope: { access: [WEBHOOKS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Deletes an endpoint.
                    ///
                    /// Its pending deliveries are abandoned. No body (an empty body or `{}` is accepted). A replay
                    /// with the same `Idempotency-Key` answers the same 200 with `Idempotent-Replayed: true`.
                    handler: delete_endpoint,
                    openapi: (tag = "webhooks", operation_id = "deleteWebhookEndpoint",
                        params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
                        responses((status = 200, description = "the deleted endpoint (also for a replay, with Idempotent-Replayed: true)",
                            body = WebhookEndpointEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(OK),
                    run: |cx, caller: Caller, endpoint_id: EndpointId, key: IdempotencyKey, _body: OptionalApiJson<EmptyBody>| webhooks::delete_endpoint(cx.peers, &caller, &key, endpoint_id),
                },
            }
            {
                route: post "/webhooks/{endpointId}/rotate-secret",
                tool: {
                    name: "svc.webhook.secret.rotate",
                    title: "Rotate a webhook signing secret",
                    annotations: Annotations {
                        destructive_hint: true,
                        ..GUARDED_WRITE
                    },
                    guard: "`idempotencyKey`",
                    description: "Issues a new signing secret for an endpoint; the previous one keeps signing beside it \
                            until `previousSecretExpiresAt`. The answer carries the new plaintext `signingSecret` once. \
                            Requires `idempotencyKey`.",
                },
                scope: { access: [WEBHOOKS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Issues a new signing secret.
                    ///
                    /// The previous secret keeps signing beside the new one until `previousSecretExpiresAt`. A
                    /// replay of the same `Idempotency-Key` (same API key) answers the same 200 with the same secret
                    /// and `Idempotent-Replayed: true` while the replay record is retained.
                    handler: rotate_secret,
                    openapi: (tag = "webhooks", operation_id = "rotateWebhookSecret",
                        params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
                        request_body(content = Option<EmptyBody>, description = "absent, empty or `{}`"),
                        responses((status = 200, description = "the endpoint and its new signing secret (also for a replay, with Idempotent-Replayed: true)",
                            body = WebhookSecretEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: secret(OK),
                    run: |cx, caller: Caller, endpoint_id: EndpointId, key: IdempotencyKey, _body: OptionalApiJson<EmptyBody>| webhooks::rotate_secret(cx.peers, &caller, &key, endpoint_id),
                },
            }
            {
                route: post "/webhooks/{endpointId}/test",
                tool: {
                    name: "svc.webhook.test",
                    title: "Send a test webhook delivery",
                    annotations: Annotations {
                        open_world_hint: true,
                        ..GUARDED_WRITE
                    },
                    guard: "`idempotencyKey`",
                    description: "Queues one signed `webhook.test` delivery to the endpoint, attempts it at once and \
                            reports the outcome of that first attempt. Requires `idempotencyKey`.",
                },
                scope: { access: [WEBHOOKS_WRITE], origin: spec, idempotency: required },
                rest: {
                    /// Sends a signed test delivery.
                    ///
                    /// Queues one signed `webhook.test` delivery, attempts it at once and reports the outcome of
                    /// that first attempt.
                    handler: send_test_delivery,
                    openapi: (tag = "webhooks", operation_id = "sendWebhookTest",
                        params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
                        request_body(content = Option<EmptyBody>, description = "absent, empty or `{}`"),
                        responses((status = 200, description = "the test delivery with its first attempt (also for a replay, with Idempotent-Replayed: true)",
                            body = WebhookDeliveryEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(OK),
                    run: |cx, caller: Caller, endpoint_id: EndpointId, key: IdempotencyKey, _body: OptionalApiJson<EmptyBody>| webhooks::send_test_delivery(cx.peers, &caller, &key, endpoint_id),
                },
            }
            {
                route: get "/webhooks/{endpointId}/deliveries",
                tool: {
                    name: "svc.webhook.delivery.list",
                    title: "List webhook deliveries",
                    annotations: READ,
                    guard: "",
                    description: "Lists an endpoint's deliveries with every attempt (status code, latency, error), \
                            newest first; filter by `status` (pending, succeeded, dead, abandoned). Page with `limit` and \
                            `cursor`. Read-only.",
                },
                scope: { access: [WEBHOOKS_READ], origin: addition, idempotency: none },
                rest: {
                    /// Lists an endpoint's deliveries with every attempt, newest first.
                    ///
                    /// Not in the spec's table: our addition, so that customers can read what was attempted and why
                    /// it failed.
                    handler: list_deliveries,
                    openapi: (tag = "webhooks", operation_id = "listWebhookDeliveries",
                        params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)"), DeliveriesQuery),
                        responses((status = 200, description = "one page of deliveries", body = WebhookDeliveryList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, endpoint_id: EndpointId, query: ApiQuery<DeliveriesQuery>| webhooks::list_deliveries(cx.peers, &caller, endpoint_id, query),
                },
            }
            {
                route: get "/orders/{reference}/samples",
                tool: {
                    name: "svc.order.sample.list",
                    title: "List an order's samples",
                    annotations: READ,
                    guard: "",
                    description: "Reads the sample items the lab logged for one order: accession numbers (ACC-…), units \
                            and containers received, condition on arrival, the tests of each line, the order's status history, \
                            and (with results:read) the ids of each sample's published COAs. Empty until the samples arrive. \
                            `reference` is the order UUID, ORD-…, INV-… or an accession number. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: decided, idempotency: none },
                rest: {
                    /// The order's sample items: accession numbers, logged units, containers, condition, tests,
                    /// status history and the ids of their published COAs (given when the key also holds
                    /// `results:read`).
                    handler: list_samples,
                    openapi: (tag = "orders", operation_id = "listOrderSamples",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
                        responses((status = 200, description = "the order's samples", body = OrderSamplesEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| results::list_samples(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/orders/{reference}/raw-data",
                tool: {
                    name: "svc.order.raw_data.get",
                    title: "Read an order's raw-data manifest",
                    annotations: READ,
                    guard: "",
                    description: "Reads the manifest of the raw instrument files released by the order's QA-published \
                            COAs: per file its import and result-set ids, vendor, file name, MIME type, size, server sha256, \
                            a signed `downloadUrl` (and `nativeBundleUrl`), and provenance (client sha256, parser and \
                            connector versions, sample and run ids, instrument, acquisition, import and integrity times, the \
                            COAs that released it). Every URL expires at `expiresAt`, one hour after `generatedAt`: fetch \
                            the files now, never store the links. A missing order, another customer's, one with \
                            `publishRawData: false` and one without a published COA are the same not_found. Read-only.",
                },
                scope: { access: [RAW_DATA_READ], origin: spec, idempotency: none },
                rest: {
                    /// The released instrument-file manifest of an order: every file a published COA released,
                    /// with a signed download URL (one hour, shared by every URL of the manifest) and release-safe
                    /// provenance. A missing order, another customer's order, an order with `publishRawData: false`
                    /// and an order without a published COA all answer the same 404; 503
                    /// `raw_data_unavailable` when the files cannot be signed now.
                    handler: get_raw_data,
                    openapi: (tag = "results", operation_id = "getOrderRawData",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
                        responses((status = 200, description = "the raw-data manifest", body = RawDataEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| data::get_raw_data(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/orders/{reference}/instrument-data",
                tool: {
                    name: "svc.order.instrument_data.get",
                    title: "Read the instrument data behind an order's COAs",
                    annotations: READ,
                    guard: "",
                    description: "Reads the structured instrument measurements behind the order's published COAs, one \
                            run per released file: instrument and method (registry ids), run and sample ids, acquisition \
                            time, the file (sha256, integrity check, parser, parse status) and its measurements (analyte, \
                            retention time or m/z, SRM transition, response, reported concentration with unit, LOQ). The \
                            file's signed `downloadUrl` is given only when the order publishes raw data; it expires at \
                            `expiresAt` (one hour). Read-only.",
                },
                scope: { access: [INSTRUMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// The structured instrument measurements behind the order's published COAs, one run per
                    /// released file, with run metadata and integrity checks. File downloads are signed only when
                    /// the order publishes raw data.
                    handler: get_order_instrument_data,
                    openapi: (tag = "results", operation_id = "getOrderInstrumentData",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
                        responses((status = 200, description = "the order's instrument data", body = InstrumentDataEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| data::get_order_instrument_data(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/orders/{reference}/custody",
                tool: {
                    name: "svc.order.custody.get",
                    title: "Read an order's chain of custody",
                    annotations: READ,
                    guard: "",
                    description: "Reads the chain-of-custody timeline of one order (received, stored, testing started; \
                            who, where, when) with `chainIntact` (every entry's SHA-256 links to the one before) and the \
                            retention deadline of the retained samples. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: decided, idempotency: none },
                rest: {
                    /// The order's chain of custody (hash-chained entries) and the retention deadline of its
                    /// retained samples.
                    handler: get_custody,
                    openapi: (tag = "orders", operation_id = "getOrderCustody",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
                        responses((status = 200, description = "the chain of custody", body = CustodyEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| results::get_custody(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/orders/{reference}/eta",
                tool: {
                    name: "svc.order.eta.get",
                    title: "Read an order's progress and ETA",
                    annotations: READ,
                    guard: "",
                    description: "Reads the stage-by-stage progress of one order (ordered, payment, samples received, \
                            testing, reporting, completed) and a non-binding estimated completion (start of testing plus the \
                            turnaround's business days; none before the samples arrive). Payment is shown apart: it gates \
                            only the release of COAs. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: decided, idempotency: none },
                rest: {
                    /// Stage-by-stage progress of the order with a non-binding ETA (start of testing, or receipt,
                    /// plus the turnaround option's business days).
                    handler: get_eta,
                    openapi: (tag = "orders", operation_id = "getOrderEta",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
                        responses((status = 200, description = "the order's progress", body = EtaEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| results::get_eta(cx.peers, &caller, reference),
                },
            }
            {
                route: post "/orders/{reference}/cancel-request",
                tool: {
                    name: "svc.order.cancel_request",
                    title: "Ask the lab to cancel an order",
                    annotations: GUARDED_WRITE,
                    guard: "`confirm: true`, a reason, optional `idempotencyKey`; a human decides",
                    description: "Files a request to cancel one of the customer's orders (`reference`: order UUID, ORD-…, \
                            INV-…, tracking or ACC- number) with a `reason` and `confirm: true` (only when the user asked to \
                            cancel). Nothing is cancelled yet: lab staff approve or decline it, and the outcome appears as \
                            `order.cancellation` on the order and as an event (order.cancelled or \
                            order.cancellation_declined). Before the sample is received an approval cancels at no charge: \
                            an unpaid invoice is voided, a card payment refunded, the label voided, the spend released. Once \
                            the lab holds the sample the default is a decline; an approval may keep a charge for work done. \
                            One pending request per order; cancelled or completed orders are refused. Retry with the \
                            same `idempotencyKey` (or, without one, the same reason) to get the same request back.",
                },
                scope: { access: [ORDERS_WRITE], origin: decided, idempotency: optional },
                rest: {
                    /// Files a cancellation request that lab staff decide (`confirm: true`).
                    ///
                    /// Answers 202 with the pending request; the order shows it as `cancellation`. Staff approve
                    /// (the order becomes `cancelled`, `order.cancelled`; payments-svc voids an unpaid invoice or
                    /// refunds what was paid above the charge, shipping-svc voids an unused label) or decline it
                    /// (`order.cancellation_declined`, the order goes on), with a note shown to the customer. After
                    /// the sample is received an approval states the charge kept for work done (`chargeCents`).
                    /// Refusals: 400 `invalid_request` (reason empty or over 2000 characters), 400
                    /// `confirmation_required`, 404 `not_found`, 409 `order_not_cancellable` (cancelled or
                    /// completed), 409 `cancel_request_pending` (`details.cancelRequestId`). `Idempotency-Key`
                    /// is optional (the spec does not require it): a replay with the same key, or without one
                    /// the same request (same API key, reference and body), answers the stored request with
                    /// `Idempotent-Replayed: true`.
                    handler: request_cancellation,
                    openapi: (tag = "orders", operation_id = "requestOrderCancellation",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-…, ACC-… or tracking number")),
                        request_body = CancelRequestBody,
                        responses((status = 202, description = "the pending request (also for a replay, with Idempotent-Replayed: true)", body = CancellationEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(ACCEPTED),
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, reference: Reference, body: ApiJson<CancelRequestBody>| operations::request_cancellation(cx.peers, &caller, key.as_deref(), reference, body),
                },
            }
            {
                route: post "/orders/{reference}/addons",
                tool: {
                    name: "svc.order.addons",
                    title: "Price or order add-on tests on a retained sample",
                    annotations: GUARDED_WRITE,
                    guard: "`confirm: true` and `idempotencyKey` to order; without them a priced preview",
                    description: "Adds tests to the sample the lab retains for one line of one of the customer's orders \
                            (`reference`: order UUID, ORD-…, INV-…, tracking or ACC- number; `lineNumber`; `testIds`: catalog \
                            test ids). Without `confirm` (or with `confirm: false`) it answers the server-computed price per \
                            test and the total, from the catalog revision the order was priced with, and stores nothing. \
                            With `confirm: true` and an `idempotencyKey` (only when the user agreed to the price) it orders \
                            them: a supplementary invoice on the order's rail (bank instructions, or the card's own pay link) \
                            and, once paid, the lab runs the tests on the same sample and publishes an amended COA. Refused \
                            before the sample is received, for a cancelled order, past the sample's retention, for a \
                            disposed or used-up sample, a test of another matrix or beyond the retained amount, and over \
                            the key's spend envelope. Retry with the same `idempotencyKey` to get the same add-on back.",
                },
                scope: { access: [ORDERS_WRITE], origin: decided, idempotency: optional },
                rest: {
                    /// Prices (`confirm` false or absent) or orders (`confirm: true`) add-on tests on a line's
                    /// retained sample.
                    ///
                    /// A preview answers 200 with the price of each test from the order's catalog revision and
                    /// the total; nothing is stored. A confirmed call needs `Idempotency-Key` and answers 201 with
                    /// the add-on in `pending_payment` and its supplementary invoice on the order's rail (bank:
                    /// instructions; card: its own `hostedUrl`, shown to keys with a payments scope); a replay
                    /// answers the same with `Idempotent-Replayed: true`. Once paid, the tests join the sample's
                    /// test list and the lab publishes an amended COA that reports them (docs/results.md). The
                    /// order shows its add-ons as `addons`. Refusals: 400 `invalid_request`, 400
                    /// `unknown_test`, 400 `idempotency_key_missing` (confirming without a key), 403
                    /// `spend_limit_exceeded`, 404 `not_found`, 409 `addon_sample_not_held`, 409
                    /// `sample_retention_expired`, 409 `sample_consumed`, 409 `addon_matrix_mismatch`, 409
                    /// `addon_sample_insufficient`, 400 `payment_method_unavailable` (stablecoin orders).
                    handler: request_addon,
                    openapi: (tag = "orders", operation_id = "requestOrderAddon",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-…, ACC-… or tracking number")),
                        request_body = AddonRequestBody,
                        responses(
                            (status = 200, description = "the priced preview (nothing stored)", body = AddonEnvelope),
                            (status = 201, description = "the ordered add-on with its invoice (also for a replay, with Idempotent-Replayed: true)", body = AddonEnvelope,
                                headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: staged,
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, reference: Reference, body: ApiJson<AddonRequestBody>| operations::request_addon(cx.peers, &caller, key.as_deref(), reference, body),
                },
            }
            {
                route: post "/orders/{reference}/simulate",
                tool: {
                    name: "svc.order.simulate",
                    title: "Simulate an order's lifecycle (sandbox)",
                    annotations: WRITE,
                    guard: "sandbox customers only",
                    description: "Sandbox customers only: plays one lifecycle `scenario` on one of the customer's own sandbox \
                            orders (`reference`: order UUID, ORD-…, INV-…, tracking or ACC- number) through the same code \
                            the carrier, the lab and QA run, so the real events and webhooks follow: `delivered` \
                            (carrier scans to delivery), `lost_in_transit`, `received` (one sample per line logged), \
                            `testing`, `coa_published` (generated passing results, QA-approved and published; held \
                            while unpaid), `coa_amended` (the published COA amended), and on payments \
                            `card_declined` (a declined card on the open checkout) and `stablecoin_reorg` (a confirming \
                            transfer leaves the chain). Play the lifecycle in that order: a \
                            scenario that does not fit the order's state is refused with scenario_not_applicable \
                            (details.needs says what comes first). Playing a scenario again changes nothing \
                            (`unchanged: true`), except coa_amended, which amends again. Never moves money.",
                },
                scope: { access: [ORDERS_WRITE], origin: addition, idempotency: none },
                rest: {
                    /// Plays a lifecycle scenario on a sandbox customer's own order (our addition,
                    /// docs/sandbox.md).
                    ///
                    /// Only keys of customers staff flagged as sandbox reach it: any other key gets 404
                    /// `not_found`, as for a path that does not exist (and every service behind it refuses
                    /// a live customer on its own). The scenario runs the same domain code as the carrier's
                    /// scans, lab staff and QA, so the usual events and webhooks follow. Refusals: 400
                    /// `invalid_request` (unknown scenario), 404 `not_found` (not the caller's sandbox
                    /// order), 409 `scenario_not_applicable` (`details.scenario`, `details.status`,
                    /// `details.needs`: play the prerequisite first; `coa_published` right after
                    /// `testing` may need a moment's retry while results-svc learns of the samples).
                    handler: simulate_order,
                    openapi: (tag = "orders", operation_id = "simulateOrder",
                        params(("reference" = String, Path, description = "order UUID, ORD-…, INV-…, ACC-… or tracking number")),
                        request_body = SimulateRequest,
                        responses((status = 200, description = "what the scenario did", body = SimulationEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference, body: ApiJson<SimulateRequest>| sandbox::simulate(cx.peers, &caller, reference, body),
                },
            }
            {
                route: get "/results",
                tool: {
                    name: "svc.result.list",
                    title: "List published COAs",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's QA-published certificates of analysis (published, retracted or \
                            superseded), newest publication first, with structured results; filter by `orderId`, `compound`, \
                            `lotNumber`, `publishedFrom`/`publishedTo`. Unpublished or held COAs never appear. \
                            `documentUrl` is a signed link valid for one hour: do not store it. Read-only.",
                },
                scope: { access: [RESULTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Lists the customer's QA-published COAs (published, retracted or superseded), newest
                    /// publication first. Nothing of a draft, submitted, approved or held COA is ever listed.
                    handler: list_results,
                    openapi: (tag = "results", operation_id = "listResults", params(ResultsQuery),
                        responses((status = 200, description = "one page of published COAs", body = CoaList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<ResultsQuery>| results::list_results(cx.peers, &caller, cx.site, query),
                },
            }
            {
                route: get "/results/{reference}",
                tool: {
                    name: "svc.result.get",
                    title: "Read one published COA",
                    annotations: READ,
                    guard: "",
                    description: "Reads one published COA with its structured results, signature and a signed PDF link. \
                            `reference` is the COA id or an accession number (its newest published COA), or an order-level \
                            reference when the order has one COA (several: ambiguous_reference lists them). A retracted COA stays \
                            readable, marked `retracted` with the reason; an amended one names its successor in `supersededBy`. \
                            Another customer's or an unpublished COA is not_found. Read-only.",
                },
                scope: { access: [RESULTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Reads one published COA with its structured results, by COA id or accession number (the
                    /// newest published COA of the accession). An unpublished, held or another customer's COA is
                    /// the same 404 as a missing one; a retracted COA stays readable, marked `retracted`.
                    handler: get_result,
                    openapi: (tag = "results", operation_id = "getResult",
                        params(("reference" = String, Path, description = "COA id or accession number (ACC-…); or an order-level reference (order UUID or number, invoice or tracking number) naming the order's one COA (409 ambiguous_reference with the candidates when it has several)")),
                        responses((status = 200, description = "the COA", body = CoaEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| results::get_result(cx.peers, &caller, cx.site, reference),
                },
            }
            {
                route: get "/results/{reference}/analytes",
                tool: {
                    name: "svc.result.analyte.list",
                    title: "List a COA's analyte rows",
                    annotations: READ,
                    guard: "",
                    description: "Reads the normalized per-analyte rows of one published COA (value as a decimal string \
                            or a qualifier such as <LOQ/ND, unit, LOQ/LOD, specification, pass/fail, method, instrument). \
                            `reference` is the COA id or an accession number. Read-only.",
                },
                scope: { access: [RESULTS_READ], origin: decided, idempotency: none },
                rest: {
                    /// The normalized per-analyte rows of one published COA.
                    handler: list_analytes,
                    openapi: (tag = "results", operation_id = "listAnalytes",
                        params(("reference" = String, Path, description = "COA id or accession number (ACC-…); or an order-level reference (order UUID or number, invoice or tracking number) naming the order's one COA (409 ambiguous_reference with the candidates when it has several)")),
                        responses((status = 200, description = "every analyte row of the COA (one page)", body = AnalyteList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| results::list_analytes(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/results/{reference}/instrument-data",
                tool: {
                    name: "svc.result.instrument_data.get",
                    title: "Read the instrument data behind one COA",
                    annotations: READ,
                    guard: "",
                    description: "Reads the structured instrument measurements behind one published COA (the files it \
                            released and what parsed from each), like svc.order.instrument_data.get for a single COA. \
                            `reference` is the COA id or an accession number (or the order's, when it has one COA). A retracted COA releases nothing: its runs \
                            are empty. Read-only.",
                },
                scope: { access: [INSTRUMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// The structured instrument measurements behind one published COA: the files it released and
                    /// what parsed from each. A retracted COA releases nothing (empty `runs`).
                    handler: get_result_instrument_data,
                    openapi: (tag = "results", operation_id = "getResultInstrumentData",
                        params(("reference" = String, Path, description = "COA id or accession number (ACC-…); or an order-level reference (order UUID or number, invoice or tracking number) naming the order's one COA (409 ambiguous_reference with the candidates when it has several)")),
                        responses((status = 200, description = "the COA's instrument data", body = InstrumentDataEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, reference: Reference| data::get_result_instrument_data(cx.peers, &caller, reference),
                },
            }
            {
                route: get "/export/coas",
                tool: {
                    name: "svc.export.coas",
                    title: "Export published COAs",
                    annotations: READ,
                    guard: "",
                    description: "Bulk export of the customer's published COAs, one row per analyte, in publication order, \
                            at most 5000 rows a call (`limit` for fewer). When `truncated` is true, call again with `since` = \
                            `nextSince` (the last `publishedAt` received): no row is lost or repeated, also for rows sharing a \
                            time or committed late. `nextCursor` appears only when one COA alone exceeds a page. The tool \
                            answers JSON; CSV is the REST operation's. Read-only.",
                },
                scope: { access: [RESULTS_READ], origin: decided, idempotency: none },
                rest: {
                    /// Bulk export of every published COA, one row per analyte, in publication order: at most
                    /// 5000 rows per call; when `truncated` is true, repeat with `since` = the last `publishedAt`
                    /// (`nextSince`). A page never splits the rows of one publication, and publications are
                    /// stamped in commit order, so paging neither loses nor repeats a row. `format=csv` streams RFC
                    /// 4180 CSV (header line first) with the page fields in `X-Export-Truncated`,
                    /// `X-Export-Next-Since` and `X-Export-Next-Cursor`.
                    handler: export_coas,
                    openapi: (tag = "results", operation_id = "exportCoas", params(ExportQuery),
                        responses((status = 200, description = "one page of COA rows",
                            content((CoaExportPage = "application/json"), (String = "text/csv"))))),
                },
                call: {
                    answer: export,
                    run: |cx, caller: Caller, query: ApiQuery<ExportQuery>| data::export(cx.peers, &caller, ExportKind::Coas, query),
                },
            }
            {
                route: get "/export/instrument-results",
                tool: {
                    name: "svc.export.instrument_results",
                    title: "Export instrument measurements",
                    annotations: READ,
                    guard: "",
                    description: "Bulk export of every instrument measurement released by the customer's published COAs, \
                            one row per analyte measurement (COA, file, instrument, method, run, retention time or m/z, \
                            response, reported concentration, LOQ), in publication order, at most 5000 rows a call. When \
                            `truncated` is true, call again with `since` = `nextSince`; `nextCursor` appears only when one \
                            COA alone exceeds a page. The tool answers JSON; CSV is the REST operation's. Read-only.",
                },
                scope: { access: [INSTRUMENTS_READ], origin: spec, idempotency: none },
                rest: {
                    /// Bulk export of every instrument measurement behind published COAs, one row per analyte
                    /// measurement and releasing COA, in publication order: at most 5000 rows per call, paged by
                    /// `since` like `GET /export/coas`; `format=csv` streams RFC 4180 CSV.
                    handler: export_instrument_results,
                    openapi: (tag = "results", operation_id = "exportInstrumentResults", params(ExportQuery),
                        responses((status = 200, description = "one page of measurement rows",
                            content((InstrumentExportPage = "application/json"), (String = "text/csv"))))),
                },
                call: {
                    answer: export,
                    run: |cx, caller: Caller, query: ApiQuery<ExportQuery>| data::export(cx.peers, &caller, ExportKind::InstrumentResults, query),
                },
            }
            {
                route: get "/verify",
                tool: {
                    name: "svc.coa.verify",
                    title: "Verify a COA",
                    annotations: READ,
                    guard: "",
                    description: "Public authenticity check of a COA by `accession` (or the COA id printed on it): \
                            authentic, unverifiable (its signature does not verify with the key its signingKeyId names), \
                            retracted, superseded (with the successor) or unknown. Compound, lot number and the \
                            signed content are revealed only with the verification `code` printed on the COA. Read-only.",
                },
                scope: { access: public, origin: decided, idempotency: none },
                rest: {
                    /// Public authenticity check of one COA by accession number (or COA id): `authentic`,
                    /// `unverifiable` (its signature does not verify with the key its `signingKeyId` names),
                    /// `retracted`, `superseded` (with the successor) or `unknown`. Compound, lot number and the
                    /// signed content are revealed only with the verification code printed on the COA.
                    handler: verify_get,
                    openapi: (tag = "verification", operation_id = "verifyCoa", params(VerifyQuery),
                        responses((status = 200, description = "the verdict", body = VerificationEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, query: ApiQuery<VerifyQuery>| results::verify(cx.peers, cx.verify_lookups, cx.client, query.accession, query.code),
                },
            }
            {
                route: post "/verify",
                tool: {
                    name: "svc.coa.verify.post",
                    title: "Verify a COA (body form)",
                    annotations: READ,
                    guard: "",
                    description: "The same check as svc.coa.verify with `accession` and optional `code` in the body. \
                            Read-only.",
                },
                scope: { access: public, origin: decided, idempotency: none },
                rest: {
                    /// Public authenticity check of one COA (body form of `GET /verify`).
                    handler: verify_post,
                    openapi: (tag = "verification", operation_id = "verifyCoaPost", request_body = VerifyRequest,
                        responses((status = 200, description = "the verdict", body = VerificationEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, body: ApiJson<VerifyRequest>| results::verify(cx.peers, cx.verify_lookups, cx.client, Some(body.accession), body.code),
                },
            }
            {
                route: get "/verify/batch",
                tool: {
                    name: "svc.coa.verify.batch",
                    title: "Verify many COAs",
                    annotations: READ,
                    guard: "",
                    description: "Public authenticity check of 1 to 100 accession numbers given comma-separated in \
                            `accessions`; one verdict per accession, in request order, without customer details. Read-only.",
                },
                scope: { access: public, origin: decided, idempotency: none },
                rest: {
                    /// Public authenticity check of 1 to 100 accessions (comma-separated); authenticity only.
                    handler: verify_batch_get,
                    openapi: (tag = "verification", operation_id = "verifyCoaBatch", params(VerifyBatchQuery),
                        responses((status = 200, description = "one verdict per accession, in request order", body = VerificationList))),
                },
                call: {
                    answer: json,
                    run: |cx, query: ApiQuery<VerifyBatchQuery>| results::verify_batch(cx.peers, cx.verify_lookups, cx.client, query.split()),
                },
            }
            {
                route: post "/verify/batch",
                tool: {
                    name: "svc.coa.verify.batch.post",
                    title: "Verify many COAs (body form)",
                    annotations: READ,
                    guard: "",
                    description: "The same check as svc.coa.verify.batch with `accessions` (1 to 100) as a JSON array in \
                            the body. Read-only.",
                },
                scope: { access: public, origin: decided, idempotency: none },
                rest: {
                    /// Public authenticity check of 1 to 100 accessions; authenticity only.
                    handler: verify_batch_post,
                    openapi: (tag = "verification", operation_id = "verifyCoaBatchPost",
                        request_body = VerifyBatchRequest,
                        responses((status = 200, description = "one verdict per accession, in request order", body = VerificationList))),
                },
                call: {
                    answer: json,
                    run: |cx, body: ApiJson<VerifyBatchRequest>| results::verify_batch(cx.peers, cx.verify_lookups, cx.client, body.accessions),
                },
            }
            {
                route: get "/support/tickets",
                tool: {
                    name: "svc.support.ticket.list",
                    title: "List support tickets",
                    annotations: READ,
                    guard: "",
                    description: "Lists the customer's support tickets, newest first, without their threads (read one with \
                            svc.support.ticket.get). Filter with `status` (open: waiting for the lab, answered: the lab \
                            answered last, closed: final). Page with `limit` (1-200) and `cursor`. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: decided, idempotency: none },
                rest: {
                    /// Lists the customer's support tickets, newest first (without their threads).
                    handler: list_tickets,
                    openapi: (tag = "support", operation_id = "listSupportTickets", params(TicketsQuery),
                        responses((status = 200, description = "one page of tickets", body = TicketList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<TicketsQuery>| support::list_tickets(cx.peers, &caller, query),
                },
            }
            {
                route: post "/support/tickets",
                tool: {
                    name: "svc.support.ticket.open",
                    title: "Open a support ticket",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: false,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                    guard: "`idempotencyKey`",
                    description: "Opens a support ticket answered by a human at the lab, about an order, shipment, result \
                            or invoice: `subject` (one line, 1-200 characters), `body` (plain text, 1-10000 characters, \
                            stored exactly as written) and optionally `reference`, one of the customer's orders (order \
                            UUID, ORD-…, INV-…, ACC-… or tracking number; unknown is not_found). Send an `idempotencyKey` \
                            (8-255 visible ASCII characters) and reuse it when retrying so the ticket is opened once. \
                            Each staff answer emits the event support.ticket_answered; read the thread with \
                            svc.support.ticket.get.",
                },
                scope: { access: [ORDERS_WRITE], origin: decided, idempotency: optional },
                rest: {
                    /// Opens a support ticket with its first message (send `Idempotency-Key` to retry safely).
                    ///
                    /// A replay of the same key and body answers exactly like the first response (201, same body)
                    /// plus `Idempotent-Replayed: true`; the same key with another body is 409 `idempotency_key_reused`.
                    handler: open_ticket,
                    openapi: (tag = "support", operation_id = "openSupportTicket", request_body = OpenTicketRequest,
                        responses((status = 201, description = "the ticket with its first message (also for a replay, with Idempotent-Replayed: true)", body = TicketEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, body: ApiJson<OpenTicketRequest>| support::open_ticket(cx.peers, &caller, key.as_deref(), body),
                },
            }
            {
                route: get "/support/tickets/{ticketId}",
                tool: {
                    name: "svc.support.ticket.get",
                    title: "Read a support ticket",
                    annotations: READ,
                    guard: "",
                    description: "Reads one support ticket with its whole thread, oldest message first: each message's \
                            author (customer or staff, with the operator's name), body (plain text exactly as written) and \
                            time. `ticketId` is the ticket UUID or its number (TKT-…). Another customer's ticket is reported \
                            exactly like a missing one (not_found). Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: addition, idempotency: none },
                rest: {
                    /// Reads one support ticket with its thread.
                    ///
                    /// Not in the spec's table: our addition, so that the customer can read the lab's answers.
                    handler: get_ticket,
                    openapi: (tag = "support", operation_id = "getSupportTicket",
                        params(("ticketId" = String, Path, description = "ticket UUID or number (TKT-…)")),
                        responses((status = 200, description = "the ticket with its thread", body = TicketEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, ticket: TicketId| support::get_ticket(cx.peers, &caller, ticket),
                },
            }
            {
                route: post "/support/tickets/{ticketId}/messages",
                tool: {
                    name: "svc.support.ticket.reply",
                    title: "Reply to a support ticket",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: false,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                    guard: "`idempotencyKey`",
                    description: "Adds the customer's message to one of its open or answered support tickets; the ticket \
                            goes back to open (waiting for the lab). `body` is plain text, 1-10000 characters, stored exactly \
                            as written. A closed ticket is a conflict: open a new one. Send an `idempotencyKey` (8-255 visible \
                            ASCII characters) and reuse it when retrying so the message is added once.",
                },
                scope: { access: [ORDERS_WRITE], origin: addition, idempotency: optional },
                rest: {
                    /// Adds the customer's reply to a ticket (send `Idempotency-Key` to retry safely).
                    ///
                    /// Not in the spec's table: our addition. The ticket goes back to `open`; a closed ticket is 409
                    /// `conflict`. Answers the ticket with its thread.
                    handler: reply_to_ticket,
                    openapi: (tag = "support", operation_id = "replyToSupportTicket",
                        params(("ticketId" = String, Path, description = "ticket UUID or number (TKT-…)")),
                        request_body = ReplyToTicketRequest,
                        responses((status = 201, description = "the ticket with its thread (also for a replay, with Idempotent-Replayed: true)", body = TicketEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, ticket: TicketId, body: ApiJson<ReplyToTicketRequest>| support::reply_to_ticket(cx.peers, &caller, key.as_deref(), ticket, body),
                },
            }
            {
                route: post "/notifications/consents",
                tool: {
                    name: "svc.notification.consent.record",
                    title: "Record an end customer's consent to COA emails",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: false,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                    guard: "only a consent the recipient really gave; `idempotencyKey`",
                    description: "Records that one of your own customers consented to receive certificates of analysis by \
                            email at `recipientEmail`: who consented (`consentedBy`, a name or your CRM id), when \
                            (`consentedAt`, ISO 8601, not in the future), the version of the consent text they agreed to \
                            (`textVersion`), how (`mechanism`: web_form, email_reply, signed_paper, verbal_recorded or \
                            in_app) and optionally `evidenceReference`. Record only consent the person actually gave. \
                            One active consent per address (a second is conflict with details.consentId; withdraw it \
                            first). After the recipient unsubscribed through an email's link, only a consent given later \
                            is accepted. Send an `idempotencyKey` and reuse it when retrying.",
                },
                scope: { access: [ORDERS_WRITE], origin: addition, idempotency: optional },
                rest: {
                    /// Records an end customer's consent to receive COAs by email (send `Idempotency-Key` to retry safely).
                    ///
                    /// Not in the spec's table: our addition, the record `POST /notifications/customer-coa` checks at
                    /// send time (docs/notifications.md). Refusals: 400 `invalid_request` (`details.field`), 409
                    /// `conflict` (an active consent of the address exists, `details.consentId`; or `consentedAt` is
                    /// before the recipient's last one-click unsubscribe, `details.unsubscribedAt`).
                    handler: record_consent,
                    openapi: (tag = "notifications", operation_id = "recordRecipientConsent", request_body = RecordConsentRequest,
                        responses((status = 201, description = "the consent (also for a replay, with Idempotent-Replayed: true)", body = ConsentEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: OptionalIdempotencyKey, body: ApiJson<RecordConsentRequest>| notifications::record_consent(cx.peers, &caller, key.as_deref(), body),
                },
            }
            {
                route: get "/notifications/consents",
                tool: {
                    name: "svc.notification.consent.list",
                    title: "List recorded consents",
                    annotations: READ,
                    guard: "",
                    description: "Lists the consents you recorded for your customers' addresses, newest first, each with \
                            its status (active or withdrawn) and, once withdrawn, when and how (customer_request: you \
                            withdrew it; one_click_unsubscribe: the recipient used an email's link). Filter by \
                            `recipientEmail` (without regard to case) and `status`; page with `limit` and `cursor`. Read-only.",
                },
                scope: { access: [ORDERS_READ], origin: addition, idempotency: none },
                rest: {
                    /// Lists the customer's recorded consents, newest first.
                    ///
                    /// Not in the spec's table: our addition (docs/notifications.md).
                    handler: list_consents,
                    openapi: (tag = "notifications", operation_id = "listRecipientConsents", params(ConsentsQuery),
                        responses((status = 200, description = "one page of consents", body = ConsentList))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, query: ApiQuery<ConsentsQuery>| notifications::list_consents(cx.peers, &caller, query),
                },
            }
            {
                route: post "/notifications/consents/{consentId}/withdraw",
                tool: {
                    name: "svc.notification.consent.withdraw",
                    title: "Withdraw a recorded consent",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: true,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                    guard: "when the recipient asked you to stop",
                    description: "Withdraws one of your recorded consents (`consentId`), for example when the recipient asked \
                            you to stop: no COA email reaches that address until a new consent is recorded. Withdrawing a \
                            withdrawn consent changes nothing. Another customer's consent is not_found.",
                },
                scope: { access: [ORDERS_WRITE], origin: addition, idempotency: none },
                rest: {
                    /// Withdraws one of the customer's consents (idempotent: a withdrawn consent stays as it is).
                    ///
                    /// Not in the spec's table: our addition (docs/notifications.md). The answer is the consent,
                    /// `status` `withdrawn`, `withdrawalMechanism` `customer_request` (or how it was withdrawn before).
                    handler: withdraw_consent,
                    openapi: (tag = "notifications", operation_id = "withdrawRecipientConsent",
                        params(("consentId" = String, Path, description = "consent UUID")),
                        responses((status = 200, description = "the withdrawn consent", body = ConsentEnvelope))),
                },
                call: {
                    answer: json,
                    run: |cx, caller: Caller, consent: ConsentId| notifications::withdraw_consent(cx.peers, &caller, consent),
                },
            }
            {
                route: post "/notifications/customer-coa",
                tool: {
                    name: "svc.notification.coa.send",
                    title: "Email a COA to an opted-in end customer",
                    annotations: Annotations {
                        read_only_hint: false,
                        destructive_hint: false,
                        idempotent_hint: true,
                        open_world_hint: true,
                    },
                    guard: "`idempotencyKey`; only to a recipient whose consent is on record",
                    description: "Emails one of your published COAs (`reference`: COA id or ACC- accession number) to one of \
                            your own customers at `recipientEmail`, whose consent you recorded with \
                            svc.notification.consent.record; without an active consent the call is refused \
                            (consent_required). The email is plain text with your optional `message` (at most 2000 \
                            characters, quoted as written), the COA's public verify link, the PDF attached and a one-click \
                            unsubscribe link. At most 10 emails per recipient in 24 hours (rate_limited with \
                            retryAfterSeconds). `idempotencyKey` is required: a retry with the same key never sends a \
                            second email. status sent means the mail relay accepted it.",
                },
                scope: { access: [RESULTS_READ, ORDERS_WRITE], origin: decided, idempotency: required },
                rest: {
                    /// Emails a published COA to an end customer whose consent is on record (`Idempotency-Key` required).
                    ///
                    /// Consent is checked when sending: an address without an active consent (never recorded, withdrawn
                    /// by you or unsubscribed by the recipient) is 409 `consent_required`. The COA must be yours (else 404
                    /// `not_found`, like a missing one) and in force (a retracted or superseded COA is 409 `conflict`).
                    /// The email (plain text, the verify link, the PDF, `List-Unsubscribe` with
                    /// `List-Unsubscribe-Post: List-Unsubscribe=One-Click`) is sent once per key: a replay answers the
                    /// stored email with `Idempotent-Replayed: true` and sends nothing. Per recipient and customer at
                    /// most 10 in any 24 hours: 429 `rate_limited` (`details.policy` = `per-recipient`, `Retry-After`). A
                    /// mail relay that refuses is 503 `service_unavailable` (`details.emailId`, `details.status` =
                    /// `failed`): nothing was sent, retry with the same key.
                    handler: send_coa_email,
                    openapi: (tag = "notifications", operation_id = "sendCustomerCoaEmail", request_body = SendCoaEmailRequest,
                        responses((status = 201, description = "the email, accepted by the mail relay (also for a replay, with Idempotent-Replayed: true)", body = CoaEmailEnvelope,
                            headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay"))))),
                },
                call: {
                    answer: replayable(CREATED),
                    run: |cx, caller: Caller, key: IdempotencyKey, body: ApiJson<SendCoaEmailRequest>| notifications::send_coa_email(cx.peers, &caller, key, body),
                },
            }
        }
    };
}
pub(crate) use operation_table;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::schema;
    use crate::mcp::tools::TOOLS;
    use crate::scopes::{self, BUILT, Idempotency, NOT_BUILT};
    use axum::extract::FromRequestParts;
    use http::Method;

    fn documented() -> Value {
        let (_, document) = crate::http::agent_routes();
        serde_json::to_value(&document).unwrap()
    }

    fn caller() -> Caller {
        let issuer = platform::tokens::TokenIssuer::new(
            "gateway",
            platform::tokens::SigningKey::development("gateway"),
        );
        Caller::new(
            std::sync::Arc::new(platform::principal::Principal::service("test", None)),
            issuer,
        )
    }

    #[test]
    fn the_router_scope_table_openapi_document_and_tools_come_from_the_same_declarations() {
        let document = documented();
        // Tool i is the i-th declaration's, so is the i-th built entry of the scope table.
        assert_eq!(TOOLS.len(), BUILT.len());
        for (tool, operation) in TOOLS.iter().zip(BUILT) {
            assert_eq!(
                (tool.method, tool.path),
                (operation.method, operation.path),
                "{}",
                tool.name
            );
            let method = Method::from_bytes(operation.method.as_bytes()).unwrap();
            assert_eq!(
                scopes::operation(&method, operation.path),
                Some(operation),
                "{}",
                tool.name
            );
            assert_eq!(tool.operation(), operation, "{}", tool.name);
            let described = &document["paths"][operation.path][operation.method.to_ascii_lowercase()];
            assert!(
                described.is_object(),
                "{} {} is not in the OpenAPI document",
                operation.method,
                operation.path
            );
        }
        // Every documented (= routed: utoipa_axum documents what it routes) operation is built.
        let mut routed = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                routed += 1;
                let method = method.to_ascii_uppercase();
                assert!(
                    BUILT.iter().any(|o| o.method == method && o.path == path),
                    "{method} {path} is routed without a declaration"
                );
            }
        }
        assert_eq!(
            routed,
            BUILT.len(),
            "no tool without a route, no route without a tool"
        );
        // tools/list shows the same tools, in the same order.
        let listed: Vec<&str> = schema::catalog()
            .entries()
            .iter()
            .map(|entry| entry.tool.name)
            .collect();
        let declared: Vec<&str> = TOOLS.iter().map(|tool| tool.name).collect();
        assert_eq!(listed, declared);
        // An operation not built yet is neither routed nor a tool, and not declared twice.
        for operation in NOT_BUILT {
            let described = &document["paths"][operation.path][operation.method.to_ascii_lowercase()];
            assert!(described.is_null(), "{} {}", operation.method, operation.path);
            assert!(
                BUILT
                    .iter()
                    .all(|o| (o.method, o.path) != (operation.method, operation.path)),
                "{} {} is built and listed as not built",
                operation.method,
                operation.path
            );
        }
    }

    #[test]
    fn the_spec_list_of_required_idempotency_keys_is_the_table_and_the_pickup_takes_an_optional_one() {
        let required: Vec<(&str, &str)> = BUILT
            .iter()
            .filter(|operation| operation.requires_idempotency_key())
            .map(|operation| (operation.method, operation.path))
            .collect();
        // SPEC.md, Authentication 4: the seven operations that require `Idempotency-Key`, and ours.
        let mut spec = vec![
            ("POST", "/orders"),
            ("POST", "/payments/prepare"),
            ("POST", "/payments/stablecoin/submit"),
            ("POST", "/webhooks"),
            ("DELETE", "/webhooks/{endpointId}"),
            ("POST", "/webhooks/{endpointId}/rotate-secret"),
            ("POST", "/webhooks/{endpointId}/test"),
            // Our decision (docs/notifications.md): an email cannot be unsent, so it goes out once
            // per key and never without one.
            ("POST", "/notifications/customer-coa"),
        ];
        let mut sorted = required.clone();
        sorted.sort();
        spec.sort();
        assert_eq!(sorted, spec);
        let pickup = scopes::operation(&Method::POST, "/orders/{reference}/pickup").unwrap();
        assert_eq!(pickup.idempotency, Idempotency::Optional);
        // OpenAPI: the header is declared, not required.
        let document = documented();
        let parameters = document["paths"]["/orders/{reference}/pickup"]["post"]["parameters"]
            .as_array()
            .unwrap();
        let header = parameters
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .unwrap();
        assert_eq!(
            (&header["in"], &header["required"]),
            (&Value::from("header"), &Value::from(false))
        );
        // MCP: the property is there, not required.
        let entry = schema::catalog()
            .entries()
            .iter()
            .find(|entry| entry.tool.name == "svc.pickup.request")
            .unwrap();
        let input = &entry.definition["inputSchema"];
        assert!(input["properties"]["idempotencyKey"].is_object(), "{input}");
        assert!(
            input["required"]
                .as_array()
                .unwrap()
                .iter()
                .all(|name| name != "idempotencyKey")
        );
        assert!(!entry.tool.needs_idempotency_key());
    }

    #[tokio::test]
    async fn both_front_ends_take_the_pickup_without_a_key_and_refuse_a_malformed_one_alike() {
        // REST: absent is None, present it has the rules of the required header.
        let (mut parts, ()) = http::Request::new(()).into_parts();
        let absent = OptionalIdempotencyKey::from_request_parts(&mut parts, &())
            .await
            .ok()
            .unwrap();
        assert_eq!(absent.rest(), None);
        let (mut parts, ()) = http::Request::builder()
            .header("idempotency-key", "short")
            .body(())
            .unwrap()
            .into_parts();
        let refused = OptionalIdempotencyKey::from_request_parts(&mut parts, &())
            .await
            .err()
            .unwrap();
        assert_eq!(refused.0.code, ErrorCode::IdempotencyKeyInvalid);
        // MCP: the same.
        let caller = caller();
        let mut input = McpInput::new(&caller, Map::new());
        assert_eq!(OptionalIdempotencyKey::mcp(&mut input).unwrap(), None);
        let mut arguments = Map::new();
        arguments.insert("idempotencyKey".into(), Value::from("short"));
        let mut input = McpInput::new(&caller, arguments);
        let refused = OptionalIdempotencyKey::mcp(&mut input).unwrap_err();
        assert_eq!(refused.code, ErrorCode::IdempotencyKeyInvalid);
        // A required key stays required over MCP.
        let mut input = McpInput::new(&caller, Map::new());
        let missing = IdempotencyKey::mcp(&mut input).unwrap_err();
        assert_eq!(missing.code, ErrorCode::IdempotencyKeyMissing);
        // Without a key, the same request is keyed alike, another one otherwise.
        let body = |window: &str| crate::dto::shipping::PickupRequest {
            date: "2026-12-01".into(),
            window: window.into(),
            quote_token: "token".into(),
            confirm: true,
        };
        let key = crate::operations::shipping::pickup_key("key-1", "ORD-1", &body("am"));
        assert_eq!(
            key,
            crate::operations::shipping::pickup_key("key-1", "ORD-1", &body("am"))
        );
        assert_ne!(
            key,
            crate::operations::shipping::pickup_key("key-1", "ORD-1", &body("pm"))
        );
        assert_ne!(
            key,
            crate::operations::shipping::pickup_key("key-2", "ORD-1", &body("am"))
        );
        platform::grpc::validate_idempotency_key(&key).unwrap();
    }

    #[test]
    fn the_coa_verification_tool_requires_its_accession_as_rest_does() {
        for name in ["svc.coa.verify", "svc.coa.verify.post"] {
            let entry = schema::catalog()
                .entries()
                .iter()
                .find(|entry| entry.tool.name == name)
                .unwrap();
            assert_eq!(
                entry.definition["inputSchema"]["required"],
                serde_json::json!(["accession"]),
                "{name}"
            );
        }
        let verify = &documented()["paths"]["/verify"]["get"]["parameters"][0];
        assert_eq!(
            (&verify["name"], &verify["required"]),
            (&Value::from("accession"), &Value::from(true))
        );
    }

    #[test]
    fn every_operation_documents_every_status_the_front_door_and_its_handler_can_answer() {
        let document = documented();
        let mut body_references = Vec::new();
        for operation in BUILT {
            let described = &document["paths"][operation.path][operation.method.to_ascii_lowercase()];
            let responses = described["responses"].as_object().unwrap();
            // The front door and the layers around every route: input rules (400), the rate
            // limits (429), an unexpected error (500), overload and unavailable services (503),
            // the time limit (504); a key-bound operation: no or a bad key (401), a scope or spend
            // refusal (403); any service answer of a conflict (409). Bodies over the limit and
            // a JSON body of another media type are 400 `invalid_body` (never 413 or 415), and no
            // operation answers 422.
            let mut expected = vec!["400", "429", "500", "503", "504", "409"];
            if let scopes::Access::Scopes(_) = operation.access {
                expected.extend(["401", "403"]);
            }
            // A path parameter or a body property that names a resource: 404.
            let body = described["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .and_then(|reference| reference.rsplit('/').next())
                .map(|name| &document["components"]["schemas"][name]["properties"]);
            let names_a_resource = body.is_some_and(|properties| {
                crate::http::openapi::RESOURCE_PROPERTIES
                    .iter()
                    .any(|property| properties[*property].is_object())
            });
            if names_a_resource {
                body_references.push((operation.method, operation.path));
            }
            if operation.path.contains('{') || names_a_resource {
                expected.push("404");
            }
            for status in expected {
                assert!(
                    responses.contains_key(status),
                    "{} {} does not document {status}",
                    operation.method,
                    operation.path
                );
            }
        }
        // The four whose body names an order, a quote, an order's payment or (a ticket's) order
        // reference (404 `not_found`,
        // `quote_not_found`, `transaction_not_found`) found: POST /payments/prepare answered an
        // undocumented 404 before.
        assert_eq!(
            body_references,
            [
                ("POST", "/orders"),
                ("POST", "/payments/prepare"),
                ("POST", "/payments/stablecoin/submit"),
                ("POST", "/support/tickets"),
                ("POST", "/notifications/customer-coa"),
            ]
        );
    }
}
