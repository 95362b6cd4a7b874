//! Test harness: a fresh database and stream prefix per test, the application on port 0, and
//! typed request helpers that return the platform error of a failed call.

use catalog_svc::{Application, Settings};
use platform::error::ApiError;
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::testing::DevTokens;
use proto::catalog as pb;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

/// Every customer scope the service knows.
pub const ALL_SCOPES: [&str; 2] = ["catalog:read", "quotes:write"];

pub struct TestApp {
    pub settings: Settings,
    pub client: CatalogServiceClient<Channel>,
    pub keys: DevTokens,
    pub pool: PgPool,
    pub customer_id: Uuid,
    shutdown: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts the application with default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the application after `configure` adjusted its settings.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    let mut settings = Settings::local(
        &database_url,
        &platform::testing::redis_url(),
        &platform::testing::unique_stream_prefix(),
    );
    settings.consumer_block = std::time::Duration::from_millis(100);
    settings.consumer_reclaim_idle = std::time::Duration::from_millis(500);
    configure(&mut settings);
    let application = Application::build(settings.clone())
        .await
        .expect("the application builds");
    let addr = application.local_addr();
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let client = CatalogServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to catalog-svc");
    let pool = PgPool::connect(&database_url)
        .await
        .expect("connect to the test database");
    let keys = DevTokens::new("catalog-svc");
    TestApp {
        settings,
        client,
        keys,
        pool,
        customer_id: Uuid::new_v4(),
        shutdown,
    }
}

fn status_error(status: tonic::Status) -> ApiError {
    ApiError::from_status(&status)
}

impl TestApp {
    /// A customer token of `customer_id` holding `scopes`.
    pub fn token_for(&self, customer_id: Uuid, scopes: &[&str]) -> String {
        self.keys.mint(&Principal {
            kind: PrincipalKind::Customer,
            subject: format!("key-{customer_id}"),
            customer_id: Some(customer_id),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            roles: Vec::new(),
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        })
    }

    /// A token of this test's customer holding every scope.
    pub fn customer_token(&self) -> String {
        self.token_for(self.customer_id, &ALL_SCOPES)
    }

    /// A staff token holding `roles`.
    pub fn staff_token(&self, roles: &[&str]) -> String {
        self.keys.staff("alice", roles)
    }

    pub async fn import_as(
        &self,
        token: &str,
        document: &Value,
    ) -> Result<pb::ImportCatalogResponse, ApiError> {
        let message = pb::ImportCatalogRequest {
            document_json: document.to_string(),
            note: "test import".into(),
        };
        let request = platform::grpc::outgoing(message, token);
        self.client
            .clone()
            .import_catalog(request)
            .await
            .map(|r| r.into_inner())
            .map_err(status_error)
    }

    /// Imports as a catalog admin and expects success.
    pub async fn import(&self, document: &Value) -> pb::ImportCatalogResponse {
        self.import_as(&self.staff_token(&["catalog.admin"]), document)
            .await
            .expect("the import succeeds")
    }

    pub async fn list_as(
        &self,
        token: &str,
        message: pb::ListCatalogItemsRequest,
    ) -> Result<pb::ListCatalogItemsResponse, ApiError> {
        let request = platform::grpc::outgoing(message, token);
        self.client
            .clone()
            .list_catalog_items(request)
            .await
            .map(|r| r.into_inner())
            .map_err(status_error)
    }

    pub async fn list(
        &self,
        message: pb::ListCatalogItemsRequest,
    ) -> Result<pb::ListCatalogItemsResponse, ApiError> {
        self.list_as(&self.customer_token(), message).await
    }

    pub async fn create_quote_as(
        &self,
        token: &str,
        message: pb::CreateQuoteRequest,
    ) -> Result<pb::Quote, ApiError> {
        let request = platform::grpc::outgoing(message, token);
        let response = self
            .client
            .clone()
            .create_quote(request)
            .await
            .map_err(status_error)?;
        Ok(response.into_inner().quote.expect("a created quote"))
    }

    pub async fn create_quote(&self, message: pb::CreateQuoteRequest) -> Result<pb::Quote, ApiError> {
        self.create_quote_as(&self.customer_token(), message).await
    }

    pub async fn get_quote_as(&self, token: &str, quote_id: &str) -> Result<pb::Quote, ApiError> {
        // A service reads a quote only for the customer it was asked to serve: the gateway's
        // delegation for this app's customer rides along (customer tokens ignore it).
        let request = platform::tokens::testing::delegated(
            platform::grpc::outgoing(
                pb::GetQuoteRequest {
                    quote_id: quote_id.to_owned(),
                },
                token,
            ),
            self.customer_id,
        );
        let response = self
            .client
            .clone()
            .get_quote(request)
            .await
            .map_err(status_error)?;
        Ok(response.into_inner().quote.expect("a quote"))
    }
}

/// Asserts an error's code and, when given, its `details.field`.
#[track_caller]
pub fn assert_error<T: std::fmt::Debug>(
    result: Result<T, ApiError>,
    code: &str,
    field: Option<&str>,
) -> ApiError {
    let error = result.expect_err("the call should fail");
    assert_eq!(error.code.as_str(), code, "unexpected error: {error:?}");
    if let Some(field) = field {
        let details = error.details.clone().unwrap_or_default();
        assert_eq!(details["field"], field, "unexpected details: {details}");
    }
    error
}

/// A simple quote request of one compound and one test.
pub fn quote_request(category: &str, compounds: &[&str], tests: &[&str]) -> pb::CreateQuoteRequest {
    pb::CreateQuoteRequest {
        category_id: category.to_owned(),
        compound_names: compounds.iter().map(|name| (*name).to_owned()).collect(),
        test_ids: tests.iter().map(|id| (*id).to_owned()).collect(),
        turnaround: None,
        conformity_samples: None,
    }
}

/// The ids of the items of a page.
pub fn ids(page: &pb::ListCatalogItemsResponse) -> Vec<String> {
    page.items.iter().map(|item| item.id.clone()).collect()
}

/// Every item id of the sample catalog, sorted.
pub const SAMPLE_IDS: [&str; 9] = [
    "endotoxin",
    "heavy-metals",
    "hplc-potency",
    "identity-ms",
    "micro-panel",
    "purity-panel",
    "residual-solvents",
    "sterility",
    "water-content",
];

fn test(id: &str, name: &str, method: &str, categories: &[&str], price: i64, container: &str) -> Value {
    json!({
        "id": id, "name": name, "description": format!("{name} of the submitted compound"), "method": method,
        "categoryIds": categories, "priceCents": price,
        "sampleRequirement": { "container": container, "amount": "10 mg", "notes": format!("for {id}") }
    })
}

/// A small catalog: 7 tests, 2 bundles, 3 categories, 2 matrices, 3 turnarounds.
pub fn sample_catalog() -> Value {
    json!({
        "categories": [
            { "id": "potency", "name": "Potency", "description": "Assay of the active compound",
              "conformitySamplePriceCents": 2500, "matrixIds": ["powder", "liquid"] },
            { "id": "purity", "name": "Purity", "description": "Impurities and contaminants",
              "conformitySamplePriceCents": 1000, "matrixIds": ["powder"] },
            { "id": "microbiology", "name": "Microbiology", "description": "Sterility and endotoxins",
              "conformitySamplePriceCents": 1500, "matrixIds": ["powder", "liquid"] }
        ],
        "matrices": [
            { "id": "powder", "name": "Powder", "description": "Lyophilized powder" },
            { "id": "liquid", "name": "Liquid", "description": "Solutions" }
        ],
        "turnarounds": [
            { "id": "standard", "name": "Standard", "businessDays": 10, "surchargeBasisPoints": 0 },
            { "id": "expedited", "name": "Expedited", "businessDays": 5, "surchargeBasisPoints": 5000 },
            { "id": "rush", "name": "Rush", "businessDays": 2, "surchargeBasisPoints": 10000 }
        ],
        "tests": [
            test("hplc-potency", "HPLC potency", "HPLC-UV", &["potency", "purity"], 12345, "2 mL amber glass vial"),
            test("heavy-metals", "Heavy metals", "ICP-MS", &["potency", "purity"], 15050, "15 mL tube"),
            test("residual-solvents", "Residual solvents", "GC-MS", &["purity"], 9999, "10 mL headspace vial"),
            test("identity-ms", "Identity", "LC-MS", &["potency"], 7500, "1 mL vial"),
            test("water-content", "Water content", "Karl Fischer titration", &["purity", "potency"], 4500, "5 mL vial"),
            test("endotoxin", "Bacterial endotoxins", "LAL kinetic chromogenic", &["microbiology"], 8900, "sterile tube"),
            test("sterility", "Sterility", "Membrane filtration", &["microbiology"], 21000, "sterile bottle")
        ],
        "bundles": [
            { "id": "purity-panel", "name": "Purity panel", "description": "Solvents and metals",
              "categoryIds": ["purity"], "testIds": ["residual-solvents", "heavy-metals"], "priceCents": 22000 },
            { "id": "micro-panel", "name": "Microbiology panel", "description": "Endotoxins and sterility",
              "categoryIds": ["microbiology"], "testIds": ["endotoxin", "sterility"], "priceCents": 27000 }
        ]
    })
}
