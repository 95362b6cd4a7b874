//! labctl: the lab staff's command line over the internal gRPC APIs.
//!
//! Operators act as themselves: labctl exchanges the operator's own credential
//! (`LABCTL_CREDENTIAL`, `lab_op_…`) at the gateway's identity API for a short-lived staff token
//! addressed to the one service a command calls and carrying only the role that command needs,
//! so every service's audit trail names the operator. Commands return JSON values, printed as
//! JSON with `--json` (for scripts) or as indented text otherwise. The library form lets tests
//! drive exactly what operators run.

#![forbid(unsafe_code)]

mod client;
mod commands;
mod health;
mod operators;

pub use commands::execute;

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
    /// Gateway internal gRPC address (identity).
    #[arg(
        long,
        env = "LABCTL_IDENTITY_ADDR",
        default_value = "http://127.0.0.1:50050",
        global = true
    )]
    pub identity_addr: String,
    /// catalog-svc gRPC address.
    #[arg(
        long,
        env = "CATALOG_SVC_ADDR",
        default_value = "http://127.0.0.1:50051",
        global = true
    )]
    pub catalog_addr: String,
    /// payments-svc gRPC address.
    #[arg(
        long,
        env = "PAYMENTS_SVC_ADDR",
        default_value = "http://127.0.0.1:50053",
        global = true
    )]
    pub payments_addr: String,
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
    /// Webhook deliveries.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Lab operators and their credentials.
    #[command(subcommand)]
    Operators(OperatorsCommand),
    /// Principal-token signing keys.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// The gateway's database and Redis and every peer service's health, as the gateway sees them.
    Health,
}

#[derive(Debug, Subcommand)]
pub enum OperatorsCommand {
    /// Registers an operator with roles and prints their credential once.
    Create {
        name: String,
        /// Comma-separated roles (catalog.admin, payments.admin, identity.admin, webhooks.admin), or "all".
        #[arg(long)]
        roles: String,
    },
    /// Lists operators (never their credentials).
    List,
    /// Replaces an operator's credential and prints the new one once.
    Rotate { name: String },
    /// Disables an operator; their credential stops working at once.
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
}

/// Renders a command result for people or scripts.
pub fn render(value: &serde_json::Value, json: bool) -> String {
    if json {
        value.to_string()
    } else {
        serde_json::to_string_pretty(value).unwrap_or_default()
    }
}
