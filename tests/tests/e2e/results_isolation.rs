//! Tenant isolation of the lab side: another customer's COA, analytes, samples, custody and ETA
//! answer exactly like missing ones, and an unpublished COA is never visible to anyone.

use crate::lab_support::{lab_staff, receive_and_start, record_and_submit};
use crate::support::bank_order;
use tests::Sandbox;

#[tokio::test]
async fn another_customers_lab_resources_are_indistinguishable_from_missing_ones() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Owner Lab", "all").await;
    let other = sandbox.customer("Other Lab", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (order_id, invoice, total) = bank_order(&sandbox, &owner, "iso-order-0001").await;
    crate::lab_support::pay(&sandbox, &invoice, &total, "ISO-PAY-1").await;
    let samples = receive_and_start(&sandbox, &staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    let coa = crate::lab_support::approve_and_publish(&sandbox, &staff, &accession).await;
    let coa_id = coa["id"].as_str().unwrap().to_owned();

    let paths = [
        format!("/results/{accession}"),
        format!("/results/{coa_id}"),
        format!("/results/{accession}/analytes"),
        format!("/orders/{order_id}/samples"),
        format!("/orders/{accession}/samples"),
        format!("/orders/{order_id}/custody"),
        format!("/orders/{order_id}/eta"),
        format!("/orders/{accession}"),
    ];
    let missing = [
        "/results/ACC-2026-999999".to_owned(),
        "/results/00000000-0000-7000-8000-000000000000".to_owned(),
        "/results/ACC-2026-999999/analytes".to_owned(),
        "/orders/00000000-0000-7000-8000-000000000000/samples".to_owned(),
        "/orders/ACC-2026-999999/samples".to_owned(),
        "/orders/00000000-0000-7000-8000-000000000000/custody".to_owned(),
        "/orders/00000000-0000-7000-8000-000000000000/eta".to_owned(),
        "/orders/ACC-2026-999999".to_owned(),
    ];
    for (path, missing) in paths.iter().zip(&missing) {
        assert_eq!(
            sandbox.get(&owner.key, path).await.status,
            200,
            "the owner reads {path}"
        );
        let foreign = sandbox.get(&other.key, path).await;
        let absent = sandbox.get(&other.key, missing).await;
        assert_eq!(
            (foreign.status, foreign.error_code()),
            (404, "not_found"),
            "{path}"
        );
        assert_eq!(
            (
                foreign.status,
                &foreign.body["error"]["code"],
                &foreign.body["error"]["message"]
            ),
            (
                absent.status,
                &absent.body["error"]["code"],
                &absent.body["error"]["message"]
            ),
            "{path} answers like {missing}"
        );
    }
    let listed = sandbox.get(&other.key, "/results").await;
    assert_eq!(listed.body["data"], serde_json::json!([]));
    sandbox.stop().await;
}

#[tokio::test]
async fn an_unpublished_coa_is_never_visible_at_any_step() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Patient Owner", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (order_id, invoice, total) = bank_order(&sandbox, &owner, "unpub-order-01").await;
    crate::lab_support::pay(&sandbox, &invoice, &total, "UNPUB-PAY-1").await;
    let samples = receive_and_start(&sandbox, &staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    let invisible = |step: &'static str| {
        let (sandbox, owner, accession) = (&sandbox, &owner, accession.clone());
        async move {
            for path in [
                format!("/results/{accession}"),
                format!("/results/{accession}/analytes"),
            ] {
                assert_eq!(
                    sandbox.get(&owner.key, &path).await.status,
                    404,
                    "{path} after {step}"
                );
            }
            let listed = sandbox.get(&owner.key, "/results").await;
            assert_eq!(listed.body["data"], serde_json::json!([]), "after {step}");
            let verified = sandbox
                .call(
                    reqwest::Method::GET,
                    &format!("/verify?accession={accession}"),
                    None,
                    None,
                    &[],
                )
                .await;
            assert_eq!(
                verified.body["data"]["verification"]["status"], "unknown",
                "after {step}"
            );
        }
    };
    invisible("receipt").await;
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    invisible("submission").await;
    sandbox
        .labctl_as(&staff.qa, &["results", "approve", "--accession", &accession])
        .await
        .unwrap();
    invisible("approval").await;
    let samples_view = sandbox
        .get(&owner.key, &format!("/orders/{order_id}/samples"))
        .await;
    assert_eq!(
        samples_view.body["data"]["orderSamples"]["samples"][0]["coaIds"],
        serde_json::json!([])
    );
    sandbox.stop().await;
}
