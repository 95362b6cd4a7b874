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
            identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL,
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

/// A staff token for `audience` carrying `roles`, as labctl asks the identity API for one.
async fn staff_token(sandbox: &Sandbox, credential: &str, audience: &str, roles: &[&str]) -> String {
    let mut identity = proto::identity::identity_service_client::IdentityServiceClient::connect(
        sandbox.in_process().identity_uri.clone(),
    )
    .await
    .unwrap();
    let message = proto::identity::IssueStaffTokenRequest {
        credential: credential.to_owned(),
        audience: audience.to_owned(),
        roles: roles.iter().map(|role| (*role).to_owned()).collect(),
    };
    identity
        .issue_staff_token(message)
        .await
        .unwrap()
        .into_inner()
        .token
}

/// How orders-svc and results-svc answer `token`'s staff token: starting testing of an order
/// that does not exist (an admitted token gets `not_found`) and reading a COA that does not.
async fn answers(sandbox: &Sandbox, orders_token: &str, results_token: &str) -> (tonic::Code, tonic::Code) {
    let mesh = sandbox.in_process();
    let mut orders =
        proto::orders::orders_service_client::OrdersServiceClient::connect(mesh.orders_uri.clone())
            .await
            .unwrap();
    let start = proto::orders::StartTestingRequest {
        order_reference: "ORD-2026-999999".into(),
    };
    let orders_code = orders
        .start_testing(platform::grpc::outgoing(start, orders_token))
        .await
        .map_or_else(|status| status.code(), |_| tonic::Code::Ok);
    let mut results =
        proto::results::results_service_client::ResultsServiceClient::connect(mesh.results_uri.clone())
            .await
            .unwrap();
    let read = proto::results::AccessionRequest {
        accession_number: "ACC-2026-999999".into(),
    };
    let results_code = results
        .get_lab_coa(platform::grpc::outgoing(read, results_token))
        .await
        .map_or_else(|status| status.code(), |_| tonic::Code::Ok);
    (orders_code, results_code)
}

#[tokio::test]
async fn a_disabled_operators_staff_tokens_stop_working_at_every_service_within_seconds() {
    let sandbox = Sandbox::start().await;
    let mut credentials = Vec::new();
    for name in ["tess", "theo"] {
        let created = sandbox
            .labctl(&["operators", "create", name, "--roles", "lab.technician"])
            .await
            .unwrap();
        credentials.push(created["credential"].as_str().unwrap().to_owned());
    }
    let mut tokens = Vec::new();
    for credential in &credentials {
        let orders = staff_token(&sandbox, credential, "orders-svc", &["lab.technician"]).await;
        let results = staff_token(&sandbox, credential, "results-svc", &[]).await;
        tokens.push((orders, results));
    }
    let (tess, theo) = (&tokens[0], &tokens[1]);
    let admitted = (tonic::Code::NotFound, tonic::Code::NotFound);
    assert_eq!(answers(&sandbox, &tess.0, &tess.1).await, admitted);

    sandbox.labctl(&["operators", "disable", "tess"]).await.unwrap();
    let refused = (tonic::Code::Unauthenticated, tonic::Code::Unauthenticated);
    platform::testing::wait_for(
        "tess's tokens to be refused by orders-svc and results-svc",
        std::time::Duration::from_secs(10),
        || async { (answers(&sandbox, &tess.0, &tess.1).await == refused).then_some(()) },
    )
    .await;
    assert_eq!(
        answers(&sandbox, &theo.0, &theo.1).await,
        admitted,
        "another operator's tokens still work"
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn a_qa_officer_registered_by_one_admin_is_activated_by_another_who_receives_the_credential() {
    let sandbox = Sandbox::start().await;
    // The development operator registers two admins at once (development mode only).
    let mut admins = Vec::new();
    for name in ["alice", "bob"] {
        let created = sandbox
            .labctl(&["operators", "create", name, "--roles", "identity.admin"])
            .await
            .unwrap();
        admins.push(created["credential"].as_str().unwrap().to_owned());
    }
    let (alice, bob) = (&admins[0], &admins[1]);
    let mixed = sandbox
        .labctl_as(
            alice,
            &[
                "operators",
                "create",
                "mallory",
                "--roles",
                "identity.admin,lab.qa",
            ],
        )
        .await
        .unwrap_err();
    assert!(
        mixed.to_string().contains("cannot also hold lab roles"),
        "{mixed}"
    );

    let requested = sandbox
        .labctl_as(alice, &["operators", "create", "quinn", "--roles", "lab.qa"])
        .await
        .unwrap();
    assert_eq!(requested["status"], "pending");
    assert!(requested["credential"].is_null(), "{requested}");
    let own = sandbox
        .labctl_as(alice, &["operators", "approve", "quinn"])
        .await
        .unwrap_err();
    assert!(own.to_string().contains("four eyes"), "{own}");
    let approved = sandbox
        .labctl_as(bob, &["operators", "approve", "quinn"])
        .await
        .unwrap();
    assert_eq!(
        (approved["status"].as_str(), approved["approvedBy"].as_str()),
        (Some("active"), Some("bob"))
    );
    let quinn = approved["credential"].as_str().unwrap();
    // quinn acts as QA: admitted to approve (nothing to approve here).
    let nothing = sandbox
        .labctl_as(quinn, &["results", "approve", "--accession", "ACC-2026-999999"])
        .await
        .unwrap_err();
    assert!(nothing.to_string().contains("not_found"), "{nothing}");
    // An admin never does lab work.
    let lab_work = sandbox
        .labctl_as(alice, &["results", "approve", "--accession", "ACC-2026-999999"])
        .await
        .unwrap_err();
    assert!(
        lab_work.to_string().contains("does not hold lab.qa"),
        "{lab_work}"
    );
    sandbox.stop().await;
}
