//! HTML of the hosted checkout page: the order, its lines, the locked total and, by the
//! session's state, the card form (sandbox), the saved cards, the authentication step, the PSP
//! link, or the paid / expired notice. Every value is escaped; no script is used.

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

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
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
.success{background:#e6f4ea}.info{background:#e8f0fe}.error{background:#fce8e6}\
label{display:block;margin:.5rem 0}input[type=text]{width:100%;padding:.4rem}\
button{padding:.6rem 1.2rem;margin-top:.8rem}fieldset{margin-top:1rem}";

fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><title>{}</title><style>{STYLE}</style></head>\
         <body>{body}</body></html>",
        escape(title)
    )
}

/// A page with only a message (unknown link, unavailable).
pub fn message_page(message: &str) -> String {
    document(
        "Checkout",
        &format!(
            "<main data-status=\"none\"><h1>Checkout</h1><p id=\"message\">{}</p></main>",
            escape(message)
        ),
    )
}

/// The checkout page of `page`, with the notice of the last action.
pub fn render(page: &pb::CheckoutPage, banner: Option<Banner>) -> String {
    let Some(session) = page.session.as_ref() else {
        return message_page("This checkout link does not exist.");
    };
    let path = format!("/pay/{}", escape(&session.id));
    let pickup = is_pickup(page);
    let mut body = format!(
        "<main data-status=\"{}\" data-outcome=\"{}\" data-purpose=\"{}\">{}",
        escape(&session.status),
        escape(banner.as_ref().map_or("", |banner| banner.outcome.as_str())),
        if pickup { "pickup" } else { "invoice" },
        heading(page),
    );
    if let Some(banner) = &banner {
        body.push_str(&format!(
            "<div class=\"banner {}\" id=\"banner\" role=\"status\">{}</div>",
            banner.kind,
            escape(&banner.message)
        ));
    }
    body.push_str("<table><thead><tr><th>Item</th><th class=\"amount\">Amount</th></tr></thead><tbody>");
    for line in &page.lines {
        let quantity = if line.quantity > 1 {
            format!(" × {}", line.quantity)
        } else {
            String::new()
        };
        body.push_str(&format!(
            "<tr><td>{}{}</td><td class=\"amount\">{}</td></tr>",
            escape(&line.description),
            quantity,
            dollars(line.amount_cents)
        ));
    }
    body.push_str(&format!(
        "</tbody><tfoot><tr><th>Total ({})</th><th class=\"amount\" id=\"total\">{}</th></tr></tfoot></table>",
        escape(&session.currency),
        dollars(session.amount_cents)
    ));
    match session.status.as_str() {
        "completed" | "expired" if pickup => body.push_str(pickup_state(&session.status)),
        "completed" => body.push_str("<p id=\"state\">This order is paid. Thank you.</p>"),
        "expired" => body.push_str(
            "<p id=\"state\">This checkout link has expired and can no longer be paid. \
             Ask for a fresh link (POST /payments/prepare).</p>",
        ),
        _ if page.awaiting_confirmation => body.push_str(&format!(
            "<p id=\"state\">Your bank asks you to confirm this payment.</p>\
             <form method=\"post\" action=\"{path}/confirm\">\
             <button id=\"confirm-button\" name=\"action\" value=\"approve\">Confirm payment</button> \
             <button id=\"cancel-button\" name=\"action\" value=\"cancel\">Cancel</button></form>"
        )),
        _ if session.processor == "stripe" => match &session.processor_url {
            Some(url) => body.push_str(&format!(
                "<p id=\"state\">You will pay on our payment provider's secure page.</p>\
                 <p><a id=\"processor-link\" href=\"{}\" rel=\"noreferrer\">Continue to payment</a></p>",
                escape(url)
            )),
            None => {
                body.push_str("<p id=\"state\">The payment provider is unavailable; try again shortly.</p>")
            }
        },
        _ => body.push_str(&card_forms(&path, page)),
    }
    if session.status == "open" && !page.awaiting_confirmation {
        body.push_str(&stablecoin_section(&path, page));
    }
    if let Some(expires) = session
        .expires_at
        .as_ref()
        .and_then(platform::time::from_timestamp)
    {
        body.push_str(&format!(
            "<p><small>Link valid until {} UTC.</small></p>",
            expires.format("%Y-%m-%d %H:%M")
        ));
    }
    body.push_str("</main>");
    let title = if pickup {
        format!("Pay the door pickup of order {}", page.order_number)
    } else {
        format!("Pay order {}", page.order_number)
    };
    document(&title, &body)
}

/// True when the page pays a door pickup (a session bound to the pickup, not to an invoice).
fn is_pickup(page: &pb::CheckoutPage) -> bool {
    page.purpose == "pickup"
}

/// The page's heading: the order and its invoice, or the order whose door pickup is paid.
fn heading(page: &pb::CheckoutPage) -> String {
    if is_pickup(page) {
        format!(
            "<h1>Pay the door pickup of order {}</h1><p>A separate charge; the order's invoice is not affected.</p>",
            escape(&page.order_number)
        )
    } else {
        format!(
            "<h1>Pay order {}</h1><p>Invoice {}</p>",
            escape(&page.order_number),
            escape(&page.invoice_number)
        )
    }
}

/// What a paid or expired door-pickup payment says.
fn pickup_state(status: &str) -> &'static str {
    if status == "completed" {
        "<p id=\"state\">This door pickup is paid. Thank you. The carrier booking and its \
         confirmation number follow (GET /shipments/{reference}, webhook shipment.updated).</p>"
    } else {
        "<p id=\"state\">This pickup payment link has expired and can no longer be paid. \
         Request a new pickup (GET then POST /orders/{reference}/pickup).</p>"
    }
}

fn card_forms(path: &str, page: &pb::CheckoutPage) -> String {
    let mut forms = String::new();
    if let Some(error) = &page.last_error {
        forms.push_str(&format!(
            "<p class=\"banner error\" id=\"last-error\">{}</p>",
            escape(error)
        ));
    }
    if !page.saved_cards.is_empty() {
        forms.push_str("<fieldset><legend>Saved cards</legend>");
        for card in &page.saved_cards {
            forms.push_str(&format!(
                "<form method=\"post\" action=\"{path}\"><input type=\"hidden\" name=\"saved_card\" value=\"{}\">\
                 <button class=\"saved-card\">Pay with {} ending {} ({:02}/{})</button></form>",
                escape(&card.token),
                escape(&card.brand),
                escape(&card.last4),
                card.exp_month,
                card.exp_year
            ));
        }
        forms.push_str("</fieldset>");
    }
    forms.push_str(&format!(
        "<form method=\"post\" action=\"{path}\" autocomplete=\"off\"><fieldset><legend>Card</legend>\
         <label>Card number <input type=\"text\" id=\"card-number\" name=\"card_number\" inputmode=\"numeric\" \
         autocomplete=\"cc-number\" required></label>\
         <label>Expiry month <input type=\"text\" id=\"exp-month\" name=\"exp_month\" inputmode=\"numeric\" \
         placeholder=\"MM\" required></label>\
         <label>Expiry year <input type=\"text\" id=\"exp-year\" name=\"exp_year\" inputmode=\"numeric\" \
         placeholder=\"YYYY\" required></label>\
         <label>Security code <input type=\"text\" id=\"cvc\" name=\"cvc\" inputmode=\"numeric\" required></label>\
         <label><input type=\"checkbox\" id=\"save-card\" name=\"save_card\" value=\"on\"> Save this card for later</label>\
         <button id=\"pay-button\">Pay {}</button></fieldset></form>\
         <p><small>Sandbox: use 4242 4242 4242 4242 with any future expiry and any CVC.</small></p>",
        page.session.as_ref().map_or_else(String::new, |session| dollars(session.amount_cents))
    ));
    forms
}

/// The option's section of an open checkout page (empty when the rail is not offered).
pub fn stablecoin_section(path: &str, page: &pb::CheckoutPage) -> String {
    if !page.stablecoin_offered {
        return String::new();
    }
    let action = format!("{path}/stablecoin");
    let mut html = String::from("<fieldset id=\"stablecoin\"><legend>Settled stablecoin</legend>");
    match &page.stablecoin {
        None => html.push_str(&format!(
            "<p>Pay with a stablecoin sent from your own self-custodied wallet (not an exchange \
             withdrawal). We never ask for a key: you send the transfer yourself.</p>\
             <form method=\"post\" action=\"{action}\" autocomplete=\"off\">\
             <label>Your wallet address (checksummed) <input type=\"text\" id=\"payer-address\" \
             name=\"payer_address\" placeholder=\"0x…\" required></label>\
             <button id=\"stablecoin-request-button\">Pay with stablecoin</button></form>"
        )),
        Some(request) => {
            let expires = request
                .expires_at
                .as_ref()
                .and_then(platform::time::from_timestamp)
                .map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_default();
            html.push_str(&format!(
                "<dl><dt>Status</dt><dd id=\"stablecoin-status\">{}</dd>\
                 <dt>Token contract</dt><dd id=\"stablecoin-token\">{}</dd>\
                 <dt>Send to</dt><dd id=\"stablecoin-target\">{}</dd>\
                 <dt>Exact amount</dt><dd id=\"stablecoin-amount\">{}</dd>\
                 <dt>From your wallet</dt><dd id=\"stablecoin-payer\">{}</dd>\
                 <dt>Pay before</dt><dd id=\"stablecoin-expires\">{}</dd></dl>\
                 <p id=\"stablecoin-notice\"><strong>{}</strong></p>",
                escape(&request.status),
                escape(&request.token_address),
                escape(&request.target_address),
                escape(&request.amount_decimal),
                escape(&request.payer_address),
                escape(&expires),
                escape(&request.notice),
            ));
            if request.status == "awaiting_transfer" {
                html.push_str(&format!(
                    "<form method=\"post\" action=\"{action}\" autocomplete=\"off\">\
                     <label>Transaction hash <input type=\"text\" id=\"transaction-hash\" \
                     name=\"transaction_hash\" placeholder=\"0x…\" required></label>\
                     <button id=\"stablecoin-submit-button\">I sent it: verify</button></form>"
                ));
            }
        }
    }
    html.push_str("</fieldset>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_money_is_formatted_from_cents() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
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
        let open = render(&page, None);
        assert!(open.contains("id=\"card-number\""));
        assert!(open.contains("ORD-&lt;1&gt;"));
        assert!(open.contains("$12.50"));
        page.session.as_mut().unwrap().status = "completed".into();
        let paid = render(&page, Some(Banner::success("paid", "Payment received.")));
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
        let open = render(&page, None);
        assert!(open.contains("data-purpose=\"pickup\""));
        assert!(open.contains("Pay the door pickup of order ORD-7"));
        assert!(!open.contains("Invoice"));
        assert!(open.contains("id=\"card-number\""));
        assert!(open.contains("$15.00"));
        page.session.as_mut().unwrap().status = "completed".into();
        let paid = render(&page, None);
        assert!(paid.contains("This door pickup is paid"));
        assert!(!paid.contains("id=\"card-number\""));
        page.session.as_mut().unwrap().status = "expired".into();
        let expired = render(&page, None);
        assert!(expired.contains("Request a new pickup"));
        assert!(!expired.contains("id=\"card-number\""));
    }
}
