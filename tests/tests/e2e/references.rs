//! Every order-level reference (order UUID or number, invoice, tracking or accession number)
//! names the order's payment on `GET /payments/{reference}` and its COA on
//! `GET /results/{reference}` when there is exactly one; several answer 409
//! `ambiguous_reference` listing each one's own reference, and another customer's order the same
//! 404 as a missing one (docs/rest.md).

use crate::lab_support::pay;
use crate::sandbox_simulation::simulate;
use crate::support::{order_body, place_order, quote, wait_for_label};
use platform::testing::wait_for;
use serde_json::Value;
use std::time::Duration;
use tests::{Customer, Sandbox};

/// A bank order of `compounds`: (order JSON as placed, tracking number).
async fn order_of(sandbox: &Sandbox, customer: &Customer, compounds: &[&str], key: &str) -> (Value, String) {
    let quote = quote(sandbox, customer, compounds).await;
    let placed = place_order(sandbox, customer, &order_body(quote["id"].as_str().unwrap()), key).await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    let order = placed.body["data"]["order"].clone();
    let id = order["id"].as_str().unwrap().to_owned();
    wait_for_label(sandbox, customer, &id).await;
    let read = sandbox.get(&customer.key, &format!("/orders/{id}")).await;
    let tracking = read.body["data"]["order"]["shipping"]["trackingNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    (order, tracking)
}

/// Receives, tests, pays and publishes the sandbox order; answers its accession numbers.
async fn published(sandbox: &Sandbox, customer: &Customer, order: &Value, payment: &str) -> Vec<String> {
    let id = order["id"].as_str().unwrap();
    for scenario in ["received", "testing"] {
        let answer = simulate(sandbox, &customer.key, id, scenario).await;
        assert_eq!(answer.status, 200, "{scenario}: {:?}", answer.body);
    }
    let invoice = order["payment"]["invoiceNumber"].as_str().unwrap();
    pay(sandbox, invoice, &order["totalCents"].to_string(), payment).await;
    wait_for("the COAs published", Duration::from_secs(30), || async {
        let answer = simulate(sandbox, &customer.key, id, "coa_published").await;
        (answer.status == 200).then_some(())
    })
    .await;
    let read = wait_for("the order completed", Duration::from_secs(30), || async {
        let read = sandbox.get(&customer.key, &format!("/orders/{id}")).await;
        (read.body["data"]["order"]["status"] == "completed").then_some(read)
    })
    .await;
    read.body["data"]["order"]["accessionNumbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|accession| accession.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_order_reference_names_the_orders_one_payment_and_one_coa_and_several_are_ambiguous() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Reference Rita", "all").await;
    let stranger = sandbox.customer("Reference Stranger", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();

    // One compound: one payment, one COA.
    let (single, tracking) = order_of(&sandbox, &agent, &["BPC-157"], "references-single").await;
    let accessions = published(&sandbox, &agent, &single, "REF-PAY-1").await;
    assert_eq!(accessions.len(), 1);
    let forms = [
        single["id"].as_str().unwrap().to_owned(),
        single["orderNumber"].as_str().unwrap().to_owned(),
        single["payment"]["invoiceNumber"].as_str().unwrap().to_owned(),
        tracking.clone(),
        accessions[0].clone(),
    ];
    let payments = sandbox.get(&agent.key, "/payments").await;
    let payment_id = payments.body["data"][0]["id"].as_str().unwrap().to_owned();
    let by_accession = sandbox
        .get(&agent.key, &format!("/results/{}", accessions[0]))
        .await;
    let coa_id = by_accession.body["data"]["result"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for form in &forms {
        let payment = sandbox.get(&agent.key, &format!("/payments/{form}")).await;
        assert_eq!(payment.status, 200, "{form}: {:?}", payment.body);
        assert_eq!(
            payment.body["data"]["payment"]["id"],
            payment_id.as_str(),
            "{form}"
        );
        let coa = sandbox.get(&agent.key, &format!("/results/{form}")).await;
        assert_eq!(coa.status, 200, "{form}: {:?}", coa.body);
        assert_eq!(coa.body["data"]["result"]["id"], coa_id.as_str(), "{form}");
        let analytes = sandbox
            .get(&agent.key, &format!("/results/{form}/analytes"))
            .await;
        assert_eq!(analytes.status, 200, "{form}: {:?}", analytes.body);
        // Another customer's order is a missing one.
        for path in [format!("/payments/{form}"), format!("/results/{form}")] {
            let hidden = sandbox.get(&stranger.key, &path).await;
            assert_eq!(hidden.status, 404, "{path}: {:?}", hidden.body);
            assert_eq!(hidden.body["error"]["code"], "not_found");
        }
    }

    // Two compounds, paid in two transfers: two COAs, two payments.
    let (double, _) = order_of(&sandbox, &agent, &["BPC-157", "TB-500"], "references-double").await;
    let id = double["id"].as_str().unwrap();
    for scenario in ["received", "testing"] {
        assert_eq!(simulate(&sandbox, &agent.key, id, scenario).await.status, 200);
    }
    let invoice = double["payment"]["invoiceNumber"].as_str().unwrap();
    let total = double["totalCents"].as_i64().unwrap();
    pay(&sandbox, invoice, &(total / 2).to_string(), "REF-PAY-2A").await;
    pay(&sandbox, invoice, &(total - total / 2).to_string(), "REF-PAY-2B").await;
    let number = double["orderNumber"].as_str().unwrap();
    let payment = sandbox.get(&agent.key, &format!("/payments/{number}")).await;
    assert_eq!(payment.status, 409, "{:?}", payment.body);
    assert_eq!(payment.body["error"]["code"], "ambiguous_reference");
    assert_eq!(
        payment.body["error"]["details"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    wait_for("the COAs published", Duration::from_secs(30), || async {
        (simulate(&sandbox, &agent.key, id, "coa_published").await.status == 200).then_some(())
    })
    .await;
    let coa = sandbox.get(&agent.key, &format!("/results/{number}")).await;
    assert_eq!(coa.status, 409, "{:?}", coa.body);
    assert_eq!(coa.body["error"]["code"], "ambiguous_reference");
    let candidates = coa.body["error"]["details"]["candidates"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(candidates.len(), 2, "{candidates:?}");
    // Each candidate's own reference answers.
    for candidate in candidates {
        let accession = candidate["accessionNumber"].as_str().unwrap();
        let one = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
        assert_eq!(one.status, 200, "{:?}", one.body);
    }
    sandbox.stop().await;
}
