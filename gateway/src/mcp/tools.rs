//! The tool table: one MCP tool per REST operation, named `svc.<domain>.<action>`. A tool names
//! its REST twin (method and path template); everything else about it comes from the twin: its
//! scopes and whether it needs an idempotency key from `crate::scopes`, its input and output
//! schemas from the OpenAPI document ([`super::schema`]), its behaviour from the operation
//! function the REST handler calls ([`super::call`]).
//!
//! **Every REST operation adds its tool here in the same change** (a unit test fails while a
//! routed operation has no tool); see `docs/mcp.md`, "Adding a tool".

use crate::scopes::{self, Access};
use http::Method;
use serde::Serialize;

/// Hints about a tool's behaviour for the client (MCP `ToolAnnotations`).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// A read: no side effect, the same answer for the same state.
const READ: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// An additive write that a retry with the same idempotency key does not repeat.
const GUARDED_WRITE: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// One tool.
#[derive(Debug)]
pub struct Tool {
    /// `svc.<domain>.<action>`.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// The REST twin: HTTP method.
    pub method: &'static str,
    /// The REST twin: path template relative to `/api/v1/agent`.
    pub path: &'static str,
    /// Written for a model: what it does, when to use it, what guards it.
    pub description: &'static str,
    /// The guards of the write beyond scope (docs/mcp.md's table); empty for a read.
    pub guard: &'static str,
    pub annotations: Annotations,
}

impl Tool {
    /// The twin's entry of the scope table.
    ///
    /// # Panics
    /// When the twin is not in the scope table (the unit tests catch it).
    pub fn operation(&self) -> &'static scopes::Operation {
        let method = Method::from_bytes(self.method.as_bytes()).unwrap_or(Method::GET);
        scopes::operation(&method, self.path)
            .unwrap_or_else(|| panic!("{} {} is not in the scope table", self.method, self.path))
    }

    /// The scopes a key needs to see and call the tool (its twin's).
    pub fn required_scopes(&self) -> &'static [&'static str] {
        match self.operation().access {
            Access::Scopes(required) => required,
            Access::Public => &[],
        }
    }

    /// True when a key holding `held` may see and call the tool.
    pub fn allowed(&self, held: &[String]) -> bool {
        self.required_scopes()
            .iter()
            .all(|scope| held.iter().any(|held| held == scope))
    }

    /// True when the twin requires `Idempotency-Key`: the tool requires `idempotencyKey`.
    pub fn needs_idempotency_key(&self) -> bool {
        self.operation().idempotent
    }
}

/// Looks a tool up by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// Every tool, in the order of the canonical flow.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "svc.catalog.search",
        title: "Search the test catalog",
        method: "GET",
        path: "/catalog",
        description: "Reads one page of the laboratory's authoritative catalog of tests and bundles with \
            their prices (integer USD cents per sample line). Start every order here: keep the returned \
            `catalogRevision`, and pass `include: \"categories,turnarounds,requirements\"` (or \"all\") to learn \
            the category ids, turnaround ids and sample requirements that svc.quote.create needs. Filter \
            with `category` and `query`; page with `limit` (1-200) and `cursor` (pass back \
            `pagination.nextCursor` unchanged). Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.quote.create",
        title: "Create a server-priced quote",
        method: "POST",
        path: "/quotes",
        description: "Creates an immutable, server-priced quote for one category: each compound in \
            `compoundNames` becomes its own sample line, and every test or bundle id in `testIds` is applied \
            to every line. Prices are computed by the server; you never send a price. The quote expires \
            (normally after 15 minutes, see `expiresAt`) and is consumed by svc.order.create with its `id` as \
            `quoteId`. Creating a quote commits to nothing.",
        guard: "server-priced; expires",
        annotations: Annotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: false,
        },
    },
    Tool {
        name: "svc.order.create",
        title: "Place an order from a quote",
        method: "POST",
        path: "/orders",
        description: "Places a laboratory order from an unexpired quote and commits the customer to pay its \
            total. Guards: `confirm` must be true (only set it when the user has approved the quoted total), \
            the quote must belong to this customer and be unused, the total must fit the API key's spending \
            limit, and `idempotencyKey` (8-255 visible ASCII characters) is required: generate one unique key \
            per intended order and reuse the same key when you retry after a timeout or error, so that the \
            order is never placed twice (the retry returns the first result, marked \
            `_meta.lab/idempotentReplayed`). `paymentMethod` is `bank_invoice` (the order answer carries the \
            invoice number and bank transfer instructions in `payment`). One quote makes one order.",
        guard: "`confirm: true`, unexpired unused quote, spend limit, `idempotencyKey`",
        annotations: GUARDED_WRITE,
    },
    Tool {
        name: "svc.order.list",
        title: "List orders",
        method: "GET",
        path: "/orders",
        description: "Lists the customer's orders, newest first, optionally only those in one `status` \
            (invoice_sent, overdue, paid, label_generated, in_transit, sample_received, in_lab, reporting, \
            completed, cancelled). Page with `limit` and `cursor`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.order.get",
        title: "Read one order",
        method: "GET",
        path: "/orders/{reference}",
        description: "Reads one order with its status, full status history, sample lines, charges and \
            payment block. `reference` is the order UUID, the order number (ORD-…) or the invoice number \
            (INV-…). Poll this to follow an order after placing it. An order of another customer is \
            reported exactly like a missing one (not_found). Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.invoice.list",
        title: "List invoices",
        method: "GET",
        path: "/invoices",
        description: "Lists the customer's invoices (metadata, lines, amounts due and paid), newest first; \
            filter by `status` (open, paid, void) or `orderId`. Page with `limit` and `cursor`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.invoice.get",
        title: "Read one invoice",
        method: "GET",
        path: "/invoices/{reference}",
        description: "Reads one invoice with its lines, amounts and, on the bank rail, the transfer \
            instructions. `reference` is the invoice UUID, the invoice number (INV-…) or the order UUID. \
            Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.payment.list",
        title: "List payments",
        method: "GET",
        path: "/payments",
        description: "Lists the payments received against the customer's invoices, newest first; filter \
            by `invoiceId`. Page with `limit` and `cursor`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.payment.get",
        title: "Read one payment",
        method: "GET",
        path: "/payments/{reference}",
        description: "Reads one payment state by its UUID. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.shipment.list",
        title: "List shipments",
        method: "GET",
        path: "/shipments",
        description: "Lists the customer's shipments (prepaid inbound labels and their tracking), newest first: \
            tracking number, carrier and service codes, normalized status (pre_transit, in_transit, exception, \
            out_for_delivery, delivered, returned, lost), carrier event history and any door pickup. Filter \
            with `status` and `orderId`; page with `limit` (1-200) and `cursor` (pass back \
            `pagination.nextCursor` unchanged). Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.shipment.get",
        title: "Track a shipment",
        method: "GET",
        path: "/shipments/{reference}",
        description: "Reads one shipment with its carrier event history (status code, description, \
            occurred-at, location, oldest first) and normalized status. `reference` is the shipment id, the \
            tracking number, the order id or the order number. Use it to follow a sample to the lab; \
            svc.order.get shows the order moving to in_transit on the first acceptance scan. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.shipment.label.get",
        title: "Get the prepaid shipping label",
        method: "GET",
        path: "/shipments/{reference}/label",
        description: "Returns the prepaid inbound label of an order's shipment: a signed URL of the 4x6 in PDF \
            (valid one hour; call again for a fresh one, never store it), the tracking number and URL, the \
            ship-to address (the lab) and the packing steps with the exact containers per sample line. \
            `reference` is the shipment id, tracking number, order id or order number. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.pickup.options",
        title: "List door-pickup options",
        method: "GET",
        path: "/orders/{reference}/pickup",
        description: "Lists door-pickup options of a paid order's shipment: dates (business days, no holidays, \
            today only before the cut-off), windows, the price in integer USD cents and a signed `quoteToken` \
            that expires after 15 minutes. Pass the token, one date and one window id to svc.pickup.request. \
            An unpaid order answers `order_not_paid`; a shipment with a pickup answers \
            `pickup_already_requested`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.pickup.request",
        title: "Request a paid door pickup",
        method: "POST",
        path: "/orders/{reference}/pickup",
        description: "Requests a door pickup of a paid order's samples on one of the dates and windows that \
            svc.pickup.options offered, with its `quoteToken` and `confirm: true`. The price must fit the key's \
            spending envelope. The answer's `payUrl` is a single-use, amount-locked hosted payment page for the \
            pickup, valid until `payExpiresAt`: the account owner pays there, then the pickup is booked with the \
            carrier and a confirmation number appears on the shipment. Retry with the same `idempotencyKey`; expired or edited tokens, \
            past or unoffered dates and a second pickup are refused.",
        guard: "`confirm: true`, signed unexpired `quoteToken`, paid order, spend limit, one pickup per shipment, `idempotencyKey`",
        annotations: GUARDED_WRITE,
    },
    Tool {
        name: "svc.payment.card.checkout",
        title: "Prepare an order's payment (card checkout link)",
        method: "POST",
        path: "/payments/prepare",
        description: "Returns how to pay an order now, named by `orderReference` (order UUID, order \
            number ORD-… or invoice number INV-…). For a card_checkout order it mints the single-use, \
            amount-locked hosted checkout URL (`checkout.hostedUrl`) for the account owner to pay at: \
            the current link while it can still be paid, or a fresh one after it expired (which commits \
            the order's spend to the key's envelope again: 403 spend_limit_exceeded when it no longer \
            fits). A paid order answers `state: paid`; a bank order its remittance details. Never \
            charges a card. Needs `idempotencyKey`; retry with the same key to get the same answer.",
        guard: "`idempotencyKey`, spend limit for a fresh link",
        annotations: GUARDED_WRITE,
    },
    Tool {
        name: "svc.payment.stablecoin.request",
        title: "Read an order's stablecoin payment request",
        method: "GET",
        path: "/payments/stablecoin/{reference}",
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
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.payment.stablecoin.submit",
        title: "Submit a stablecoin transaction hash",
        method: "POST",
        path: "/payments/stablecoin/submit",
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
        guard: "`idempotencyKey`; read-only chain verification (never signs or broadcasts)",
        annotations: GUARDED_WRITE,
    },
    Tool {
        name: "svc.spend.envelope.get",
        title: "Read the key's spend envelope",
        method: "GET",
        path: "/spend-envelope",
        description: "Reads the calling API key's spending envelope: its per-order, daily and monthly \
            caps (UTC calendar day and month), what it committed today and this month, and the \
            remaining amounts. Check it before placing orders that could exceed a cap. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.webhook.list",
        title: "List webhook endpoints",
        method: "GET",
        path: "/webhooks",
        description: "Lists the customer's webhook endpoints as safe metadata (URL, subscribed events, \
            status); signing secrets are never listed. Page with `limit` and `cursor`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.webhook.create",
        title: "Register a webhook endpoint",
        method: "POST",
        path: "/webhooks",
        description: "Registers a public HTTPS endpoint that receives signed lifecycle events. `events` \
            selects the event types (default [\"coa.published\"]); the key needs the read scope of every \
            selected event. The answer carries the plaintext `signingSecret` once: store it. Requires \
            `idempotencyKey`; replaying the identical call with the same key returns the same secret.",
        guard: "read scope of every selected event, public HTTPS URL, `idempotencyKey`",
        annotations: Annotations {
            open_world_hint: true,
            ..GUARDED_WRITE
        },
    },
    Tool {
        name: "svc.webhook.delete",
        title: "Delete a webhook endpoint",
        method: "DELETE",
        path: "/webhooks/{endpointId}",
        description: "Deletes a webhook endpoint; its pending deliveries are abandoned. Requires \
            `idempotencyKey`. Irreversible.",
        guard: "`idempotencyKey`",
        annotations: Annotations {
            destructive_hint: true,
            ..GUARDED_WRITE
        },
    },
    Tool {
        name: "svc.webhook.secret.rotate",
        title: "Rotate a webhook signing secret",
        method: "POST",
        path: "/webhooks/{endpointId}/rotate-secret",
        description: "Issues a new signing secret for an endpoint; the previous one keeps signing beside it \
            until `previousSecretExpiresAt`. The answer carries the new plaintext `signingSecret` once. \
            Requires `idempotencyKey`.",
        guard: "`idempotencyKey`",
        annotations: Annotations {
            destructive_hint: true,
            ..GUARDED_WRITE
        },
    },
    Tool {
        name: "svc.webhook.test",
        title: "Send a test webhook delivery",
        method: "POST",
        path: "/webhooks/{endpointId}/test",
        description: "Queues one signed `webhook.test` delivery to the endpoint, attempts it at once and \
            reports the outcome of that first attempt. Requires `idempotencyKey`.",
        guard: "`idempotencyKey`",
        annotations: Annotations {
            open_world_hint: true,
            ..GUARDED_WRITE
        },
    },
    Tool {
        name: "svc.webhook.delivery.list",
        title: "List webhook deliveries",
        method: "GET",
        path: "/webhooks/{endpointId}/deliveries",
        description: "Lists an endpoint's deliveries with every attempt (status code, latency, error), \
            newest first; filter by `status` (pending, succeeded, dead, abandoned). Page with `limit` and \
            `cursor`. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.order.sample.list",
        title: "List an order's samples",
        method: "GET",
        path: "/orders/{reference}/samples",
        description: "Reads the sample items the lab logged for one order: accession numbers (ACC-…), units \
            and containers received, condition on arrival, the tests of each line, the order's status history, \
            and (with results:read) the ids of each sample's published COAs. Empty until the samples arrive. \
            `reference` is the order UUID, ORD-…, INV-… or an accession number. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.order.custody.get",
        title: "Read an order's chain of custody",
        method: "GET",
        path: "/orders/{reference}/custody",
        description: "Reads the chain-of-custody timeline of one order (received, stored, testing started; \
            who, where, when) with `chainIntact` (every entry's SHA-256 links to the one before) and the \
            retention deadline of the retained samples. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.order.eta.get",
        title: "Read an order's progress and ETA",
        method: "GET",
        path: "/orders/{reference}/eta",
        description: "Reads the stage-by-stage progress of one order (ordered, payment, samples received, \
            testing, reporting, completed) and a non-binding estimated completion (start of testing plus the \
            turnaround's business days; none before the samples arrive). Payment is shown apart: it gates \
            only the release of COAs. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.result.list",
        title: "List published COAs",
        method: "GET",
        path: "/results",
        description: "Lists the customer's QA-published certificates of analysis (published, retracted or \
            superseded), newest publication first, with structured results; filter by `orderId`, `compound`, \
            `lotNumber`, `publishedFrom`/`publishedTo`. Unpublished or held COAs never appear. \
            `documentUrl` is a signed link valid for one hour: do not store it. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.result.get",
        title: "Read one published COA",
        method: "GET",
        path: "/results/{reference}",
        description: "Reads one published COA with its structured results, signature and a signed PDF link. \
            `reference` is the COA id or an accession number (its newest published COA). A retracted COA stays \
            readable, marked `retracted` with the reason; an amended one names its successor in `supersededBy`. \
            Another customer's or an unpublished COA is not_found. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.result.analyte.list",
        title: "List a COA's analyte rows",
        method: "GET",
        path: "/results/{reference}/analytes",
        description: "Reads the normalized per-analyte rows of one published COA (value as a decimal string \
            or a qualifier such as <LOQ/ND, unit, LOQ/LOD, specification, pass/fail, method, instrument). \
            `reference` is the COA id or an accession number. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.coa.verify",
        title: "Verify a COA",
        method: "GET",
        path: "/verify",
        description: "Public authenticity check of a COA by `accession` (or the COA id printed on it): \
            authentic, unverifiable (its signature does not verify with the key its signingKeyId names), \
            retracted, superseded (with the successor) or unknown. Compound, lot number and the \
            signed content are revealed only with the verification `code` printed on the COA. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.coa.verify.post",
        title: "Verify a COA (body form)",
        method: "POST",
        path: "/verify",
        description: "The same check as svc.coa.verify with `accession` and optional `code` in the body. \
            Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.coa.verify.batch",
        title: "Verify many COAs",
        method: "GET",
        path: "/verify/batch",
        description: "Public authenticity check of 1 to 100 accession numbers given comma-separated in \
            `accessions`; one verdict per accession, in request order, without customer details. Read-only.",
        guard: "",
        annotations: READ,
    },
    Tool {
        name: "svc.coa.verify.batch.post",
        title: "Verify many COAs (body form)",
        method: "POST",
        path: "/verify/batch",
        description: "The same check as svc.coa.verify.batch with `accessions` (1 to 100) as a JSON array in \
            the body. Read-only.",
        guard: "",
        annotations: READ,
    },
];

/// The tool table of `docs/mcp.md`: name, scope, REST twin and guard of every tool.
pub fn markdown_table() -> String {
    let mut table = String::from("| Tool | Scope | REST twin | Guard |\n|---|---|---|---|\n");
    for tool in TOOLS {
        let scopes: Vec<String> = tool
            .required_scopes()
            .iter()
            .map(|scope| format!("`{scope}`"))
            .collect();
        let guard = if tool.guard.is_empty() {
            "read-only"
        } else {
            tool.guard
        };
        let scopes = if scopes.is_empty() {
            "any key (public twin)".to_owned()
        } else {
            scopes.join(" and ")
        };
        table.push_str(&format!(
            "| `{}` | {} | `{} {}` | {} |\n",
            tool.name, scopes, tool.method, tool.path, guard
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routed_rest_operation_has_exactly_one_tool() {
        let (_, document) = crate::http::agent_routes();
        let mut routed = 0;
        for (path, item) in document.paths.paths.iter() {
            let methods = [
                ("GET", item.get.is_some()),
                ("POST", item.post.is_some()),
                ("PUT", item.put.is_some()),
                ("PATCH", item.patch.is_some()),
                ("DELETE", item.delete.is_some()),
            ];
            for (method, present) in methods {
                if !present {
                    continue;
                }
                routed += 1;
                let twins = TOOLS
                    .iter()
                    .filter(|tool| tool.method == method && tool.path == path)
                    .count();
                assert_eq!(
                    twins, 1,
                    "{method} {path} needs exactly one MCP tool in gateway/src/mcp/tools.rs (docs/mcp.md)"
                );
            }
        }
        assert_eq!(routed, TOOLS.len(), "every tool has a routed REST twin");
    }

    #[test]
    fn docs_mcp_md_lists_every_tool_as_the_table_says() {
        let document = include_str!("../../../docs/mcp.md");
        assert!(
            document.contains(&markdown_table()),
            "docs/mcp.md is out of date; paste the table from gateway::mcp::tools::markdown_table():\n{}",
            markdown_table()
        );
    }

    #[test]
    fn names_are_unique_and_in_the_spec_style_and_scopes_come_from_the_twin() {
        for (index, tool) in TOOLS.iter().enumerate() {
            assert!(
                TOOLS[..index].iter().all(|other| other.name != tool.name),
                "{}",
                tool.name
            );
            assert!(tool.name.starts_with("svc."), "{}", tool.name);
            assert!(
                tool.name.len() <= 64
                    && tool
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_'),
                "{}",
                tool.name
            );
            // Only the public verification's tools need no scope (any key may call them, as
            // anyone may call their twins); its POST forms read like its GET forms.
            let public = tool.path.starts_with("/verify");
            assert_eq!(tool.required_scopes().is_empty(), public, "{}", tool.name);
            assert_eq!(
                tool.annotations.read_only_hint,
                tool.method == "GET" || public,
                "{}",
                tool.name
            );
        }
        let create = find("svc.order.create").unwrap();
        assert_eq!(create.required_scopes(), &["orders:write"]);
        assert!(create.needs_idempotency_key());
        assert!(!find("svc.quote.create").unwrap().needs_idempotency_key());
        assert!(!create.allowed(&["orders:read".into()]));
        assert!(create.allowed(&["orders:write".into()]));
    }
}
