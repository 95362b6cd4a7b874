//! The controls on operators: an admin never holds a lab role (so it cannot give one to itself),
//! a QA officer or an admin needs a second admin's approval (compared by operator id), the
//! development operator's exemption exists in development mode only, and disabling an operator
//! or rotating its credential revokes the staff tokens already issued.

use crate::helpers::{TestApp, spawn_app, spawn_production};
use identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL;
use platform::principal::{Principal, roles};
use platform::tokens::testing::operator_id;
use platform::tokens::{STAFF_TOKEN_TTL, TokenIssuer};
use proto::identity as pb;
use proto::identity::identity_service_client::IdentityServiceClient;
use tonic::Code;
use tonic::transport::Channel;

fn create(name: &str, roles: &str) -> pb::CreateOperatorRequest {
    pb::CreateOperatorRequest {
        name: name.into(),
        roles: roles.split(',').map(str::to_owned).collect(),
    }
}

fn approve(name: &str) -> pb::ApproveOperatorRequest {
    pb::ApproveOperatorRequest { name: name.into() }
}

/// A request for a staff token addressed to identity-svc itself.
fn issue(credential: &str, roles: &[&str]) -> pb::IssueStaffTokenRequest {
    crate::helpers::issue(credential, platform::mesh::IDENTITY_SVC, roles)
}

/// A request to the identity API as the admin `name` (id derived from the name).
fn as_admin<T>(app: &TestApp, name: &str, message: T) -> tonic::Request<T> {
    platform::grpc::outgoing(message, &app.identity.keys.staff(name, &[roles::IDENTITY_ADMIN]))
}

/// A staff token addressed to identity-svc holding `identity.admin`, issued for `credential`.
async fn admin_token(client: &mut IdentityServiceClient<Channel>, credential: &str) -> String {
    client
        .issue_staff_token(issue(credential, &[roles::IDENTITY_ADMIN]))
        .await
        .unwrap()
        .into_inner()
        .token
}

/// An admin registered by alice and approved by bob; returns its credential.
async fn approved_admin(app: &TestApp, name: &str) -> String {
    let mut client = app.identity.client().await;
    client
        .create_operator(as_admin(app, "alice", create(name, "identity.admin")))
        .await
        .unwrap();
    client
        .approve_operator(as_admin(app, "bob", approve(name)))
        .await
        .unwrap()
        .into_inner()
        .credential
}

#[tokio::test]
async fn an_admin_cannot_hold_lab_roles_so_no_admin_gives_itself_one() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let mixed = client
        .create_operator(app.identity.admin(create("mallory", "identity.admin,lab.qa")))
        .await
        .unwrap_err();
    assert_eq!(mixed.code(), Code::InvalidArgument);
    assert!(mixed.message().contains("identity.admin"), "{mixed:?}");
    // `all` is every role but the lab roles.
    let everything = client
        .create_operator(app.identity.admin(create("root2", "all")))
        .await
        .unwrap()
        .into_inner()
        .operator
        .unwrap();
    assert!(everything.roles.contains(&roles::IDENTITY_ADMIN.to_owned()));
    assert!(!everything.roles.iter().any(|role| role.starts_with("lab.")));

    // An admin registered with lab roles before the rule gets no token for lab work.
    let legacy = approved_admin(&app, "legacy").await;
    sqlx::query("UPDATE identity.operators SET roles = roles || '{lab.analyst}' WHERE name = 'legacy'")
        .execute(&app.pool)
        .await
        .unwrap();
    let lab_work = client
        .issue_staff_token(issue(&legacy, &[roles::LAB_ANALYST]))
        .await
        .unwrap_err();
    assert_eq!(lab_work.code(), Code::PermissionDenied);
    assert!(lab_work.message().contains("cannot act in the lab"));
    assert!(
        client
            .issue_staff_token(issue(&legacy, &[roles::IDENTITY_ADMIN]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_qa_officer_waits_for_a_second_admin_who_receives_the_credential_once() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let requested = client
        .create_operator(as_admin(&app, "alice", create("quinn", "lab.qa")))
        .await
        .unwrap()
        .into_inner();
    let pending = requested.operator.unwrap();
    assert_eq!(
        (
            pending.status.as_str(),
            requested.credential.as_str(),
            pending.public_id.as_str()
        ),
        ("pending", "", "")
    );
    // The admin who asked cannot approve, whatever name its token carries.
    for name in ["alice", "bob"] {
        let own = platform::grpc::outgoing(
            approve("quinn"),
            &app.identity
                .keys
                .staff_with_id(name, operator_id("alice"), &[roles::IDENTITY_ADMIN]),
        );
        let refused = client.approve_operator(own).await.unwrap_err();
        assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
        assert!(refused.message().contains("four eyes"));
    }
    let approved = client
        .approve_operator(as_admin(&app, "bob", approve("quinn")))
        .await
        .unwrap()
        .into_inner();
    let operator = approved.operator.unwrap();
    assert_eq!(operator.status, "active");
    assert_eq!(operator.approved_by.as_deref(), Some("bob"));
    assert!(approved.credential.starts_with("lab_op_"));
    let issued = client
        .issue_staff_token(pb::IssueStaffTokenRequest {
            credential: approved.credential,
            audience: "results-svc".into(),
            roles: vec![roles::LAB_QA.into()],
        })
        .await
        .unwrap();
    assert_eq!(issued.into_inner().operator, "quinn");
    // Shown once: approving again is refused.
    let again = client
        .approve_operator(as_admin(&app, "carol", approve("quinn")))
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);

    // An admin waits too; an analyst does not.
    let admin = client
        .create_operator(as_admin(&app, "alice", create("dora", "identity.admin")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(admin.operator.unwrap().status, "pending");
    let analyst = client
        .create_operator(as_admin(
            &app,
            "alice",
            create("ana", "lab.technician,lab.analyst"),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(analyst.operator.unwrap().status, "active");
    assert!(analyst.credential.starts_with("lab_op_"));
}

#[tokio::test]
async fn only_the_development_operator_in_development_mode_registers_a_qa_officer_at_once() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let token = client
        .issue_staff_token(issue(DEV_OPERATOR_CREDENTIAL, &[roles::IDENTITY_ADMIN]))
        .await
        .unwrap()
        .into_inner()
        .token;
    let created = client
        .create_operator(platform::grpc::outgoing(create("qa-demo", "lab.qa"), &token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.operator.unwrap().status, "active");
    assert!(created.credential.starts_with("lab_op_"));

    // Outside development mode, a token naming the development operator changes nothing.
    let production = spawn_production(&platform::testing::fresh_database().await, &app.stream_prefix).await;
    let principal = Principal::staff(
        "dev-operator",
        uuid::Uuid::now_v7(),
        None,
        vec![roles::IDENTITY_ADMIN.into()],
    );
    let token = TokenIssuer::new(platform::mesh::IDENTITY_SVC, production.signing_key.clone()).mint(
        &principal,
        platform::mesh::IDENTITY_SVC,
        STAFF_TOKEN_TTL,
    );
    let created = production
        .client()
        .await
        .create_operator(platform::grpc::outgoing(create("qa-demo", "lab.qa"), &token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.operator.unwrap().status, "pending");
    assert!(created.credential.is_empty());
}

#[tokio::test]
async fn disabling_an_operator_or_rotating_its_credential_revokes_the_tokens_already_issued() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let list = |token: &str| platform::grpc::outgoing(pb::ListOperatorsRequest {}, token);

    let dora = approved_admin(&app, "dora").await;
    let first = admin_token(&mut client, &dora).await;
    assert!(client.list_operators(list(&first)).await.is_ok());
    let rotated = app.rotate_credential("dora").await;
    let refused = client.list_operators(list(&first)).await.unwrap_err();
    assert_eq!(
        refused.code(),
        Code::Unauthenticated,
        "the old credential's token"
    );
    let second = admin_token(&mut client, &rotated).await;
    assert!(
        client.list_operators(list(&second)).await.is_ok(),
        "a token of the new credential, issued in the same second"
    );

    let erin = approved_admin(&app, "erin").await;
    let erins = admin_token(&mut client, &erin).await;
    client
        .disable_operator(
            app.identity
                .admin(pb::DisableOperatorRequest { name: "dora".into() }),
        )
        .await
        .unwrap();
    let disabled = client.list_operators(list(&second)).await.unwrap_err();
    assert_eq!(disabled.code(), Code::Unauthenticated);
    assert!(
        client.list_operators(list(&erins)).await.is_ok(),
        "another operator's token"
    );
    let recorded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM identity.staff_revocations r JOIN identity.operators o ON o.id = r.operator_id \
         WHERE o.name = 'dora'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(recorded, 2, "the rotation and the disabling");
}

#[tokio::test]
async fn bootstrap_registers_the_first_two_admins_without_lab_roles() {
    let app = spawn_app().await;
    let settings = identity_svc::Settings::local(
        &app.database_url,
        &platform::testing::redis_url(),
        &app.stream_prefix,
    );
    let all = ["all".to_owned()];
    let lab = ["identity.admin".to_owned(), "lab.qa".to_owned()];
    let error = identity_svc::bootstrap_operator(&settings, "mixed", &lab)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot also hold lab roles"),
        "{error}"
    );
    let no_admin = ["payments.admin".to_owned()];
    assert!(
        identity_svc::bootstrap_operator(&settings, "clerk", &no_admin)
            .await
            .is_err()
    );
    // This identity-svc runs in development mode: its development operator (an enabled admin) is set
    // aside so that the count starts from none.
    sqlx::query("UPDATE identity.operators SET disabled_at = now() WHERE name = 'dev-operator'")
        .execute(&app.pool)
        .await
        .unwrap();
    for name in ["root", "second"] {
        let credential = identity_svc::bootstrap_operator(&settings, name, &all)
            .await
            .unwrap();
        assert!(credential.starts_with("lab_op_"));
    }
    let third = identity_svc::bootstrap_operator(&settings, "third", &all)
        .await
        .unwrap_err();
    assert!(third.to_string().contains("identity.admin"), "{third}");
}
