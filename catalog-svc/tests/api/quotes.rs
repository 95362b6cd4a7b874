//! CreateQuote and GetQuote: exact pricing, every validation error, tenancy and scopes.

use crate::helpers::{assert_error, quote_request, sample_catalog, spawn_app, spawn_app_with};
use platform::grpc::{IDEMPOTENT_REPLAYED, outgoing_idempotent};
use uuid::Uuid;

#[tokio::test]
async fn a_quote_is_priced_exactly_and_stored_immutably() {
    let app = spawn_app().await;
    let imported = app.import(&sample_catalog()).await;
    let mut request = quote_request(
        "purity",
        &["BPC-157", " TB-500 ", "GHK-Cu"],
        &["hplc-potency", "purity-panel"],
    );
    request.turnaround = Some("expedited".into());
    request.conformity_samples = Some(3);
    let quote = app.create_quote(request).await.unwrap();

    assert_eq!(quote.customer_id, app.customer_id.to_string());
    assert_eq!(quote.catalog_revision, imported.catalog_revision);
    assert_eq!(
        (quote.category_id.as_str(), quote.turnaround.as_str()),
        ("purity", "expedited")
    );
    assert_eq!((quote.turnaround_business_days, quote.conformity_samples), (5, 3));
    let compounds: Vec<&str> = quote
        .lines
        .iter()
        .map(|line| line.compound_name.as_str())
        .collect();
    assert_eq!(compounds, ["BPC-157", "TB-500", "GHK-Cu"]);
    for (index, line) in quote.lines.iter().enumerate() {
        assert_eq!(line.line_number, index as i32 + 1);
        let items: Vec<(&str, &str, i64)> = line
            .items
            .iter()
            .map(|item| (item.item_id.as_str(), item.kind.as_str(), item.price_cents))
            .collect();
        assert_eq!(
            items,
            [
                ("hplc-potency", "test", 12_345),
                ("purity-panel", "bundle", 22_000)
            ]
        );
        assert_eq!(line.items[1].test_ids, ["residual-solvents", "heavy-metals"]);
        assert_eq!(line.subtotal_cents, 34_345);
        let containers: Vec<&str> = line
            .sample_requirements
            .iter()
            .map(|r| r.container.as_str())
            .collect();
        assert_eq!(
            containers,
            ["2 mL amber glass vial", "10 mL headspace vial", "15 mL tube"]
        );
    }
    assert_eq!(quote.analysis_subtotal_cents, 103_035);
    let charges: Vec<(&str, i64, i64, i64)> = quote
        .charges
        .iter()
        .map(|c| (c.kind.as_str(), c.quantity, c.unit_price_cents, c.amount_cents))
        .collect();
    // 103 035 × 5 000 bps = 51 517.5 cents, rounded half away from zero.
    assert_eq!(
        charges,
        [
            ("turnaround_surcharge", 1, 51_518, 51_518),
            ("conformity_samples", 3, 1_000, 3_000)
        ]
    );
    assert_eq!(quote.total_cents, 157_553);
    assert_eq!(quote.currency, "USD");
    let created = quote.created_at.unwrap();
    let expires = quote.expires_at.unwrap();
    assert_eq!(expires.seconds - created.seconds, 900);
    assert_eq!(expires.nanos, created.nanos);

    let read = app.get_quote_as(&app.customer_token(), &quote.id).await.unwrap();
    assert_eq!(read, quote);
}

#[tokio::test]
async fn a_quote_before_any_import_is_unavailable() {
    let app = spawn_app().await;
    assert_error(
        app.create_quote(quote_request("purity", &["A"], &["heavy-metals"]))
            .await,
        "catalog_unavailable",
        None,
    );
}

#[tokio::test]
async fn every_quote_validation_error_has_its_code_and_field() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let many_compounds: Vec<String> = (0..51).map(|n| format!("compound {n}")).collect();
    let many_compounds: Vec<&str> = many_compounds.iter().map(String::as_str).collect();
    let long_name = "x".repeat(201);
    let cases = [
        (
            quote_request("", &["A"], &["heavy-metals"]),
            "invalid_request",
            "categoryId",
        ),
        (
            quote_request("toxicology", &["A"], &["heavy-metals"]),
            "unknown_category",
            "categoryId",
        ),
        (
            quote_request("purity", &[], &["heavy-metals"]),
            "invalid_request",
            "compoundNames",
        ),
        (
            quote_request("purity", &many_compounds, &["heavy-metals"]),
            "invalid_request",
            "compoundNames",
        ),
        (
            quote_request("purity", &["A", " "], &["heavy-metals"]),
            "invalid_request",
            "compoundNames[1]",
        ),
        (
            quote_request("purity", &[&long_name], &["heavy-metals"]),
            "invalid_request",
            "compoundNames[0]",
        ),
        (
            quote_request("purity", &["A", "B", "A "], &["heavy-metals"]),
            "duplicate_compound",
            "compoundNames[2]",
        ),
        (quote_request("purity", &["A"], &[]), "invalid_request", "testIds"),
        (
            quote_request("purity", &["A"], &["heavy-metals"; 51]),
            "invalid_request",
            "testIds",
        ),
        (
            quote_request("purity", &["A"], &["heavy-metals", "nmr"]),
            "unknown_test",
            "testIds[1]",
        ),
        (
            quote_request("purity", &["A"], &["sterility"]),
            "test_not_in_category",
            "testIds[0]",
        ),
        (
            quote_request("purity", &["A"], &["water-content", "water-content"]),
            "duplicate_test",
            "testIds[1]",
        ),
        (
            quote_request("purity", &["A"], &["heavy-metals", "purity-panel"]),
            "duplicate_test",
            "testIds[1]",
        ),
    ];
    for (request, code, field) in cases {
        assert_error(app.create_quote(request).await, code, Some(field));
    }
    let mut request = quote_request("purity", &["A"], &["heavy-metals"]);
    request.turnaround = Some("overnight".into());
    assert_error(
        app.create_quote(request.clone()).await,
        "unknown_turnaround",
        Some("turnaround"),
    );
    request.turnaround = None;
    request.conformity_samples = Some(-1);
    assert_error(
        app.create_quote(request.clone()).await,
        "invalid_request",
        Some("conformitySamples"),
    );
    request.conformity_samples = Some(101);
    assert_error(
        app.create_quote(request.clone()).await,
        "invalid_request",
        Some("conformitySamples"),
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.quotes")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 0);
    // Compound names are case-sensitive: "a" and "A" are two compounds.
    let quote = app
        .create_quote(quote_request("purity", &["A", "a"], &["heavy-metals"]))
        .await
        .unwrap();
    assert_eq!(
        (quote.lines.len(), quote.total_cents, quote.charges.len()),
        (2, 30_100, 0)
    );
}

#[tokio::test]
async fn another_customers_quote_is_quote_not_found() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let quote = app
        .create_quote(quote_request("potency", &["A"], &["identity-ms"]))
        .await
        .unwrap();
    let other = app.token_for(Uuid::new_v4(), &["quotes:write"]);
    assert_error(app.get_quote_as(&other, &quote.id).await, "quote_not_found", None);
    assert_error(
        app.get_quote_as(&app.customer_token(), &Uuid::new_v4().to_string())
            .await,
        "quote_not_found",
        None,
    );
    assert_error(
        app.get_quote_as(&app.customer_token(), "not-a-uuid").await,
        "quote_not_found",
        None,
    );

    let orders_svc = app.keys.mint_service("orders-svc", Some(app.customer_id));
    assert_eq!(app.get_quote_as(&orders_svc, &quote.id).await.unwrap(), quote);
    // orders-svc naming another customer than the one it was asked to serve is refused before
    // the quote is looked up.
    let orders_svc_elsewhere = app.keys.mint_service("orders-svc", Some(Uuid::new_v4()));
    assert_error(
        app.get_quote_as(&orders_svc_elsewhere, &quote.id).await,
        "forbidden",
        None,
    );
}

#[tokio::test]
async fn only_orders_svc_among_services_reads_quotes_and_only_with_its_own_key() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let quote = app
        .create_quote(quote_request("potency", &["A"], &["identity-ms"]))
        .await
        .unwrap();
    let webhooks_svc = app.keys.mint_service("webhooks-svc", Some(app.customer_id));
    assert_error(
        app.get_quote_as(&webhooks_svc, &quote.id).await,
        "forbidden",
        None,
    );
    // payments-svc's key signing a principal that claims to be orders-svc.
    let posing = app.keys.forged_by(
        "payments-svc",
        &platform::principal::Principal::service("orders-svc", Some(app.customer_id)),
    );
    assert_error(
        app.get_quote_as(&posing, &quote.id).await,
        "unauthenticated",
        None,
    );
    // orders-svc's key cannot mint a customer principal either.
    let customer = platform::principal::Principal {
        kind: platform::principal::PrincipalKind::Customer,
        subject: "key".into(),
        customer_id: Some(app.customer_id),
        scopes: vec!["quotes:write".into()],
        roles: vec![],
        spend_limit_cents: None,
        operator_id: None,
        credential_id: None,
        sandbox: false,
    };
    let forged = app.keys.forged_by("orders-svc", &customer);
    assert_error(
        app.get_quote_as(&forged, &quote.id).await,
        "unauthenticated",
        None,
    );
}

#[tokio::test]
async fn a_token_addressed_to_another_service_is_refused() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let for_orders = platform::tokens::testing::DevTokens::new("orders-svc")
        .customer(app.customer_id, &["catalog:read", "quotes:write"]);
    assert_error(
        app.create_quote_as(&for_orders, quote_request("potency", &["A"], &["identity-ms"]))
            .await,
        "unauthenticated",
        None,
    );
}

#[tokio::test]
async fn an_expired_quote_is_still_returned_with_its_expiry() {
    let app = spawn_app_with(|settings| settings.quote_ttl = std::time::Duration::ZERO).await;
    app.import(&sample_catalog()).await;
    let quote = app
        .create_quote(quote_request("potency", &["A"], &["identity-ms"]))
        .await
        .unwrap();
    assert_eq!(quote.expires_at, quote.created_at);
    let read = app.get_quote_as(&app.customer_token(), &quote.id).await.unwrap();
    assert_eq!(read.expires_at, quote.expires_at);
}

#[tokio::test]
async fn quote_operations_without_the_quotes_write_scope_are_insufficient_scope() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let quote = app
        .create_quote(quote_request("potency", &["A"], &["identity-ms"]))
        .await
        .unwrap();
    let read_only = app.token_for(app.customer_id, &["catalog:read"]);
    let request = quote_request("potency", &["A"], &["identity-ms"]);
    assert_error(
        app.create_quote_as(&read_only, request).await,
        "insufficient_scope",
        None,
    );
    assert_error(
        app.get_quote_as(&read_only, &quote.id).await,
        "insufficient_scope",
        None,
    );
    let staff = app.staff_token(&["catalog.admin"]);
    assert_error(app.get_quote_as(&staff, &quote.id).await, "forbidden", None);
}

#[tokio::test]
async fn a_repeated_idempotency_key_returns_the_same_quote() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let token = app.customer_token();
    let request = quote_request("potency", &["A"], &["identity-ms"]);
    let send = |message| {
        let mut client = app.client.clone();
        let request = outgoing_idempotent(message, &token, "quote-key-0001");
        async move { client.create_quote(request).await }
    };
    let first = send(request.clone()).await.unwrap();
    assert!(first.metadata().get(IDEMPOTENT_REPLAYED).is_none());
    let second = send(request.clone()).await.unwrap();
    assert_eq!(second.metadata().get(IDEMPOTENT_REPLAYED).unwrap(), "true");
    assert_eq!(second.get_ref().quote, first.get_ref().quote);
    let mut other = request;
    other.compound_names = vec!["B".into()];
    let error = platform::error::ApiError::from_status(&send(other).await.unwrap_err());
    assert_eq!(error.code.as_str(), "idempotency_key_reused");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.quotes")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 1);
}
