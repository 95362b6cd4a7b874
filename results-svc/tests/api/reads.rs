//! Tenant isolation of the customer's reads: another customer's COA is the same `not_found` as a
//! missing one, by id and by accession, and never listed; an unpublished COA is never read.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::results as pb;
use uuid::Uuid;

#[tokio::test]
async fn another_customers_coa_is_indistinguishable_from_a_missing_one() {
    let app = spawn_app().await;
    let (owner, stranger) = (Uuid::new_v4(), Uuid::new_v4());
    let (sample, coa) = app.published(owner).await;
    let owner_token = app.customer(owner);
    let stranger_token = app.customer(stranger);

    assert_eq!(app.get_result_as(&owner_token, &coa.id).await.unwrap().id, coa.id);
    for reference in [coa.id.as_str(), sample.accession.as_str()] {
        let theirs = app.get_result_as(&stranger_token, reference).await.unwrap_err();
        let missing = app
            .get_result_as(&stranger_token, &Uuid::now_v7().to_string())
            .await
            .unwrap_err();
        assert_eq!(theirs.code, ErrorCode::NotFound);
        assert_eq!(
            (theirs.message, theirs.details),
            (missing.message, missing.details)
        );
    }
    let listed = app
        .list_results_as(&stranger_token, pb::ListResultsRequest::default())
        .await
        .unwrap();
    assert!(listed.coas.is_empty());
    let by_order = pb::ListResultsRequest {
        order_id: Some(sample.order_id.to_string()),
        ..Default::default()
    };
    assert!(
        app.list_results_as(&stranger_token, by_order.clone())
            .await
            .unwrap()
            .coas
            .is_empty()
    );
    let owners = app.list_results_as(&owner_token, by_order).await.unwrap();
    assert_eq!(owners.coas.len(), 1);
    assert_eq!(owners.coas[0].id, coa.id);
}

#[tokio::test]
async fn an_unpublished_coa_is_never_read_or_listed_by_its_own_customer() {
    let app = spawn_app().await;
    let customer_id = Uuid::new_v4();
    let token = app.customer(customer_id);
    let sample = app.sample_in_testing(customer_id).await;
    app.pay(&sample).await;
    app.record_as(&app.analyst(), &sample.accession, "Purity")
        .await
        .unwrap();
    let draft = app.lab_coa(&app.qa(), &sample.accession).await.unwrap();
    for step in ["draft", "submitted", "approved"] {
        match step {
            "submitted" => {
                app.submit_as(&app.analyst(), &sample.accession).await.unwrap();
            }
            "approved" => {
                app.approve_as(&app.qa(), &sample.accession).await.unwrap();
            }
            _ => {}
        }
        assert_eq!(
            app.lab_coa(&app.qa(), &sample.accession).await.unwrap().status,
            step
        );
        for reference in [draft.id.as_str(), sample.accession.as_str()] {
            let error = app.get_result_as(&token, reference).await.unwrap_err();
            assert_eq!(error.code, ErrorCode::NotFound, "{step} {reference}");
        }
        assert!(
            app.list_results_as(&token, Default::default())
                .await
                .unwrap()
                .coas
                .is_empty()
        );
    }
}
