//! The SSRF guard through the API: refusals at registration, and at connect time for a name
//! whose address changed after registration (DNS rebinding).

use crate::helpers::{Options, code_of, details_of, new_key, spawn_app_with};
use proto::webhooks as pb;
use std::collections::HashMap;
use std::net::IpAddr;
use uuid::Uuid;

fn overrides(entries: &[(&str, &str)]) -> HashMap<String, Vec<IpAddr>> {
    entries
        .iter()
        .map(|(name, address)| ((*name).to_owned(), vec![address.parse().unwrap()]))
        .collect()
}

fn request(url: &str) -> pb::CreateEndpointRequest {
    pb::CreateEndpointRequest {
        url: url.to_owned(),
        events: vec!["order.created".into()],
        description: None,
    }
}

#[tokio::test]
async fn private_loopback_link_local_and_mapped_targets_are_refused_at_registration() {
    let app = spawn_app_with(Options {
        allow_loopback: false,
        dns_overrides: overrides(&[
            ("loopback.test", "127.0.0.1"),
            ("private.test", "10.0.0.1"),
            ("metadata.test", "169.254.169.254"),
            ("v6-loopback.test", "::1"),
            ("mapped.test", "::ffff:127.0.0.1"),
            ("public.test", "93.184.215.14"),
        ]),
        ..Options::default()
    })
    .await;
    let customer = Uuid::new_v4();
    let token = app.token(customer);
    for url in [
        "https://127.0.0.1/hook",
        "https://10.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[fd00::1]/hook",
        "https://100.64.0.1/hook",
        "https://0.0.0.0/hook",
        "https://2130706433/hook",
        "https://loopback.test/hook",
        "https://private.test/hook",
        "https://metadata.test/hook",
        "https://v6-loopback.test/hook",
        "https://mapped.test/hook",
        "http://public.test/hook",
        "https://user:secret@public.test/hook",
        "https://user@public.test/hook",
        "public.test/hook",
    ] {
        let status = app
            .create_with(&token, &new_key(), request(url))
            .await
            .unwrap_err();
        assert_eq!(code_of(&status), "invalid_webhook_url", "{url}");
        assert_eq!(details_of(&status)["field"], "url", "{url}");
    }
    let accepted = app
        .create_with(&token, &new_key(), request("https://public.test/hook"))
        .await
        .unwrap();
    assert_eq!(accepted.into_inner().endpoint.unwrap().status, "active");
    // A loopback receiver is refused too while loopback targets are not allowed.
    let receiver = app.receiver.url("/hooks/x");
    let status = app
        .create_with(&token, &new_key(), request(&receiver))
        .await
        .unwrap_err();
    assert_eq!(code_of(&status), "invalid_webhook_url");
}

#[tokio::test]
async fn allowing_loopback_still_refuses_mapped_and_private_names() {
    let app = spawn_app_with(Options {
        dns_overrides: overrides(&[("mapped.test", "::ffff:127.0.0.1"), ("private.test", "10.0.0.1")]),
        ..Options::default()
    })
    .await;
    let token = app.token(Uuid::new_v4());
    for url in [
        "https://mapped.test/hook",
        "https://private.test/hook",
        "https://10.0.0.1/x",
    ] {
        let status = app
            .create_with(&token, &new_key(), request(url))
            .await
            .unwrap_err();
        assert_eq!(code_of(&status), "invalid_webhook_url", "{url}");
    }
    app.create_with(&token, &new_key(), request(&app.receiver.url("/ok")))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_name_that_rebinds_to_a_private_address_after_registration_is_refused_at_delivery() {
    let registered = Options {
        dns_overrides: overrides(&[("localhost", "127.0.0.1")]),
        ..Options::default()
    };
    let mut app = spawn_app_with(registered.clone()).await;
    let customer = Uuid::new_v4();
    let request = pb::CreateEndpointRequest {
        url: app.receiver.url_for_host("localhost", "/hooks/rebind"),
        events: vec!["order.created".into()],
        description: None,
    };
    let endpoint = app
        .create_with(&app.token(customer), &new_key(), request)
        .await
        .unwrap()
        .into_inner()
        .endpoint
        .unwrap();

    // Same database, but the name now answers with a private address.
    app.start_again(Options {
        dns_overrides: overrides(&[("localhost", "10.0.0.1")]),
        ..registered
    })
    .await;
    let test = pb::SendTestDeliveryRequest {
        endpoint_id: endpoint.id.clone(),
    };
    let delivery = app
        .client
        .clone()
        .send_test_delivery(platform::grpc::outgoing_idempotent(
            test,
            &app.token(customer),
            &new_key(),
        ))
        .await
        .unwrap()
        .into_inner()
        .delivery
        .unwrap();
    let attempt = &delivery.attempts[0];
    assert_eq!(attempt.outcome, "failed");
    assert_eq!(attempt.status_code, None);
    let error = attempt.error.as_deref().unwrap();
    assert!(error.contains("non-public address"), "{error}");
    assert!(
        !error.contains("10.0.0.1"),
        "the resolved address is not echoed: {error}"
    );
    assert!(app.receiver.requests_to("/hooks/rebind").is_empty());
}
