//! Add-on tests on a retained sample across the mesh: a priced preview that stores nothing, the
//! confirmed add-on with its supplementary invoice (exactly one under retries of the key), the
//! refusals, the bank payment, the lab running the tests on the same sample and the amended COA
//! that reports them; the same operation through MCP on a card order with its own pay link.

use crate::lab_support::{LabStaff, approve_and_publish, lab_staff, passing_rows, record_and_submit};
use crate::support::{bank_order, record_bank_payment, wait_for_label};
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

/// The add-on test: a peptides test that the quoted line does not have.
const ADDON_TEST: &str = "heavy-metals-icpms";
/// Its price in the catalog revision of the orders.
const ADDON_PRICE: i64 = 15_500;

async fn order(sandbox: &Sandbox, customer: &Customer, reference: &str) -> Value {
    let answer = sandbox.get(&customer.key, &format!("/orders/{reference}")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"]["order"].clone()
}

/// Receives the order's one line with four units (two for the line's tests, two retained for
/// add-ons) and starts testing; returns the sample.
async fn receive_four_units(sandbox: &Sandbox, staff: &LabStaff, number: &str) -> Value {
    let received = sandbox
        .labctl_as(
            &staff.analyst,
            &[
                "samples",
                "receive",
                "--order",
                number,
                "--tracking",
                "1Z999AA10123456784",
                "--sample",
                "1:4:intact:FRZ-1/A1:4 x 2 mL amber vial",
            ],
        )
        .await
        .unwrap();
    assert_eq!(received["status"], "sample_received", "{received}");
    let started = sandbox
        .labctl_as(&staff.analyst, &["samples", "start-testing", "--order", number])
        .await
        .unwrap();
    assert_eq!(started["status"], "in_lab", "{started}");
    received["samples"][0].clone()
}

async fn addon_status(sandbox: &Sandbox, customer: &Customer, order_id: &str, status: &str) -> Value {
    wait_for(
        &format!("the add-on to be {status}"),
        Duration::from_secs(30),
        || async {
            let order = order(sandbox, customer, order_id).await;
            (order["addons"][0]["status"] == status).then(|| order["addons"][0].clone())
        },
    )
    .await
}

fn addon_path(reference: &str) -> String {
    format!("/orders/{reference}/addons")
}

fn body(tests: &[&str], confirm: bool) -> Value {
    json!({ "lineNumber": 1, "testIds": tests, "confirm": confirm })
}

#[tokio::test]
async fn an_add_on_is_previewed_ordered_once_paid_tested_and_reported_in_an_amended_coa() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Addon Agent", "all").await;
    let other = sandbox.customer("Addon Stranger", "all").await;
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "addon-order-0001").await;
    wait_for_label(&sandbox, &agent, &order_id).await;
    record_bank_payment(&sandbox, &invoice, &total, "ADDON-ORDER-PAY").await;
    let number = order(&sandbox, &agent, &order_id).await["orderNumber"]
        .as_str()
        .unwrap()
        .to_owned();

    // Before receipt the lab holds nothing to test.
    let early = sandbox
        .post(&agent.key, &addon_path(&number), &body(&[ADDON_TEST], false), &[])
        .await;
    assert_eq!(
        (early.status, early.body["error"]["code"].as_str()),
        (409, Some("addon_sample_not_held")),
        "{:?}",
        early.body
    );

    let staff = lab_staff(&sandbox).await;
    let sample = receive_four_units(&sandbox, &staff, &number).await;
    let accession = sample["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &sample).await;
    let original = approve_and_publish(&sandbox, &staff, &accession).await;
    let original_id = original["id"].as_str().unwrap().to_owned();

    // Preview: priced from the order's catalog revision, nothing stored.
    let preview = sandbox
        .post(
            &agent.key,
            &addon_path(&accession),
            &body(&[ADDON_TEST], false),
            &[],
        )
        .await;
    assert_eq!(preview.status, 200, "{:?}", preview.body);
    let priced = &preview.body["data"]["addon"];
    assert_eq!(priced["status"], "preview");
    assert_eq!(priced["id"], Value::Null);
    assert_eq!(priced["invoice"], Value::Null);
    assert_eq!(priced["accessionNumber"], accession.as_str());
    assert_eq!(priced["tests"][0]["testId"], ADDON_TEST);
    assert_eq!(priced["tests"][0]["priceCents"], ADDON_PRICE);
    assert_eq!(priced["totalCents"], ADDON_PRICE);
    let revision = order(&sandbox, &agent, &order_id).await["catalogRevision"].clone();
    assert_eq!(priced["catalogRevision"], revision);
    assert_eq!(order(&sandbox, &agent, &order_id).await["addons"], json!([]));

    // Refusals, each with its code.
    let refusals = [
        (body(&["no-such-test"], false), 400, "unknown_test"),
        (body(&["microbial-limits"], false), 409, "addon_matrix_mismatch"),
        (
            body(&[ADDON_TEST, "tfa-counterion", "hplc-purity"], false),
            409,
            "addon_sample_insufficient",
        ),
        (
            json!({ "lineNumber": 9, "testIds": [ADDON_TEST] }),
            400,
            "invalid_request",
        ),
        (json!({ "lineNumber": 1, "testIds": [] }), 400, "invalid_request"),
        (body(&[ADDON_TEST], true), 400, "idempotency_key_missing"),
    ];
    for (request, status, code) in refusals {
        let refused = sandbox
            .post(&agent.key, &addon_path(&number), &request, &[])
            .await;
        assert_eq!(
            (refused.status, refused.body["error"]["code"].as_str()),
            (status, Some(code)),
            "{request}: {:?}",
            refused.body
        );
    }
    let stranger = sandbox
        .post(&other.key, &addon_path(&number), &body(&[ADDON_TEST], false), &[])
        .await;
    assert_eq!(stranger.status, 404, "another customer's order is not found");

    // Confirmed: one add-on and one supplementary bank invoice, however often the key is sent.
    let key = [("Idempotency-Key", "addon-confirm-0001")];
    let created = sandbox
        .post(&agent.key, &addon_path(&number), &body(&[ADDON_TEST], true), &key)
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let addon = created.body["data"]["addon"].clone();
    assert_eq!(addon["status"], "pending_payment");
    let addon_invoice = addon["invoice"]["invoiceNumber"].as_str().unwrap().to_owned();
    assert_ne!(addon_invoice, invoice, "a supplementary invoice of its own");
    assert_eq!(addon["invoice"]["amountDueCents"], ADDON_PRICE);
    assert_eq!(
        addon["invoice"]["bankInstructions"]["reference"],
        addon_invoice.as_str()
    );
    let (path, confirmed) = (addon_path(&number), body(&[ADDON_TEST], true));
    let replays =
        futures::future::join_all((0..3).map(|_| sandbox.post(&agent.key, &path, &confirmed, &key))).await;
    for replay in replays {
        assert_eq!(replay.status, 201, "{:?}", replay.body);
        assert_eq!(replay.headers["idempotent-replayed"], "true");
        assert_eq!(replay.body["data"]["addon"]["id"], addon["id"]);
        assert_eq!(
            replay.body["data"]["addon"]["invoice"]["invoiceNumber"],
            addon_invoice.as_str()
        );
    }
    let other_input = sandbox
        .post(
            &agent.key,
            &addon_path(&number),
            &body(&["tfa-counterion"], true),
            &key,
        )
        .await;
    assert_eq!(other_input.status, 409, "{:?}", other_input.body);
    let invoices = sandbox
        .get(&agent.key, &format!("/invoices?orderId={order_id}"))
        .await;
    assert_eq!(invoices.status, 200, "{:?}", invoices.body);
    assert_eq!(
        invoices.body["data"].as_array().unwrap().len(),
        2,
        "the order's invoice and one add-on invoice: {:?}",
        invoices.body
    );
    let shown = order(&sandbox, &agent, &order_id).await;
    assert_eq!(shown["addons"].as_array().unwrap().len(), 1);
    assert_eq!(shown["addons"][0]["id"], addon["id"]);
    assert_eq!(shown["addons"][0]["status"], "pending_payment");
    assert_eq!(
        shown["status"], "completed",
        "an add-on leaves the order's status alone"
    );
    // The same test cannot be ordered twice on the sample.
    let again = sandbox
        .post(&agent.key, &addon_path(&number), &body(&[ADDON_TEST], false), &[])
        .await;
    assert_eq!(again.status, 400, "{:?}", again.body);

    // Payment hands the tests to the lab: the sample is in testing.
    record_bank_payment(&sandbox, &addon_invoice, &ADDON_PRICE.to_string(), "ADDON-PAY-1").await;
    let paid = addon_status(&sandbox, &agent, &order_id, "in_testing").await;
    assert!(paid["paidAt"].is_string(), "{paid}");
    assert_eq!(paid["invoice"]["status"], "paid");
    let listed = sandbox
        .labctl_as(&staff.analyst, &["samples", "addons", "--order", &number])
        .await
        .unwrap();
    assert_eq!(listed["addons"][0]["status"], "in_testing", "{listed}");
    assert_eq!(listed["addons"][0]["testIds"], json!([ADDON_TEST]));
    assert_eq!(listed["addons"][0]["invoiceNumber"], addon_invoice.as_str());

    // The lab amends the COA: the add-on's result joins the original ones.
    let amendment = sandbox
        .labctl_as(
            &staff.qa,
            &[
                "results",
                "amend",
                "--coa",
                &original_id,
                "--reason",
                "add-on heavy metals",
            ],
        )
        .await
        .unwrap();
    assert_eq!(amendment["version"], 2, "{amendment}");
    let rows = passing_rows(&json!({ "testIds": [ADDON_TEST] }));
    wait_for(
        "results-svc to list the add-on test on the sample",
        Duration::from_secs(20),
        || async {
            sandbox
                .labctl_as(
                    &staff.analyst,
                    &[
                        "results",
                        "record",
                        "--accession",
                        &accession,
                        "--results-json",
                        &rows,
                    ],
                )
                .await
                .ok()
        },
    )
    .await;
    let submitted = sandbox
        .labctl_as(&staff.analyst, &["results", "submit", "--accession", &accession])
        .await
        .unwrap();
    assert_eq!(submitted["status"], "submitted");
    let amended = approve_and_publish(&sandbox, &staff, &accession).await;
    assert_eq!(amended["status"], "published", "{amended}");
    let reported = addon_status(&sandbox, &agent, &order_id, "reported").await;
    assert!(reported["reportedAt"].is_string());
    let analytes = sandbox
        .get(
            &agent.key,
            &format!("/results/{}/analytes", amended["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(analytes.status, 200, "{:?}", analytes.body);
    let tests: Vec<&str> = analytes.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["testId"].as_str().unwrap())
        .collect();
    assert!(tests.contains(&ADDON_TEST), "{tests:?}");
    assert_eq!(tests.len(), 3, "the line's two tests and the add-on: {tests:?}");
}

#[tokio::test]
async fn a_card_order_gets_an_add_on_with_its_own_pay_link_through_mcp() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Addon Card Agent", "all").await;
    // A second key of the same customer, without a payments scope.
    let reader = sandbox
        .customer("Addon Card Agent", "orders:read,orders:write")
        .await;
    let quote = crate::support::quote(&sandbox, &agent, &["BPC-157"]).await;
    let created = crate::support::place_order(
        &sandbox,
        &agent,
        &json!({ "quoteId": quote["id"], "paymentMethod": "card_checkout", "confirm": true }),
        "addon-card-order-1",
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let placed = &created.body["data"]["order"];
    let order_id = placed["id"].as_str().unwrap().to_owned();
    let number = placed["orderNumber"].as_str().unwrap().to_owned();
    let order_link = placed["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    wait_for_label(&sandbox, &agent, &order_id).await;
    let staff = lab_staff(&sandbox).await;
    receive_four_units(&sandbox, &staff, &number).await;

    let arguments = json!({ "reference": number, "lineNumber": 1, "testIds": [ADDON_TEST] });
    let preview = sandbox
        .call_tool(&agent.key, "svc.order.addons", arguments.clone())
        .await;
    let priced = &preview["result"]["structuredContent"]["data"]["addon"];
    assert_eq!(priced["status"], "preview", "{preview}");
    assert_eq!(priced["totalCents"], ADDON_PRICE);

    let mut confirm = arguments.clone();
    confirm["confirm"] = json!(true);
    let refused = sandbox
        .call_tool(&agent.key, "svc.order.addons", confirm.clone())
        .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"],
        "idempotency_key_missing"
    );
    confirm["idempotencyKey"] = json!("addon-mcp-0001");
    let ordered = sandbox
        .call_tool(&agent.key, "svc.order.addons", confirm.clone())
        .await;
    let addon = ordered["result"]["structuredContent"]["data"]["addon"].clone();
    assert_eq!(addon["status"], "pending_payment", "{ordered}");
    let link = addon["invoice"]["hostedUrl"].as_str().unwrap().to_owned();
    assert!(link.contains("/pay/cs_"), "{link}");
    assert_ne!(link, order_link, "the add-on has its own pay link");
    assert_eq!(addon["invoice"]["bankInstructions"], Value::Null);
    let again = sandbox.call_tool(&agent.key, "svc.order.addons", confirm).await;
    assert_eq!(
        again["result"]["structuredContent"]["data"]["addon"]["id"],
        addon["id"]
    );
    // REST with the same key is the same request: its replay.
    let replay = sandbox
        .post(
            &agent.key,
            &addon_path(&number),
            &body(&[ADDON_TEST], true),
            &[("Idempotency-Key", "addon-mcp-0001")],
        )
        .await;
    assert_eq!(replay.status, 201, "{:?}", replay.body);
    assert_eq!(replay.headers["idempotent-replayed"], "true");
    assert_eq!(replay.body["data"]["addon"]["id"], addon["id"]);

    // A key without a payments scope sees the add-on but not its pay link.
    let shown = order(&sandbox, &reader, &order_id).await;
    assert_eq!(shown["addons"][0]["id"], addon["id"]);
    assert_eq!(shown["addons"][0]["invoice"]["hostedUrl"], Value::Null);
    assert_eq!(shown["payment"]["hostedUrl"], Value::Null);
    let with_link = order(&sandbox, &agent, &order_id).await;
    assert_eq!(with_link["addons"][0]["invoice"]["hostedUrl"], link.as_str());

    // The add-on's own link pays the add-on only: its page shows the add-on's total, the card
    // pays it once, the add-on moves on and the order's own invoice stays unpaid.
    let page = crate::card_checkout::open_page(&sandbox, &link).await;
    assert_eq!(page.status, 200);
    let price = format!("${}.{:02}", ADDON_PRICE / 100, ADDON_PRICE % 100);
    assert!(page.html.contains(&price), "{price}: {}", page.html);
    let paid = crate::card_checkout::pay_with(&sandbox, &link, crate::card_checkout::SUCCESS_CARD).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);
    let again = crate::card_checkout::pay_with(&sandbox, &link, crate::card_checkout::SUCCESS_CARD).await;
    assert_ne!(
        again.outcome(),
        "paid",
        "a second attempt charges nothing: {}",
        again.html
    );
    let moved = addon_status(&sandbox, &agent, &order_id, "in_testing").await;
    assert_eq!(moved["invoice"]["status"], "paid", "{moved}");
    assert_eq!(moved["invoice"]["amountDueCents"], 0);
    let after = order(&sandbox, &agent, &order_id).await;
    assert_ne!(
        after["payment"]["status"], "paid",
        "the order's own invoice is untouched: {after}"
    );
    let payments = sandbox.get(&agent.key, "/payments").await;
    let amounts: Vec<i64> = payments.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|payment| payment["amountCents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [ADDON_PRICE], "exactly one card payment, of the add-on");
}
