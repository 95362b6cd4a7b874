//! The hosted pay page's "settled stablecoin" option (SPEC: the hosted URL is where the account
//! owner pays by card, saved card, or settled stablecoin), kept apart from the card forms.
//!
//! The payer names the self-custodied wallet they will send from; the page then shows the
//! payment request: token, target (the lab's treasury), the exact six-decimal amount with its
//! no-rounding notice, the expiry and the state, and a form for the transaction hash once they
//! broadcast the transfer from their own wallet. The page never asks for a key or a seed phrase
//! and nothing is signed here: the hash is verified read-only by payments-svc
//! (`CheckoutStablecoin`). Shown only when the deployment offers the rail.

use super::AppState;
use super::pay::{error_page, html, parse_form};
use super::pay_html::{self, Banner};
use crate::operations::checkout as operations;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use http::StatusCode;
use platform::error::ErrorCode;
use proto::payments as pb;
use serde::Deserialize;

/// Route of the option's form.
pub const PAY_STABLECOIN: &str = "/pay/{session_id}/stablecoin";

/// The option's form: the payer's wallet address, or the transaction hash.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StablecoinForm {
    payer_address: Option<String>,
    transaction_hash: Option<String>,
}

fn text(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// `POST /pay/{sessionId}/stablecoin`.
pub async fn submit(State(state): State<AppState>, Path(session_id): Path<String>, body: Bytes) -> Response {
    let form: StablecoinForm = match parse_form(&body) {
        Ok(form) => form,
        Err(error) => return error_page(&error),
    };
    let request = pb::CheckoutStablecoinRequest {
        session_id: session_id.clone(),
        expected_payer_address: text(form.payer_address),
        transaction_hash: text(form.transaction_hash),
    };
    let submitted_hash = request.transaction_hash.is_some();
    match operations::checkout_stablecoin(&state.peers, &state.tokens, request).await {
        Ok(page) => {
            let banner = match page.stablecoin.as_ref().map(|request| request.status.as_str()) {
                Some("confirming") if submitted_hash => Banner::info(
                    "confirming",
                    "Transfer found. It is being confirmed; this page shows it paid once the block is finalized.",
                ),
                Some("confirmed") => Banner::success("paid", "Payment received. Thank you."),
                _ => Banner::info(
                    "stablecoin_requested",
                    "Send exactly the amount below from your wallet, then enter the transaction hash.",
                ),
            };
            html(StatusCode::OK, pay_html::render(&page, Some(banner), &state.lab))
        }
        Err(error) if error.code.http_status() < 500 && error.code != ErrorCode::NotFound => {
            match operations::checkout_page(&state.peers, &state.tokens, session_id).await {
                Ok(page) => html(
                    StatusCode::from_u16(error.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST),
                    pay_html::render(
                        &page,
                        Some(Banner::error(error.code.as_str(), &error.message)),
                        &state.lab,
                    ),
                ),
                Err(error) => error_page(&error),
            }
        }
        Err(error) => error_page(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_asks_for_an_address_then_shows_the_exact_amount_and_never_a_key_field() {
        let mut page = pb::CheckoutPage {
            stablecoin_offered: true,
            ..Default::default()
        };
        let first = pay_html::stablecoin_section("/pay/cs_x", &page).into_string();
        assert!(first.contains("id=\"payer-address\""));
        assert!(first.contains("action=\"/pay/cs_x/stablecoin\""));
        page.stablecoin = Some(pb::StablecoinPayment {
            status: "awaiting_transfer".into(),
            token_address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48".into(),
            target_address: "0x<t>".into(),
            amount_decimal: "123.450042".into(),
            notice: "Send exactly this amount.".into(),
            ..Default::default()
        });
        let second = pay_html::stablecoin_section("/pay/cs_x", &page).into_string();
        assert!(second.contains("123.450042"));
        assert!(second.contains("0x&lt;t&gt;"));
        assert!(second.contains("id=\"transaction-hash\""));
        for page in [&first, &second] {
            let lower = page.to_lowercase();
            assert!(!lower.contains("private") && !lower.contains("seed") && !lower.contains("mnemonic"));
        }
        page.stablecoin_offered = false;
        assert!(
            pay_html::stablecoin_section("/pay/cs_x", &page)
                .into_string()
                .is_empty()
        );
    }
}
