//! Lab staff act as themselves across the mesh: an operator's own credential, a token per command
//! with only the role it needs, refusals for roles the operator lacks, and an audit trail naming
//! the real operator.

use crate::support::bank_order;
use tests::Sandbox;

#[tokio::test]
async fn an_operator_without_payments_admin_cannot_record_a_payment_and_the_recorded_payment_names_its_operator()
 {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Audit Labs", "all").await;
    let (_, invoice, total) = bank_order(&sandbox, &agent, "audit-order-1").await;

    let clerk = sandbox
        .labctl(&["operators", "create", "clerk", "--roles", "catalog.admin"])
        .await
        .unwrap();
    let clerk_credential = clerk["credential"].as_str().unwrap().to_owned();
    let treasurer = sandbox
        .labctl(&["operators", "create", "treasurer", "--roles", "payments.admin"])
        .await
        .unwrap();
    let treasurer_credential = treasurer["credential"].as_str().unwrap().to_owned();
    let record = [
        "payments",
        "record",
        "--invoice",
        &invoice,
        "--amount-cents",
        &total,
        "--bank-reference",
        "AUDIT-REF-1",
    ];

    let refused = sandbox.labctl_as(&clerk_credential, &record).await.unwrap_err();
    assert!(
        refused.to_string().contains("does not hold payments.admin"),
        "{refused}"
    );
    let unpaid = sandbox.get(&agent.key, &format!("/invoices/{invoice}")).await;
    assert_eq!(unpaid.body["data"]["invoice"]["status"], "open");

    let recorded = sandbox.labctl_as(&treasurer_credential, &record).await.unwrap();
    assert_eq!(recorded["invoice"]["status"], "paid");
    assert_eq!(recorded["recordedBy"], "treasurer");
    // Recorded again by someone else: still the treasurer's payment.
    let again = sandbox.labctl(&record).await.unwrap();
    assert_eq!(again["alreadyRecorded"], true);
    assert_eq!(again["recordedBy"], "treasurer");

    // The treasurer cannot manage operators or keys either.
    let escalation = sandbox
        .labctl_as(
            &treasurer_credential,
            &["operators", "create", "mallory", "--roles", "all"],
        )
        .await
        .unwrap_err();
    assert!(
        escalation.to_string().contains("does not hold identity.admin"),
        "{escalation}"
    );
}

#[tokio::test]
async fn a_mesh_outside_development_mode_runs_the_order_flow_on_its_own_keys_and_refuses_development_ones() {
    let sandbox = Sandbox::start_outside_development_mode().await;
    let agent = sandbox.customer("Production Labs", "all").await;
    let (_, invoice, total) = bank_order(&sandbox, &agent, "prod-order-1").await;
    let recorded = crate::support::record_bank_payment(&sandbox, &invoice, &total, "PROD-1").await;
    assert_eq!(recorded["recordedBy"], "root");

    // The published development operator and development-signed tokens get nowhere here.
    let development = sandbox
        .labctl_as(
            gateway::domain::operator::DEV_OPERATOR_CREDENTIAL,
            &["customers", "list"],
        )
        .await
        .unwrap_err();
    assert!(
        development.to_string().contains("unauthenticated"),
        "{development}"
    );
    let forged =
        platform::tokens::testing::DevTokens::new("payments-svc").staff("mallory", &["payments.admin"]);
    let mut payments = proto::payments::payments_service_client::PaymentsServiceClient::connect(
        sandbox.in_process().payments_uri.clone(),
    )
    .await
    .unwrap();
    let request = platform::grpc::outgoing(
        proto::payments::RecordBankPaymentRequest {
            invoice_reference: invoice,
            amount_cents: 1,
            bank_reference: "FORGED-1".into(),
            received_at: None,
        },
        &forged,
    );
    let refused = payments.record_bank_payment(request).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
}
