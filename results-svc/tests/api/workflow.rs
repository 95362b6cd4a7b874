//! The lab workflow's refusals and repeats: steps out of order, four eyes, idempotent repeats,
//! publication held until the order is paid, and the links of retraction and amendment.

use crate::helpers::*;
use platform::error::ErrorCode;
use uuid::Uuid;

#[tokio::test]
async fn a_step_out_of_order_is_a_conflict_naming_the_coas_status_and_changes_nothing() {
    let app = spawn_app().await;
    let sample = app.received_sample(Uuid::new_v4()).await;
    let (analyst, qa) = (app.analyst(), app.qa());

    // Results before the start of testing.
    assert_refused(
        app.record_as(&analyst, &sample.accession, "Purity").await,
        ErrorCode::Conflict,
        None,
    );
    app.start_testing(&sample).await;
    // No COA yet: nothing to submit, approve or publish.
    assert_refused(
        app.submit_as(&analyst, &sample.accession).await,
        ErrorCode::NotFound,
        None,
    );
    app.record_as(&analyst, &sample.accession, "Purity")
        .await
        .expect("record");
    // A draft is neither approved, published, sent back nor retracted.
    assert_refused(
        app.approve_as(&qa, &sample.accession).await,
        ErrorCode::Conflict,
        Some("draft"),
    );
    assert_refused(
        app.publish_as(&qa, &sample.accession).await,
        ErrorCode::Conflict,
        Some("draft"),
    );
    assert_refused(
        app.send_back_as(&qa, &sample.accession, "check the blank").await,
        ErrorCode::Conflict,
        Some("draft"),
    );
    assert_refused(
        app.retract_as(&qa, &sample.accession, "wrong sample").await,
        ErrorCode::Conflict,
        Some("draft"),
    );
    app.submit_as(&analyst, &sample.accession).await.expect("submit");
    // Submitted results are not changed, published or amended.
    assert_refused(
        app.record_as(&analyst, &sample.accession, "Purity").await,
        ErrorCode::Conflict,
        Some("submitted"),
    );
    assert_refused(
        app.publish_as(&qa, &sample.accession).await,
        ErrorCode::Conflict,
        Some("submitted"),
    );
    assert_refused(
        app.amend_as(&qa, &sample.accession, "typo").await,
        ErrorCode::Conflict,
        Some("submitted"),
    );
    let coa = app.lab_coa(&qa, &sample.accession).await.unwrap();
    assert_eq!(coa.status, "submitted");
    assert_eq!(coa.results.len(), 1);
    assert!(app.outbox_coa_ids("coa.published").await.is_empty());
}

#[tokio::test]
async fn the_analyst_who_entered_or_submitted_the_results_cannot_approve_them() {
    let app = spawn_app().await;
    let sample = app.sample_in_testing(Uuid::new_v4()).await;
    // One operator holding both roles enters the results…
    let both = app.keys.staff("sam", &["lab.analyst", "lab.qa"]);
    app.record_as(&both, &sample.accession, "Purity")
        .await
        .expect("record");
    // …a second analyst submits them.
    let submitter = app.operator("sol", "lab.analyst");
    app.submit_as(&submitter, &sample.accession)
        .await
        .expect("submit");

    assert_refused(
        app.approve_as(&both, &sample.accession).await,
        ErrorCode::Forbidden,
        None,
    );
    let submitter_as_qa = app.operator("sol", "lab.qa");
    assert_refused(
        app.approve_as(&submitter_as_qa, &sample.accession).await,
        ErrorCode::Forbidden,
        None,
    );
    assert_eq!(
        app.lab_coa(&app.qa(), &sample.accession).await.unwrap().status,
        "submitted"
    );

    let approved = app
        .approve_as(&app.qa(), &sample.accession)
        .await
        .expect("a third operator approves");
    let coa = approved.coa.unwrap();
    assert_eq!(coa.status, "approved");
    assert_eq!(coa.approved_by.as_deref(), Some("quinn"));
}

#[tokio::test]
async fn repeating_a_step_answers_the_same_coa_unchanged_and_emits_nothing_twice() {
    let app = spawn_app().await;
    let customer_id = Uuid::new_v4();
    let (sample, coa) = app.published(customer_id).await;
    let (analyst, qa) = (app.analyst(), app.qa());

    let again = app
        .publish_as(&qa, &sample.accession)
        .await
        .expect("publish again");
    assert!(again.unchanged);
    assert_eq!(again.coa.as_ref().unwrap().id, coa.id);
    assert_eq!(again.coa.unwrap().published_at, coa.published_at);
    assert!(app.approve_as(&qa, &sample.accession).await.unwrap().unchanged);
    assert_refused(
        app.submit_as(&analyst, &sample.accession).await,
        ErrorCode::Conflict,
        Some("published"),
    );

    let retracted = app
        .retract_as(&qa, &coa.id, "contaminated vial")
        .await
        .expect("retract");
    assert!(!retracted.unchanged);
    let again = app
        .retract_as(&qa, &coa.id, "contaminated vial")
        .await
        .expect("retract again");
    assert!(again.unchanged);
    assert_eq!(
        again.coa.unwrap().retracted_at,
        retracted.coa.unwrap().retracted_at
    );

    let amendment = app
        .amend_as(&qa, &coa.id, "re-test on the retained portion")
        .await
        .expect("amend");
    assert!(!amendment.unchanged);
    let again = app
        .amend_as(&qa, &coa.id, "re-test on the retained portion")
        .await
        .expect("amend again");
    assert!(again.unchanged);
    assert_eq!(again.coa.unwrap().id, amendment.coa.unwrap().id);

    assert_eq!(app.outbox_coa_ids("coa.published").await, vec![coa.id.clone()]);
    assert_eq!(app.outbox_coa_ids("coa.retracted").await, vec![coa.id]);
}

#[tokio::test]
async fn an_approved_coa_of_an_unpaid_order_is_held_invisible_and_published_when_the_payment_lands() {
    let app = spawn_app().await;
    let customer_id = Uuid::new_v4();
    let customer = app.customer(customer_id);
    let sample = app.sample_in_testing(customer_id).await;
    app.approved(&sample.accession).await;

    let held = app
        .publish_as(&app.qa(), &sample.accession)
        .await
        .expect("publish");
    let coa = held.coa.unwrap();
    assert_eq!(coa.status, "held");
    assert!(coa.published_at.is_none() && coa.signature.is_empty());
    assert!(
        app.publish_as(&app.qa(), &sample.accession)
            .await
            .unwrap()
            .unchanged
    );
    assert!(app.outbox_coa_ids("coa.published").await.is_empty());
    assert_refused(
        app.get_result_as(&customer, &coa.id).await,
        ErrorCode::NotFound,
        None,
    );
    assert_refused(
        app.get_result_as(&customer, &sample.accession).await,
        ErrorCode::NotFound,
        None,
    );
    let listed = app.list_results_as(&customer, Default::default()).await.unwrap();
    assert!(listed.coas.is_empty());
    assert_eq!(app.verify(&[&sample.accession]).await[0].status, "unknown");

    app.pay(&sample).await;
    let published = app.wait_for_status(&sample.accession, "published").await;
    assert!(published.published_at.is_some());
    assert!(!published.signature.is_empty());
    assert_eq!(app.outbox_coa_ids("coa.published").await, vec![coa.id.clone()]);
    assert_eq!(
        app.get_result_as(&customer, &sample.accession).await.unwrap().id,
        coa.id
    );
    assert_eq!(app.verify(&[&sample.accession]).await[0].status, "authentic");
}

#[tokio::test]
async fn a_retraction_keeps_the_coa_readable_and_its_amendment_links_both_ways() {
    let app = spawn_app().await;
    let customer_id = Uuid::new_v4();
    let customer = app.customer(customer_id);
    let (sample, original) = app.published(customer_id).await;
    let qa = app.qa();

    assert_refused(
        app.retract_as(&qa, &original.id, " ").await,
        ErrorCode::InvalidRequest,
        None,
    );
    app.retract_as(&qa, &original.id, "contaminated vial")
        .await
        .expect("retract");
    let read = app.get_result_as(&customer, &original.id).await.unwrap();
    assert_eq!(read.status, "retracted");
    assert_eq!(read.retraction_reason.as_deref(), Some("contaminated vial"));
    assert_eq!(app.verify(&[&sample.accession]).await[0].status, "retracted");

    let amendment = app
        .amend_as(&qa, &sample.accession, "re-test on the retained portion")
        .await
        .expect("amend")
        .coa
        .unwrap();
    assert_eq!(amendment.status, "draft");
    assert_eq!(amendment.version, 2);
    assert_eq!(amendment.amends.as_deref(), Some(original.id.as_str()));
    assert_eq!(
        amendment.amendment_reason.as_deref(),
        Some("re-test on the retained portion")
    );
    assert_eq!(
        amendment.results.len(),
        original.results.len(),
        "the original's rows are copied"
    );
    // The draft amendment is invisible: the customer still reads the retracted original.
    assert_eq!(
        app.get_result_as(&customer, &sample.accession).await.unwrap().id,
        original.id
    );

    app.submit_as(&app.analyst(), &sample.accession)
        .await
        .expect("submit the amendment");
    app.approve_as(&qa, &sample.accession)
        .await
        .expect("approve the amendment");
    let published = app.publish_as(&qa, &sample.accession).await.unwrap().coa.unwrap();
    assert_eq!(published.status, "published");
    assert_eq!(published.id, amendment.id);

    let original_now = app.get_result_as(&customer, &original.id).await.unwrap();
    assert_eq!(
        original_now.status, "retracted",
        "a retracted original stays retracted"
    );
    assert_eq!(original_now.superseded_by.as_deref(), Some(amendment.id.as_str()));
    assert_eq!(
        app.get_result_as(&customer, &sample.accession).await.unwrap().id,
        amendment.id
    );
    let verdicts = app.verify(&[&sample.accession, &original.id]).await;
    assert_eq!(verdicts[0].status, "authentic");
    assert_eq!(verdicts[0].coa_id.as_deref(), Some(amendment.id.as_str()));
    // The public verdict of the withdrawn original points to its successor.
    assert_eq!(verdicts[1].status, "superseded");
    assert_eq!(verdicts[1].superseded_by.as_deref(), Some(amendment.id.as_str()));

    let events =
        platform::testing::events::outbox_events_of(&app.pool, results_svc::SCHEMA, "coa.published").await;
    let Some(proto::events::event_envelope::Data::CoaPublished(published)) = &events.last().unwrap().data
    else {
        panic!("coa.published carries its payload");
    };
    assert_eq!(published.version, 2);
    assert_eq!(published.amends_coa_id.as_deref(), Some(original.id.as_str()));
}

#[tokio::test]
async fn publishing_the_amendment_of_a_coa_in_force_supersedes_it() {
    let app = spawn_app().await;
    let customer_id = Uuid::new_v4();
    let customer = app.customer(customer_id);
    let (sample, original) = app.published(customer_id).await;
    let qa = app.qa();

    app.amend_as(&qa, &original.id, "unit corrected")
        .await
        .expect("amend");
    // Only the newest COA of an accession takes results; the original is closed.
    app.record_as(&app.analyst(), &sample.accession, "Purity (HPLC)")
        .await
        .expect("record on the amendment");
    assert_refused(
        app.amend_as(&qa, &sample.accession, "again").await,
        ErrorCode::Conflict,
        Some("draft"),
    );
    app.submit_as(&app.analyst(), &sample.accession).await.unwrap();
    app.approve_as(&qa, &sample.accession).await.unwrap();
    let amendment = app.publish_as(&qa, &sample.accession).await.unwrap().coa.unwrap();

    let original_now = app.get_result_as(&customer, &original.id).await.unwrap();
    assert_eq!(original_now.status, "superseded");
    assert_eq!(original_now.superseded_by.as_deref(), Some(amendment.id.as_str()));
    let verdicts = app.verify(&[&original.id]).await;
    assert_eq!(verdicts[0].status, "superseded");
    assert_eq!(verdicts[0].superseded_by.as_deref(), Some(amendment.id.as_str()));
    // Amending the original again answers its amendment, unchanged; no third version opens.
    let again = app.amend_as(&qa, &original.id, "unit corrected").await.unwrap();
    assert!(again.unchanged);
    assert_eq!(again.coa.unwrap().id, amendment.id);
}

#[tokio::test]
async fn four_eyes_compares_operator_ids_whatever_names_the_tokens_carry() {
    let app = spawn_app().await;
    let sample = app.sample_in_testing(Uuid::new_v4()).await;
    let (ana, sol) = (Uuid::now_v7(), Uuid::now_v7());
    let analyst = app.keys.staff_with_id("ana", ana, &["lab.analyst"]);
    app.record_as(&analyst, &sample.accession, "Purity")
        .await
        .expect("record");
    let submitter = app.keys.staff_with_id("sol", sol, &["lab.analyst"]);
    app.submit_as(&submitter, &sample.accession)
        .await
        .expect("submit");

    // The analyst's and the submitter's ids under other names (as if renamed): refused.
    for (id, name) in [(ana, "quinn"), (sol, "quincy")] {
        let renamed = app.keys.staff_with_id(name, id, &["lab.qa"]);
        assert_refused(
            app.approve_as(&renamed, &sample.accession).await,
            ErrorCode::Forbidden,
            None,
        );
    }
    // Another operator who carries the analyst's name (registered later under a name that looks
    // the same) is another person: four eyes holds, and they may approve.
    let namesake = Uuid::now_v7();
    let approved = app
        .approve_as(
            &app.keys.staff_with_id("ana", namesake, &["lab.qa"]),
            &sample.accession,
        )
        .await
        .expect("a different operator approves");
    assert_eq!(approved.coa.unwrap().status, "approved");

    let (submitted_by_id, approved_by_id): (Option<Uuid>, Option<Uuid>) = sqlx::query_as(
        "SELECT submitted_by_id, approved_by_id FROM results.coas WHERE accession_number = $1",
    )
    .bind(&sample.accession)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((submitted_by_id, approved_by_id), (Some(sol), Some(namesake)));
    let analyst_ids: Vec<Option<Uuid>> = sqlx::query_scalar(
        "SELECT r.analyst_id FROM results.analyte_results r JOIN results.coas c ON c.id = r.coa_id \
         WHERE c.accession_number = $1",
    )
    .bind(&sample.accession)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(analyst_ids, vec![Some(ana)]);
}
