//! A published COA's later life and its public verification: retraction and amendment visible
//! through REST, events and verify; verification with and without the printed code; a batch of
//! 100 accessions.

use crate::lab_support::{
    approve_and_publish, lab_staff, passing_rows, pay, receive_and_start, record_and_submit,
};
use crate::support::{bank_order, stream_events};
use platform::testing::wait_for;
use proto::events::event_envelope::Data;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

/// A paid one-sample order with its published COA, once the order is completed: (order id,
/// accession, COA as labctl shows it).
async fn published_coa(
    sandbox: &Sandbox,
    agent: &Customer,
    staff: &crate::lab_support::LabStaff,
    key: &str,
) -> (String, String, Value) {
    let (order_id, invoice, total) = bank_order(sandbox, agent, key).await;
    pay(sandbox, &invoice, &total, &format!("PAY-{key}")).await;
    let samples = receive_and_start(sandbox, staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(sandbox, staff, &samples[0]).await;
    let coa = approve_and_publish(sandbox, staff, &accession).await;
    assert_eq!(coa["status"], "published", "{coa}");
    wait_for_order_status(sandbox, agent, &order_id, "completed").await;
    (order_id, accession, coa)
}

async fn wait_for_order_status(sandbox: &Sandbox, agent: &Customer, order_id: &str, status: &str) -> Value {
    wait_for(
        &format!("the order to be {status}"),
        Duration::from_secs(30),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            let order = answer.body["data"]["order"].clone();
            (order["status"] == status).then_some(order)
        },
    )
    .await
}

/// The actions of the order's custody chain, which must be intact.
async fn custody_actions(sandbox: &Sandbox, agent: &Customer, order_id: &str) -> Vec<String> {
    let custody = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/custody"))
        .await;
    let custody = &custody.body["data"]["custody"];
    assert_eq!(custody["chainIntact"], true, "{custody}");
    custody["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_owned())
        .collect()
}

async fn verify(sandbox: &Sandbox, query: &str) -> Value {
    let answer = sandbox
        .call(reqwest::Method::GET, &format!("/verify?{query}"), None, None, &[])
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"]["verification"].clone()
}

#[tokio::test]
async fn retraction_and_amendment_are_visible_through_rest_events_and_verify() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Amending Agent", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (order_id, accession, original) = published_coa(&sandbox, &agent, &staff, "amend-order-01").await;
    let original_id = original["id"].as_str().unwrap().to_owned();

    let retracted = sandbox
        .labctl_as(
            &staff.qa,
            &[
                "results",
                "retract",
                "--coa",
                &accession,
                "--reason",
                "wrong reference standard",
            ],
        )
        .await
        .unwrap();
    assert_eq!(retracted["status"], "retracted");
    let read = sandbox.get(&agent.key, &format!("/results/{original_id}")).await;
    assert_eq!(read.status, 200, "a retracted COA stays readable");
    assert_eq!(read.body["data"]["result"]["status"], "retracted");
    assert_eq!(
        read.body["data"]["result"]["retractionReason"],
        "wrong reference standard"
    );
    assert_eq!(
        verify(&sandbox, &format!("accession={accession}")).await["status"],
        "retracted"
    );
    let events = wait_for(
        "coa.retracted on the results stream",
        Duration::from_secs(20),
        || async {
            let events = stream_events(&sandbox, "results").await;
            events
                .iter()
                .any(|event| event.r#type == "coa.retracted")
                .then_some(events)
        },
    )
    .await;
    let retraction = events
        .iter()
        .find(|event| event.r#type == "coa.retracted")
        .unwrap();
    match &retraction.data {
        Some(Data::CoaRetracted(data)) => {
            assert_eq!(
                (data.coa_id.as_str(), data.reason.as_str()),
                (original_id.as_str(), "wrong reference standard")
            );
        }
        other => panic!("unexpected payload {other:?}"),
    }
    // The only COA of the completed order is withdrawn: the order is back in reporting.
    let reopened = wait_for_order_status(&sandbox, &agent, &order_id, "reporting").await;
    let last = reopened["statusHistory"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (
            last["fromStatus"].as_str(),
            last["toStatus"].as_str(),
            last["reason"].as_str()
        ),
        (Some("completed"), Some("reporting"), Some("coa.retracted")),
        "{last}"
    );
    let moved_back = wait_for(
        "order.status_changed completed -> reporting",
        Duration::from_secs(20),
        || async {
            stream_events(&sandbox, "orders").await.into_iter().find(|event| {
                matches!(&event.data, Some(Data::OrderStatusChanged(changed))
                    if changed.from_status().as_str() == "completed" && changed.to_status().as_str() == "reporting")
            })
        },
    )
    .await;
    assert_eq!(moved_back.subject_id, order_id);
    assert_eq!(
        custody_actions(&sandbox, &agent, &order_id).await,
        [
            "received",
            "stored",
            "testing_started",
            "coa_published",
            "coa_retracted"
        ]
    );

    let amendment = sandbox
        .labctl_as(
            &staff.qa,
            &[
                "results",
                "amend",
                "--coa",
                &original_id,
                "--reason",
                "re-assayed against the certified standard",
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        (amendment["status"].as_str(), amendment["version"].as_i64()),
        (Some("draft"), Some(2))
    );
    let amendment_id = amendment["id"].as_str().unwrap().to_owned();
    assert_ne!(amendment_id, original_id, "an amendment has its own id");
    let sample = json!({ "accessionNumber": accession, "testIds": original["results"].as_array().unwrap().iter().map(|row| row["testId"].clone()).collect::<Vec<_>>() });
    let rows = passing_rows(&sample).replace("99.2", "98.7");
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
        .unwrap();
    sandbox
        .labctl_as(&staff.analyst, &["results", "submit", "--accession", &accession])
        .await
        .unwrap();
    let published = approve_and_publish(&sandbox, &staff, &accession).await;
    assert_eq!(published["status"], "published");

    let current = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    let current = &current.body["data"]["result"];
    assert_eq!(
        current["id"],
        amendment_id.as_str(),
        "the accession reads its newest COA"
    );
    assert_eq!(current["amends"], original_id.as_str());
    assert_eq!(
        current["amendmentReason"],
        "re-assayed against the certified standard"
    );
    assert_eq!(current["results"][0]["value"], "98.7");
    let old = sandbox.get(&agent.key, &format!("/results/{original_id}")).await;
    assert_eq!(
        old.body["data"]["result"]["supersededBy"],
        amendment_id.as_str(),
        "linked both ways"
    );
    let listed = sandbox.get(&agent.key, "/results").await;
    assert_eq!(
        listed.body["data"].as_array().unwrap().len(),
        2,
        "both stay listed"
    );
    let by_id = verify(&sandbox, &format!("accession={original_id}")).await;
    assert_eq!(
        (by_id["status"].as_str(), by_id["supersededBy"].as_str()),
        (Some("superseded"), Some(amendment_id.as_str()))
    );
    assert_eq!(
        verify(&sandbox, &format!("accession={accession}")).await["status"],
        "authentic"
    );
    let published_events = wait_for("two coa.published events", Duration::from_secs(20), || async {
        let events = stream_events(&sandbox, "results").await;
        let count = events
            .iter()
            .filter(|event| event.r#type == "coa.published")
            .count();
        (count == 2).then_some(count)
    })
    .await;
    assert_eq!(published_events, 2);
    // The amendment is a COA in force again: the order completes again, and custody shows it.
    let completed = wait_for_order_status(&sandbox, &agent, &order_id, "completed").await;
    let last = completed["statusHistory"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["fromStatus"].as_str(), last["toStatus"].as_str()),
        (Some("reporting"), Some("completed"))
    );
    assert_eq!(
        custody_actions(&sandbox, &agent, &order_id).await,
        [
            "received",
            "stored",
            "testing_started",
            "coa_published",
            "coa_retracted",
            "coa_published"
        ]
    );
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn verification_reveals_compound_and_lot_only_with_the_printed_code_and_batches_take_100() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Verified Agent", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (_, accession, coa) = published_coa(&sandbox, &agent, &staff, "verify-order-01").await;
    let code = coa["verificationCode"].as_str().unwrap().to_owned();

    let bare = verify(&sandbox, &format!("accession={accession}")).await;
    assert_eq!(bare["status"], "authentic");
    assert_eq!(
        (bare["codeMatched"].as_bool(), &bare["compound"]),
        (Some(false), &Value::Null)
    );
    // Without the code nothing dates the sample either.
    assert_eq!(bare["publishedAt"], Value::Null, "{bare}");
    let wrong = verify(&sandbox, &format!("accession={accession}&code=WRONGCODE1")).await;
    assert_eq!(
        (wrong["codeMatched"].as_bool(), &wrong["compound"]),
        (Some(false), &Value::Null)
    );
    assert_eq!(wrong["publishedAt"], Value::Null, "{wrong}");
    let coded = verify(&sandbox, &format!("accession={accession}&code={code}")).await;
    assert_eq!(
        (coded["codeMatched"].as_bool(), coded["compound"].as_str()),
        (Some(true), Some("BPC-157"))
    );
    assert!(coded["publishedAt"].is_string(), "{coded}");
    let posted = sandbox
        .call(
            reqwest::Method::POST,
            "/verify",
            None,
            Some(&json!({ "accession": accession, "code": code })),
            &[],
        )
        .await;
    assert_eq!(posted.body["data"]["verification"]["compound"], "BPC-157");

    // The signature verifies offline with the published key.
    let keys: Value = sandbox
        .http
        .get(format!("{}/.well-known/coa-signing-key.json", sandbox.base_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let x = keys["keys"][0]["x"].as_str().unwrap();
    let content = coded["signedContent"].as_str().unwrap();
    assert!(results_svc::domain::signing::verify(
        x,
        content,
        coded["signature"].as_str().unwrap()
    ));
    assert!(!results_svc::domain::signing::verify(
        x,
        &content.replace("BPC-157", "TB-500"),
        coded["signature"].as_str().unwrap()
    ));

    let unknown = verify(&sandbox, "accession=ACC-1999-999999").await;
    assert_eq!(unknown["status"], "unknown");

    let mut accessions: Vec<String> = (0..99).map(|index| format!("ACC-2000-{index:06}")).collect();
    accessions.insert(50, accession.clone());
    let batch = sandbox
        .call(
            reqwest::Method::POST,
            "/verify/batch",
            None,
            Some(&json!({ "accessions": accessions })),
            &[],
        )
        .await;
    assert_eq!(batch.status, 200, "{:?}", batch.body);
    let verdicts = batch.body["data"].as_array().unwrap();
    assert_eq!(verdicts.len(), 100);
    assert_eq!(verdicts[50]["status"], "authentic");
    assert_eq!(
        verdicts[50]["compound"],
        Value::Null,
        "a batch reveals no customer details"
    );
    assert!(
        verdicts
            .iter()
            .enumerate()
            .all(|(index, verdict)| index == 50 || verdict["status"] == "unknown")
    );
    let joined = accessions[..3].join(",");
    let get_batch = sandbox
        .call(
            reqwest::Method::GET,
            &format!("/verify/batch?accessions={joined}"),
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(get_batch.body["data"].as_array().unwrap().len(), 3);
    accessions.push("ACC-2000-999999".into());
    let too_many = sandbox
        .call(
            reqwest::Method::POST,
            "/verify/batch",
            None,
            Some(&json!({ "accessions": accessions })),
            &[],
        )
        .await;
    assert_eq!((too_many.status, too_many.error_code()), (400, "invalid_request"));
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}
