//! HTML of the hosted checkout page: the order, its lines, the locked total and, by the
//! session's state, the card form (sandbox), the saved cards, the authentication step, the PSP
//! link, or the paid / expired notice. The markup is a `maud` template: every value spliced in
//! is escaped by the template, never by hand; no script is used.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use proto::payments as pb;

/// A notice above the page: what the last action came to.
pub struct Banner {
    kind: &'static str,
    outcome: String,
    message: String,
}

impl Banner {
    pub fn success(outcome: &str, message: &str) -> Self {
        Self::new("success", outcome, message)
    }

    pub fn info(outcome: &str, message: &str) -> Self {
        Self::new("info", outcome, message)
    }

    pub fn error(outcome: &str, message: &str) -> Self {
        Self::new("error", outcome, message)
    }

    fn new(kind: &'static str, outcome: &str, message: &str) -> Self {
        Self {
            kind,
            outcome: outcome.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// Formats cents as `$1,234.56`.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (index, digit) in whole.chars().enumerate() {
        if index > 0 && (whole.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}${grouped}.{:02}", cents % 100)
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{width:100%;border-collapse:collapse}td,th{padding:.4rem;border-bottom:1px solid #ddd;text-align:left}\
td.amount,th.amount{text-align:right}.banner{padding:.8rem;border-radius:.3rem;margin:1rem 0}\
.test-mode{padding:.6rem;border:2px dashed #b06000;background:#fef7e0}.success{background:#e6f4ea}.info{background:#e8f0fe}.error{background:#fce8e6}\
label{display:block;margin:.5rem 0}input[type=text]{width:100%;padding:.4rem}\
button{padding:.6rem 1.2rem;margin-top:.8rem}fieldset{margin-top:1rem}";

fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) }
                // A constant of ours, and raw text in HTML: not escaped.
                style { (PreEscaped(STYLE)) }
            }
            body { (body) }
        }
    }
    .into_string()
}

/// A page with only a message (unknown link, unavailable).
pub fn message_page(message: &str) -> String {
    document(
        "Checkout",
        html! {
            main data-status="none" {
                h1 { "Checkout" }
                p id="message" { (message) }
            }
        },
    )
}

/// The checkout page of `page`, with the notice of the last action, signed by `lab`.
pub fn render(page: &pb::CheckoutPage, banner: Option<Banner>, lab: &platform::lab::LabIdentity) -> String {
    let Some(session) = page.session.as_ref() else {
        return message_page("This checkout link does not exist.");
    };
    let path = format!("/pay/{}", session.id);
    let pickup = is_pickup(page);
    let expires = session
        .expires_at
        .as_ref()
        .and_then(platform::time::from_timestamp);
    let body = html! {
        main data-status=(session.status)
            data-outcome=(banner.as_ref().map_or("", |banner| banner.outcome.as_str()))
            data-purpose=(if pickup { "pickup" } else { "invoice" }) {
            (heading(page))
            @if session.processor == "sandbox" {
                // The sandbox processor: a sandbox customer's checkout in every mode, and every
                // checkout in development mode (docs/sandbox.md).
                p class="test-mode" id="test-mode" role="note" {
                    strong { "Test mode." }
                    " This checkout runs on the sandbox processor: pay with a test card such as                      4242 4242 4242 4242. No card is charged and no money moves."
                }
            }
            @if let Some(banner) = &banner {
                div class={ "banner " (banner.kind) } id="banner" role="status" { (banner.message) }
            }
            table {
                thead { tr { th { "Item" } th class="amount" { "Amount" } } }
                tbody {
                    @for line in &page.lines {
                        tr {
                            td {
                                (line.description)
                                @if line.quantity > 1 { " × " (line.quantity) }
                            }
                            td class="amount" { (dollars(line.amount_cents)) }
                        }
                    }
                }
                tfoot {
                    tr {
                        th { "Total (" (session.currency) ")" }
                        th class="amount" id="total" { (dollars(session.amount_cents)) }
                    }
                }
            }
            (state(&path, page, session, pickup))
            @if session.status == "open" && !page.awaiting_confirmation {
                (stablecoin_section(&path, page))
            }
            @if let Some(expires) = expires {
                p { small { "Link valid until " (expires.format("%Y-%m-%d %H:%M")) " UTC." } }
            }
            footer id="lab" {
                small {
                    (lab.name) br;
                    (lab.address_line()) br;
                    (lab.contact())
                }
            }
        }
    };
    let title = if pickup {
        format!("Pay the door pickup of order {}", page.order_number)
    } else {
        format!("Pay order {}", page.order_number)
    };
    document(&title, body)
}

/// True when the page pays a door pickup (a session bound to the pickup, not to an invoice).
fn is_pickup(page: &pb::CheckoutPage) -> bool {
    page.purpose == "pickup"
}

/// The page's heading: the order and its invoice, or the order whose door pickup is paid.
fn heading(page: &pb::CheckoutPage) -> Markup {
    html! {
        @if is_pickup(page) {
            h1 { "Pay the door pickup of order " (page.order_number) }
            p { "A separate charge; the order's invoice is not affected." }
        } @else {
            h1 { "Pay order " (page.order_number) }
            p { "Invoice " (page.invoice_number) }
        }
    }
}

/// What the session's state lets the payer do: the paid or expired notice, the authentication
/// step, the PSP link, or the card forms.
fn state(path: &str, page: &pb::CheckoutPage, session: &pb::CheckoutSession, pickup: bool) -> Markup {
    match session.status.as_str() {
        "completed" | "expired" if pickup => pickup_state(&session.status),
        "completed" => html! { p id="state" { "This order is paid. Thank you." } },
        "expired" => html! {
            p id="state" {
                "This checkout link has expired and can no longer be paid. \
                 Ask for a fresh link (POST /payments/prepare)."
            }
        },
        _ if page.awaiting_confirmation => html! {
            p id="state" { "Your bank asks you to confirm this payment." }
            form method="post" action={ (path) "/confirm" } {
                button id="confirm-button" name="action" value="approve" { "Confirm payment" }
                " "
                button id="cancel-button" name="action" value="cancel" { "Cancel" }
            }
        },
        _ if session.processor == "stripe" => match &session.processor_url {
            Some(url) => html! {
                p id="state" { "You will pay on our payment provider's secure page." }
                p { a id="processor-link" href=(url) rel="noreferrer" { "Continue to payment" } }
            },
            None => html! {
                p id="state" { "The payment provider is unavailable; try again shortly." }
            },
        },
        _ => card_forms(path, page),
    }
}

/// What a paid or expired door-pickup payment says.
fn pickup_state(status: &str) -> Markup {
    html! {
        p id="state" {
            @if status == "completed" {
                "This door pickup is paid. Thank you. The carrier booking and its \
                 confirmation number follow (GET /shipments/{reference}, webhook shipment.updated)."
            } @else {
                "This pickup payment link has expired and can no longer be paid. \
                 Request a new pickup (GET then POST /orders/{reference}/pickup)."
            }
        }
    }
}

fn card_forms(path: &str, page: &pb::CheckoutPage) -> Markup {
    let total = page
        .session
        .as_ref()
        .map_or_else(String::new, |session| dollars(session.amount_cents));
    html! {
        @if let Some(error) = &page.last_error {
            p class="banner error" id="last-error" { (error) }
        }
        @if !page.saved_cards.is_empty() {
            fieldset {
                legend { "Saved cards" }
                @for card in &page.saved_cards {
                    form method="post" action=(path) {
                        input type="hidden" name="saved_card" value=(card.token);
                        button class="saved-card" {
                            "Pay with " (card.brand) " ending " (card.last4)
                            " (" (format!("{:02}", card.exp_month)) "/" (card.exp_year) ")"
                        }
                    }
                }
            }
        }
        form method="post" action=(path) autocomplete="off" {
            fieldset {
                legend { "Card" }
                label {
                    "Card number "
                    input type="text" id="card-number" name="card_number" inputmode="numeric"
                        autocomplete="cc-number" required;
                }
                label {
                    "Expiry month "
                    input type="text" id="exp-month" name="exp_month" inputmode="numeric"
                        placeholder="MM" required;
                }
                label {
                    "Expiry year "
                    input type="text" id="exp-year" name="exp_year" inputmode="numeric"
                        placeholder="YYYY" required;
                }
                label {
                    "Security code "
                    input type="text" id="cvc" name="cvc" inputmode="numeric" required;
                }
                label {
                    input type="checkbox" id="save-card" name="save_card" value="on";
                    " Save this card for later"
                }
                button id="pay-button" { "Pay " (total) }
            }
        }
        p { small { "Sandbox: use 4242 4242 4242 4242 with any future expiry and any CVC." } }
    }
}

/// The option's section of an open checkout page (empty when the rail is not offered).
pub fn stablecoin_section(path: &str, page: &pb::CheckoutPage) -> Markup {
    if !page.stablecoin_offered {
        return html! {};
    }
    let action = format!("{path}/stablecoin");
    html! {
        fieldset id="stablecoin" {
            legend { "Settled stablecoin" }
            @match &page.stablecoin {
                None => {
                    p {
                        "Pay with a stablecoin sent from your own self-custodied wallet (not an exchange \
                         withdrawal). We never ask for a key: you send the transfer yourself."
                    }
                    form method="post" action=(action) autocomplete="off" {
                        label {
                            "Your wallet address (checksummed) "
                            input type="text" id="payer-address" name="payer_address" placeholder="0x…" required;
                        }
                        button id="stablecoin-request-button" { "Pay with stablecoin" }
                    }
                }
                Some(request) => {
                    dl {
                        dt { "Status" } dd id="stablecoin-status" { (request.status) }
                        dt { "Token contract" } dd id="stablecoin-token" { (request.token_address) }
                        dt { "Send to" } dd id="stablecoin-target" { (request.target_address) }
                        dt { "Exact amount" } dd id="stablecoin-amount" { (request.amount_decimal) }
                        dt { "From your wallet" } dd id="stablecoin-payer" { (request.payer_address) }
                        dt { "Pay before" }
                        dd id="stablecoin-expires" {
                            @if let Some(at) = request.expires_at.as_ref().and_then(platform::time::from_timestamp) {
                                (at.format("%Y-%m-%d %H:%M UTC"))
                            }
                        }
                    }
                    p id="stablecoin-notice" { strong { (request.notice) } }
                    @if request.status == "awaiting_transfer" {
                        form method="post" action=(action) autocomplete="off" {
                            label {
                                "Transaction hash "
                                input type="text" id="transaction-hash" name="transaction_hash"
                                    placeholder="0x…" required;
                            }
                            button id="stablecoin-submit-button" { "I sent it: verify" }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_in_text_and_in_attributes() {
        let page = pb::CheckoutPage {
            session: Some(pb::CheckoutSession {
                id: "cs_\"><script>".into(),
                status: "open".into(),
                processor: "stripe".into(),
                processor_url: Some("https://psp.example/?a=1&b=\"2\"".into()),
                ..Default::default()
            }),
            order_number: "<b>ORD</b> & 'co'".into(),
            ..Default::default()
        };
        let html = render(
            &page,
            Some(Banner::error("x\"y", "<i>no</i>")),
            &platform::lab::LabIdentity::demo(),
        );
        assert!(
            html.contains("Pay order &lt;b&gt;ORD&lt;/b&gt; &amp; 'co'"),
            "{html}"
        );
        assert!(html.contains("href=\"https://psp.example/?a=1&amp;b=&quot;2&quot;\""));
        assert!(html.contains("data-outcome=\"x&quot;y\""));
        assert!(!html.contains("test-mode\""), "a PSP session is no test");
        assert!(html.contains("&lt;i&gt;no&lt;/i&gt;"));
        let mut sandbox = page.clone();
        sandbox.session.as_mut().unwrap().processor = "sandbox".into();
        assert!(
            render(&sandbox, None, &platform::lab::LabIdentity::demo())
                .contains("action=\"/pay/cs_&quot;&gt;&lt;script&gt;\"")
        );
        assert!(!html.contains("<script>") && !html.contains("<i>"));
        assert!(message_page("<b>").contains("<p id=\"message\">&lt;b&gt;</p>"));
    }

    #[test]
    fn money_is_formatted_from_cents() {
        assert_eq!(dollars(0), "$0.00");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(123_456_789), "$1,234,567.89");
        assert_eq!(dollars(100_000), "$1,000.00");
    }

    #[test]
    fn an_open_sandbox_session_shows_the_card_form_and_a_paid_one_does_not() {
        let mut page = pb::CheckoutPage {
            session: Some(pb::CheckoutSession {
                id: "cs_x".into(),
                status: "open".into(),
                amount_cents: 1250,
                currency: "USD".into(),
                processor: "sandbox".into(),
                ..Default::default()
            }),
            order_number: "ORD-<1>".into(),
            lines: vec![pb::InvoiceLine {
                description: "BPC-157: Purity".into(),
                quantity: 1,
                unit_price_cents: 1250,
                amount_cents: 1250,
            }],
            ..Default::default()
        };
        let open = render(&page, None, &platform::lab::LabIdentity::demo());
        assert!(open.contains("id=\"card-number\""));
        assert!(
            open.contains("Meridian Analytical Laboratories, Inc.<br>1200 Assay Park Drive"),
            "the page is signed by the laboratory: {open}"
        );
        assert!(
            open.contains("id=\"test-mode\""),
            "a sandbox session says it is test mode"
        );
        assert!(open.contains("ORD-&lt;1&gt;"));
        assert!(open.contains("$12.50"));
        page.session.as_mut().unwrap().status = "completed".into();
        let paid = render(
            &page,
            Some(Banner::success("paid", "Payment received.")),
            &platform::lab::LabIdentity::demo(),
        );
        assert!(!paid.contains("id=\"card-number\""));
        assert!(paid.contains("data-outcome=\"paid\""));
    }

    #[test]
    fn a_pickup_session_shows_the_pickup_line_and_its_own_paid_and_expired_states() {
        let mut page = pb::CheckoutPage {
            session: Some(pb::CheckoutSession {
                id: "cs_p".into(),
                status: "open".into(),
                amount_cents: 1500,
                currency: "USD".into(),
                processor: "sandbox".into(),
                ..Default::default()
            }),
            order_number: "ORD-7".into(),
            purpose: "pickup".into(),
            lines: vec![pb::InvoiceLine {
                description: "Door pickup of order ORD-7 on 2026-11-25".into(),
                quantity: 1,
                unit_price_cents: 1500,
                amount_cents: 1500,
            }],
            ..Default::default()
        };
        let open = render(&page, None, &platform::lab::LabIdentity::demo());
        assert!(open.contains("data-purpose=\"pickup\""));
        assert!(open.contains("Pay the door pickup of order ORD-7"));
        assert!(!open.contains("Invoice"));
        assert!(open.contains("id=\"card-number\""));
        assert!(open.contains("$15.00"));
        page.session.as_mut().unwrap().status = "completed".into();
        let paid = render(&page, None, &platform::lab::LabIdentity::demo());
        assert!(paid.contains("This door pickup is paid"));
        assert!(!paid.contains("id=\"card-number\""));
        page.session.as_mut().unwrap().status = "expired".into();
        let expired = render(&page, None, &platform::lab::LabIdentity::demo());
        assert!(expired.contains("Request a new pickup"));
        assert!(!expired.contains("id=\"card-number\""));
    }
}
