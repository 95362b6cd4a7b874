//! labctl: the lab staff's command line over the internal gRPC APIs.
//!
//! Operators act as themselves: labctl exchanges the operator's own credential
//! (`LABCTL_CREDENTIAL`, `lab_op_…`) at identity-svc for a short-lived staff token
//! addressed to the one service a command calls and carrying only the role that command needs,
//! so every service's audit trail names the operator. Commands return JSON values, printed as
//! JSON with `--json` (for scripts) or as indented text otherwise. The library form lets tests
//! drive exactly what operators run.
//!
//! Where the mesh's gRPC runs over mutual TLS (outside development mode), labctl speaks TLS to
//! `https://` addresses with a client certificate of the mesh's CA (`LABCTL_CA_FILE`,
//! `LABCTL_CLIENT_CERT_FILE`, `LABCTL_CLIENT_KEY_FILE`, or inside a pod of the mesh that pod's
//! `GRPC_TLS_*` files); docs/security.md, "Internal TLS".

#![forbid(unsafe_code)]

mod cancellations;
mod client;
mod commands;
mod data;
mod demo;
mod health;
mod lab;
mod operators;
mod registry;
mod shipments;
mod tickets;

pub use commands::execute;
pub use registry::{InstrumentsCommand, MethodsCommand};

use clap::{Args, Parser, Subcommand};

/// Operator CLI of the Laboratory Testing Agent API.
#[derive(Debug, Parser)]
#[command(name = "labctl", version, about)]
pub struct Cli {
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the services are and who the operator is.
#[derive(Clone, Debug, Args)]
pub struct Connection {
    /// identity-svc gRPC address (staff tokens, customers, keys, operators).
    #[arg(
        long,
        env = "LABCTL_IDENTITY_ADDR",
        default_value = "http://127.0.0.1:50057",
        global = true
    )]
    pub identity_addr: String,
    /// Gateway internal gRPC address (`labctl health`).
    #[arg(
        long,
        env = "LABCTL_GATEWAY_ADDR",
        default_value = "http://127.0.0.1:50050",
        global = true
    )]
    pub gateway_addr: String,
    /// catalog-svc gRPC address.
    #[arg(
        long,
        env = "CATALOG_SVC_ADDR",
        default_value = "http://127.0.0.1:50051",
        global = true
    )]
    pub catalog_addr: String,
    /// orders-svc gRPC address.
    #[arg(
        long,
        env = "ORDERS_SVC_ADDR",
        default_value = "http://127.0.0.1:50052",
        global = true
    )]
    pub orders_addr: String,
    /// results-svc gRPC address.
    #[arg(
        long,
        env = "RESULTS_SVC_ADDR",
        default_value = "http://127.0.0.1:50055",
        global = true
    )]
    pub results_addr: String,
    /// payments-svc gRPC address.
    #[arg(
        long,
        env = "PAYMENTS_SVC_ADDR",
        default_value = "http://127.0.0.1:50053",
        global = true
    )]
    pub payments_addr: String,
    /// shipping-svc gRPC address.
    #[arg(
        long,
        env = "SHIPPING_SVC_ADDR",
        default_value = "http://127.0.0.1:50054",
        global = true
    )]
    pub shipping_addr: String,
    /// webhooks-svc gRPC address.
    #[arg(
        long,
        env = "WEBHOOKS_SVC_ADDR",
        default_value = "http://127.0.0.1:50056",
        global = true
    )]
    pub webhooks_addr: String,
    /// The operator's own credential (lab_op_…), exchanged for a staff token per command.
    #[arg(
        long,
        env = "LABCTL_CREDENTIAL",
        hide_env_values = true,
        global = true,
        default_value = ""
    )]
    pub credential: String,
    /// CA bundle (PEM) that signs the mesh's certificates: with it (and the client certificate
    /// and key below) labctl speaks TLS to every address, verifying the servers' certificates
    /// against it and the address's host name. All three default to GRPC_TLS_CA_FILE,
    /// GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE when none is given (inside a pod of the mesh).
    #[arg(long, env = "LABCTL_CA_FILE", global = true)]
    pub ca_file: Option<std::path::PathBuf>,
    /// Client certificate (PEM) signed by a CA of the bundle, with the clientAuth usage.
    #[arg(long, env = "LABCTL_CLIENT_CERT_FILE", global = true)]
    pub client_cert_file: Option<std::path::PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, env = "LABCTL_CLIENT_KEY_FILE", hide_env_values = true, global = true)]
    pub client_key_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Customers of the lab.
    #[command(subcommand)]
    Customers(CustomersCommand),
    /// API keys of a customer.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Catalog revisions.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// Payments received.
    #[command(subcommand)]
    Payments(PaymentsCommand),
    /// Shipments: carrier scans, sandbox scan scripts, paid pickups.
    #[command(subcommand)]
    Shipments(ShipmentsCommand),
    /// Webhook deliveries.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Lab operators and their credentials.
    #[command(subcommand)]
    Operators(OperatorsCommand),
    /// Samples: receiving, the start of testing and the disposal of retained samples
    /// (lab.technician).
    #[command(subcommand)]
    Samples(SamplesCommand),
    /// Customers' cancellation requests: list (any operator); approve or decline with a note
    /// shown to the customer (payments.admin).
    #[command(subcommand)]
    Cancellations(CancellationsCommand),
    /// Results and COAs: record, submit (lab.analyst); approve, send back, publish, retract,
    /// amend (lab.qa); show (any operator).
    #[command(subcommand)]
    Results(ResultsCommand),
    /// Raw instrument files: import into a sample's result set (lab.analyst), list (any
    /// operator).
    #[command(subcommand)]
    Data(DataCommand),
    /// The instrument registry: list, show (any operator); upsert, calibrate, status (lab.qa).
    #[command(subcommand)]
    Instruments(InstrumentsCommand),
    /// The method registry: list, show (any operator); upsert (lab.qa).
    #[command(subcommand)]
    Methods(MethodsCommand),
    /// Customers' support tickets: list, show (any operator); answer, close (support.agent).
    #[command(subcommand)]
    Tickets(TicketsCommand),
    /// Walks an order through the lab with plausible results (demo).
    Demo {
        /// Order number (ORD-…) or id.
        #[arg(long)]
        order: String,
        /// Credential of a second operator with lab.qa, who approves and publishes (four eyes:
        /// the operator running the command records the results).
        #[arg(long, env = "LABCTL_QA_CREDENTIAL", hide_env_values = true)]
        qa_credential: String,
    },
    /// Principal-token signing keys.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Prints a short-lived staff token of the signed-in operator (10 minutes) for a script or
    /// a reflection client calling one service directly: send it as `authorization: Bearer …`
    /// metadata. Only the token without `--json`; with it, the token, its audience, roles,
    /// operator and expiry. The token can only be used at `--audience`, carries only the
    /// `--role`s asked for (each one the operator holds) and is refused once the operator's
    /// credential is revoked (docs/internal-api.md).
    Token {
        /// The service the token is for: gateway, identity-svc, catalog-svc, orders-svc,
        /// payments-svc, shipping-svc, results-svc or webhooks-svc.
        #[arg(long)]
        audience: String,
        /// A role the token carries (repeat for several, or separate with commas); none: the
        /// operator's identity only, for what any operator may do (reads).
        #[arg(long = "role", value_delimiter = ',')]
        roles: Vec<String>,
    },
    /// The gateway's Redis and every peer service's health (identity-svc's among them), as the
    /// gateway sees them.
    Health,
}

// Parsed once per process: the size of the import's arguments does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Imports a raw instrument file into a result set of a sample: stored as is, parsed into
    /// measurements where the format is open (mzML, ANDI/AIA netCDF, vendor CSV report; a file
    /// that does not parse is still stored, with its parse error). labctl sends the file's
    /// sha256; the import is integrity-verified when results-svc computes the same. Importing
    /// the same file into the same set again changes nothing. Files are released to the customer
    /// by the COAs of the sample published after the import.
    Import {
        /// The file to import.
        file: std::path::PathBuf,
        /// Accession number of the sample (ACC-…).
        #[arg(long)]
        accession: String,
        /// Result set of the sample, created on first use (for example hplc-purity).
        #[arg(long)]
        result_set: String,
        /// Instrument vendor (Agilent, Waters, Thermo Fisher, Shimadzu, …).
        #[arg(long)]
        vendor: String,
        #[arg(long)]
        mime_type: Option<String>,
        /// sha256 to claim instead of the one labctl computes (64 hex), for files collected
        /// elsewhere whose hash travelled with them.
        #[arg(long)]
        client_sha256: Option<String>,
        /// Registry id of the instrument (labctl instruments list).
        #[arg(long)]
        instrument: Option<String>,
        /// Registry id of the method (labctl methods list).
        #[arg(long)]
        method: Option<String>,
        /// Sample identifier in the instrument's sequence (default: read from the file).
        #[arg(long)]
        sample_identifier: Option<String>,
        /// Run or injection identifier (default: read from the file).
        #[arg(long)]
        run_identifier: Option<String>,
        /// Acquisition time, RFC 3339 (default: read from the file).
        #[arg(long)]
        acquired_at: Option<String>,
        /// Format to parse as (mzml, andi-netcdf, vendor-csv); detected from the content when
        /// absent.
        #[arg(long)]
        format: Option<String>,
        /// The vendor's native bundle (for example a zipped .D directory), released with the file.
        #[arg(long)]
        native_bundle: Option<std::path::PathBuf>,
    },
    /// Lists the imported files of a sample with their parse status.
    Imports {
        /// Accession number (ACC-…).
        accession: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ShipmentsCommand {
    /// Records one carrier scan of a shipment (needs shipping.admin). A scan with the carrier id
    /// of an earlier one changes nothing; an older scan joins the history only.
    Scan {
        /// Tracking number of the shipment.
        tracking_number: String,
        /// Normalized status: pre_transit, in_transit, out_for_delivery, delivered, exception,
        /// returned or lost.
        #[arg(long)]
        status: String,
        /// The carrier's status code (default: the status).
        #[arg(long)]
        status_code: Option<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        location: Option<String>,
        /// When the scan happened (RFC 3339; default now).
        #[arg(long)]
        occurred_at: Option<String>,
        /// The carrier's id of the scan, for deduplication.
        #[arg(long)]
        event_id: Option<String>,
    },
    /// Plays a sandbox carrier scan script on a shipment: delivered, delayed, returned or lost
    /// (needs shipping.admin).
    Simulate {
        tracking_number: String,
        #[arg(long, default_value = "delivered")]
        script: String,
    },
    /// Books a door pickup whose payment arrived outside its hosted payment page, for example by
    /// bank transfer (needs payments.admin). A payment on the page books it by itself.
    PickupPaid {
        /// Pickup id.
        pickup_id: String,
        /// Reference of the payment received.
        #[arg(long)]
        payment_reference: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum OperatorsCommand {
    /// Registers an operator with roles and prints their credential once. An operator holding
    /// lab.qa or identity.admin is created pending, without a credential, until another admin
    /// approves it (`operators approve`).
    Create {
        name: String,
        /// Comma-separated roles (catalog.admin, payments.admin, identity.admin, webhooks.admin,
        /// shipping.admin, lab.technician, lab.analyst, lab.qa, support.agent), or "all" (every role but the lab
        /// roles). identity.admin and lab roles never go together.
        #[arg(long)]
        roles: String,
    },
    /// Approves a pending operator registered by another admin and prints its credential once.
    Approve { name: String },
    /// Lists operators (never their credentials).
    List,
    /// Replaces an operator's credential and prints the new one once.
    Rotate { name: String },
    /// Disables an operator; their credential stops working at once, and the staff tokens
    /// already issued to them within seconds.
    Disable { name: String },
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Generates an Ed25519 signing key for one process: prints its private JWK (the process's
    /// TOKEN_SIGNING_KEY secret) and the public entry to add to LAB_TOKEN_TRUSTED_KEYS.
    GenerateKey {
        /// The process that will sign with it (gateway, orders-svc, …).
        #[arg(long)]
        issuer: String,
        /// Key id; `<issuer>-<date>` when absent.
        #[arg(long)]
        kid: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Lists an endpoint's deliveries with every attempt, newest first.
    Deliveries {
        /// Endpoint id.
        #[arg(long)]
        endpoint: String,
        /// Only deliveries in this status (pending, succeeded, dead, abandoned).
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        limit: Option<i32>,
    },
    /// Queues dead deliveries again (one endpoint's, or every endpoint's).
    Redeliver {
        #[arg(long)]
        endpoint: Option<String>,
    },
    /// Delivers again every stored event since a time to one endpoint, with the original event ids.
    Replay {
        #[arg(long)]
        endpoint: String,
        /// RFC 3339 time.
        #[arg(long)]
        since: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CustomersCommand {
    /// Creates a customer, or returns the existing one with that email.
    Ensure {
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: String,
    },
    /// Lists customers.
    List,
    /// Turns a customer's sandbox flag on or off (identity.admin): a sandbox customer's keys
    /// may simulate its orders' lifecycle (docs/sandbox.md).
    Sandbox {
        /// Customer id or email.
        customer: String,
        /// `on` (sandbox) or `off` (live).
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Mints an API key and prints it once.
    Create {
        /// Customer id.
        #[arg(long)]
        customer: String,
        #[arg(long, default_value = "default")]
        name: String,
        /// Comma-separated scopes, or "all".
        #[arg(long, default_value = "all")]
        scopes: String,
        /// Largest order total the key may commit, in USD cents.
        #[arg(long)]
        spend_limit_cents: Option<i64>,
    },
    /// Lists a customer's keys (never their secrets).
    List {
        #[arg(long)]
        customer: String,
    },
    /// Revokes a key by id or public id.
    Revoke { key: String },
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Imports a catalog document as a new revision.
    Import {
        /// Path of the catalog JSON document.
        file: std::path::PathBuf,
        #[arg(long, default_value = "")]
        note: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PaymentsCommand {
    /// Records money received by bank transfer against an invoice.
    Record {
        /// Invoice number (INV-…) or invoice id.
        #[arg(long)]
        invoice: String,
        /// Amount received in USD cents.
        #[arg(long)]
        amount_cents: i64,
        /// The bank's unique reference of the transfer.
        #[arg(long)]
        bank_reference: String,
        /// When the money arrived (RFC 3339); now when absent.
        #[arg(long)]
        received_at: Option<String>,
    },
    /// Sets an API key's spend envelope (caps in USD cents; an omitted cap is no cap). Days and
    /// months are UTC calendar days and months.
    SetEnvelope {
        /// Customer id of the key.
        #[arg(long)]
        customer: String,
        /// API key id (as `keys list` shows it).
        #[arg(long)]
        key: String,
        /// Largest total of one order (pickup, add-on).
        #[arg(long)]
        per_order_cents: Option<i64>,
        /// Most the key may commit per UTC day.
        #[arg(long)]
        daily_cents: Option<i64>,
        /// Most the key may commit per UTC month.
        #[arg(long)]
        monthly_cents: Option<i64>,
    },
    /// Shows an API key's spend envelope and what it committed today and this month.
    GetEnvelope {
        #[arg(long)]
        customer: String,
        #[arg(long)]
        key: String,
    },
    /// Lists refunds of cancelled orders lab-wide (any operator): `due` (bank and stablecoin
    /// refunds staff send back) and `failed` card refunds first.
    Refunds {
        /// pending, succeeded, failed or due (all when absent).
        #[arg(long)]
        status: Option<String>,
        /// At most this many (1 to 200; default 50).
        #[arg(long, default_value_t = 0)]
        limit: u32,
    },
    /// Records that a `due` refund was sent back (payments.admin): the bank transfer's
    /// reference, or the transaction hash of the stablecoin transfer to the payer address.
    RecordRefund {
        /// The refund's id (as `payments refunds` shows it).
        #[arg(long)]
        refund: String,
        /// Bank reference or transaction hash of the transfer back.
        #[arg(long)]
        reference: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CancellationsCommand {
    /// Lists cancellation requests lab-wide, pending ones oldest first.
    List {
        /// pending, approved or declined (all when absent).
        #[arg(long)]
        status: Option<String>,
        /// At most this many (1 to 200; default 50).
        #[arg(long, default_value_t = 0)]
        limit: u32,
    },
    /// Approves an order's pending request: the order is cancelled (order.cancelled), its unpaid
    /// invoice voided or its payment refunded above the charge, its unused label voided.
    Approve {
        /// Order number (ORD-…) or id.
        #[arg(long)]
        order: String,
        /// Shown to the customer (1 to 2000 characters).
        #[arg(long)]
        note: String,
        /// Required once the lab holds the sample: what the customer still owes for work done,
        /// 0 up to the order total, in cents. Refused before receipt (nothing is charged then).
        #[arg(long)]
        charge_cents: Option<i64>,
    },
    /// Declines an order's pending request: the order goes on (order.cancellation_declined).
    Decline {
        /// Order number (ORD-…) or id.
        #[arg(long)]
        order: String,
        /// Shown to the customer (1 to 2000 characters).
        #[arg(long)]
        note: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SamplesCommand {
    /// Receives a shipment's samples against an order: one --sample per order line.
    Receive {
        /// Order number (ORD-…) or id.
        #[arg(long)]
        order: String,
        /// Inbound tracking number, when known.
        #[arg(long, default_value = "")]
        tracking: String,
        /// LINE:UNITS:CONDITION:LOCATION:CONTAINERS, for example
        /// `1:2:intact:FRZ-1/A1:2 x 2 mL amber vial` (conditions: intact, damaged,
        /// temperature_excursion, insufficient).
        #[arg(long = "sample", required = true)]
        samples: Vec<String>,
    },
    /// Starts testing of a received order (in_lab, testing.started).
    StartTesting {
        #[arg(long)]
        order: String,
    },
    /// Lists an order's add-ons (tests ordered on its retained samples): which sample, which
    /// tests, where each stands and its supplementary invoice. Paid add-ons are on the sample's
    /// test list: record them in the sample's COA, or its amendment once published.
    Addons {
        /// Order number (ORD-…), id or accession number.
        #[arg(long)]
        order: String,
    },
    /// Records the disposal of a sample's retained portion after its retention period
    /// (`retainUntil`): a custody entry `disposed`.
    Dispose {
        /// Accession number (ACC-…).
        #[arg(long)]
        accession: String,
        /// How it was disposed of, for example "incinerated via licensed contractor".
        #[arg(long)]
        method: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Records (or replaces, by analyte) results of a sample's draft COA.
    Record {
        #[arg(long)]
        accession: String,
        /// JSON array of rows: analyte, testId, value or qualifier, unit, loq, lod,
        /// specification, outcome, method, instrument, measuredAt.
        #[arg(long)]
        results_json: String,
    },
    /// Submits a sample's results for QA review.
    Submit {
        #[arg(long)]
        accession: String,
    },
    /// Approves submitted results (not by an analyst who entered them).
    Approve {
        #[arg(long)]
        accession: String,
    },
    /// Sends submitted results back to the analyst.
    SendBack {
        #[arg(long)]
        accession: String,
        #[arg(long)]
        reason: String,
    },
    /// Publishes an approved COA (held until the order is paid).
    Publish {
        #[arg(long)]
        accession: String,
    },
    /// Retracts a published COA (by accession or COA id).
    Retract {
        #[arg(long)]
        coa: String,
        #[arg(long)]
        reason: String,
    },
    /// Opens an amendment of a published or retracted COA (by accession or COA id).
    Amend {
        #[arg(long)]
        coa: String,
        #[arg(long)]
        reason: String,
    },
    /// Shows the current COA of an accession in any state.
    Show {
        #[arg(long)]
        accession: String,
    },
}

/// Renders a command result for people or scripts.
pub fn render(value: &serde_json::Value, json: bool) -> String {
    match value {
        _ if json => value.to_string(),
        // A bare text result (`labctl token`) prints as is, for `$(labctl token …)`.
        serde_json::Value::String(text) => text.clone(),
        _ => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::render;
    use serde_json::json;

    #[test]
    fn a_bare_text_result_prints_as_is_for_command_substitution_and_as_json_with_json() {
        let token = json!("eyJhbGciOiJFZERTQSJ9.payload.signature");
        assert_eq!(render(&token, false), "eyJhbGciOiJFZERTQSJ9.payload.signature");
        assert_eq!(render(&token, true), "\"eyJhbGciOiJFZERTQSJ9.payload.signature\"");
        let object = json!({ "token": "t" });
        assert_eq!(render(&object, false), "{\n  \"token\": \"t\"\n}");
        assert_eq!(render(&object, true), "{\"token\":\"t\"}");
    }
}

/// `labctl tickets`: the customers' support tickets (docs/support.md).
#[derive(Debug, Subcommand)]
pub enum TicketsCommand {
    /// Lists tickets of every customer, newest first, without their threads.
    List {
        /// Only tickets in this status: open, answered or closed.
        #[arg(long)]
        status: Option<String>,
        /// Only tickets of this customer (UUID).
        #[arg(long)]
        customer: Option<String>,
        /// Page size, 1 to 200 (default 50).
        #[arg(long)]
        limit: Option<i32>,
        /// The previous page's nextCursor.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Shows one ticket (UUID or TKT-… number) with its whole thread.
    Show {
        /// Ticket UUID or number (TKT-…).
        ticket: String,
    },
    /// Answers a ticket (support.agent): it becomes answered and the customer gets
    /// support.ticket_answered.
    Answer {
        /// Ticket UUID or number (TKT-…).
        ticket: String,
        /// The answer, plain text (at most 10000 characters).
        #[arg(long, conflicts_with = "body_file")]
        body: Option<String>,
        /// A file holding the answer (UTF-8 text).
        #[arg(long)]
        body_file: Option<std::path::PathBuf>,
    },
    /// Closes a ticket (support.agent), with an optional closing note added to the thread; the
    /// customer gets support.ticket_closed. Closing a closed ticket changes nothing.
    Close {
        /// Ticket UUID or number (TKT-…).
        ticket: String,
        /// A closing note for the customer.
        #[arg(long)]
        note: Option<String>,
    },
}
