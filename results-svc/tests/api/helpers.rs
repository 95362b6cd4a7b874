//! Test harness: results-svc on a fresh database and a unique stream prefix, the events it learns
//! from (orders-svc's `sample.received` and `testing.started`, payments-svc's
//! `payment.confirmed`) appended to its streams as the other services' relays would, and typed
//! gRPC helpers that return the platform error of a refused call.

use platform::error::ApiError;
use platform::principal::roles;
use platform::testing::events::{outbox_events_of, redis_connection, xadd};
use platform::tokens::testing::DevTokens;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::results as pb;
use proto::results::registry_service_client::RegistryServiceClient;
use proto::results::results_service_client::ResultsServiceClient;
use results_svc::{Application, Settings};
use sqlx::PgPool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

/// The catalog test every sample of these tests is ordered with.
pub const TEST_ID: &str = "hplc-purity";

pub struct TestApp {
    pub addr: std::net::SocketAddr,
    pub pool: PgPool,
    pub client: ResultsServiceClient<Channel>,
    /// The instrument and method registries, on the same server.
    pub registry: RegistryServiceClient<Channel>,
    pub keys: DevTokens,
    pub stream_prefix: String,
    shutdown: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A received sample of one order of one customer.
#[derive(Clone, Debug)]
pub struct TestSample {
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub accession: String,
}

/// Starts results-svc on a fresh database.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts results-svc on a fresh database with settings changed by `configure`.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    let stream_prefix = platform::testing::unique_stream_prefix();
    let mut settings = Settings::local(
        platform::config::CommonSettings::local(
            &database_url,
            &platform::testing::redis_url(),
            &stream_prefix,
        ),
        std::env::temp_dir().join(format!("lab-blobs-{stream_prefix}")),
    );
    settings.consumer_block = Duration::from_millis(100);
    configure(&mut settings);
    let application = Application::build(settings).await.expect("results-svc builds");
    let addr = application.local_addr();
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let client = ResultsServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to results-svc");
    let registry = RegistryServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to results-svc's registry");
    let pool = PgPool::connect(&database_url)
        .await
        .expect("connect to the test database");
    TestApp {
        addr,
        pool,
        client,
        registry,
        keys: DevTokens::new(results_svc::SERVICE_NAME),
        stream_prefix,
        shutdown,
    }
}

fn envelope(source: &str, customer_id: Uuid, event_type: &str, data: Data) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: event_type.into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.to_string(),
        source: source.into(),
        subject_id: String::new(),
        traceparent: String::new(),
        tracestate: String::new(),
        schema_version: 1,
        data: Some(data),
    }
}

impl TestApp {
    /// A staff token of operator `name` holding `role`.
    pub fn operator(&self, name: &str, role: &str) -> String {
        self.keys.staff(name, &[role])
    }

    /// The analyst of these tests.
    pub fn analyst(&self) -> String {
        self.operator("ana", roles::LAB_ANALYST)
    }

    /// The QA approver of these tests (not the analyst).
    pub fn qa(&self) -> String {
        self.operator("quinn", roles::LAB_QA)
    }

    /// A customer token holding `results:read`.
    pub fn customer(&self, customer_id: Uuid) -> String {
        self.keys.customer(customer_id, &[proto::scopes::RESULTS_READ])
    }

    async fn publish(&self, domain: &str, envelope: EventEnvelope) {
        let mut redis = redis_connection().await;
        let stream = platform::streams::stream_name(&self.stream_prefix, domain);
        xadd(&mut redis, &stream, &envelope).await;
    }

    /// orders-svc receives a one-sample order of `customer_id` and starts testing it; waits until
    /// results-svc knows the sample is in testing.
    pub async fn sample_in_testing(&self, customer_id: Uuid) -> TestSample {
        let sample = self.received_sample(customer_id).await;
        self.start_testing(&sample).await;
        sample
    }

    /// orders-svc receives a one-sample order of `customer_id`; waits until results-svc stored it.
    pub async fn received_sample(&self, customer_id: Uuid) -> TestSample {
        let order_id = Uuid::now_v7();
        let accession = format!("ACC-2026-{}", &Uuid::now_v7().simple().to_string()[20..]);
        let received = proto::orders::SampleReceived {
            order_id: order_id.to_string(),
            order_number: format!("ORD-{}", &order_id.simple().to_string()[24..]),
            tracking_number: String::new(),
            received_at: platform::time::rfc3339(platform::time::now()),
            samples: vec![proto::orders::ReceivedSample {
                accession_number: accession.clone(),
                line_number: 1,
                compound_name: "BPC-157".into(),
                lot_number: Some("LOT-42".into()),
                test_ids: vec![TEST_ID.into()],
                test_names: vec!["HPLC purity".into()],
                condition: "intact".into(),
            }],
            received_by: "tess".into(),
        };
        self.publish(
            platform::streams::ORDERS,
            envelope(
                "orders-svc",
                customer_id,
                "sample.received",
                Data::SampleReceived(received),
            ),
        )
        .await;
        let pool = self.pool.clone();
        let wanted = accession.clone();
        platform::testing::wait_for("the sample reaches results-svc", Duration::from_secs(10), || {
            let pool = pool.clone();
            let wanted = wanted.clone();
            async move {
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM results.samples WHERE accession_number = $1",
                )
                .bind(wanted)
                .fetch_one(&pool)
                .await
                .ok()
                .filter(|count| *count == 1)
            }
        })
        .await;
        TestSample {
            customer_id,
            order_id,
            accession,
        }
    }

    /// orders-svc starts testing the sample's order; waits until results-svc knows.
    pub async fn start_testing(&self, sample: &TestSample) {
        let started = proto::orders::TestingStarted {
            order_id: sample.order_id.to_string(),
            order_number: String::new(),
            started_at: platform::time::rfc3339(platform::time::now()),
        };
        self.publish(
            platform::streams::ORDERS,
            envelope(
                "orders-svc",
                sample.customer_id,
                "testing.started",
                Data::TestingStarted(started),
            ),
        )
        .await;
        let pool = self.pool.clone();
        let wanted = sample.accession.clone();
        platform::testing::wait_for("testing starts in results-svc", Duration::from_secs(10), || {
            let pool = pool.clone();
            let wanted = wanted.clone();
            async move {
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM results.samples WHERE accession_number = $1 AND testing_started_at IS NOT NULL",
                )
                .bind(wanted)
                .fetch_one(&pool)
                .await
                .ok()
                .filter(|count| *count == 1)
            }
        })
        .await;
    }

    /// payments-svc confirms the payment of the sample's order.
    pub async fn pay(&self, sample: &TestSample) {
        let confirmed = proto::payments::PaymentConfirmed {
            order_id: sample.order_id.to_string(),
            confirmed_at: platform::time::rfc3339(platform::time::now()),
            ..Default::default()
        };
        self.publish(
            platform::streams::PAYMENTS,
            envelope(
                "payments-svc",
                sample.customer_id,
                "payment.confirmed",
                Data::PaymentConfirmed(confirmed),
            ),
        )
        .await;
    }

    /// Waits until the lab view of `accession` has `status`.
    pub async fn wait_for_status(&self, accession: &str, status: &str) -> pb::Coa {
        let qa = self.qa();
        platform::testing::wait_for(
            &format!("the COA becomes {status}"),
            Duration::from_secs(10),
            || {
                let qa = qa.clone();
                async move {
                    self.lab_coa(&qa, accession)
                        .await
                        .ok()
                        .filter(|coa| coa.status == status)
                }
            },
        )
        .await
    }

    /// The event types in results-svc's outbox named `event_type`, with their COA ids.
    pub async fn outbox_coa_ids(&self, event_type: &str) -> Vec<String> {
        outbox_events_of(&self.pool, results_svc::SCHEMA, event_type)
            .await
            .into_iter()
            .map(|event| event.subject_id)
            .collect()
    }

    pub async fn record_as(
        &self,
        token: &str,
        accession: &str,
        analyte: &str,
    ) -> Result<pb::CoaResponse, ApiError> {
        let message = pb::RecordResultsRequest {
            accession_number: accession.into(),
            results: vec![row(analyte)],
        };
        let mut client = self.client.clone();
        unwrap(
            client
                .record_results(platform::grpc::outgoing(message, token))
                .await,
        )
    }

    pub async fn submit_as(&self, token: &str, accession: &str) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        unwrap(
            client
                .submit_results(platform::grpc::outgoing(accession_request(accession), token))
                .await,
        )
    }

    pub async fn approve_as(&self, token: &str, accession: &str) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        unwrap(
            client
                .approve_results(platform::grpc::outgoing(accession_request(accession), token))
                .await,
        )
    }

    pub async fn publish_as(&self, token: &str, accession: &str) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        unwrap(
            client
                .publish_coa(platform::grpc::outgoing(accession_request(accession), token))
                .await,
        )
    }

    pub async fn send_back_as(
        &self,
        token: &str,
        reference: &str,
        reason: &str,
    ) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        let message = reason_request(reference, reason);
        unwrap(client.send_back(platform::grpc::outgoing(message, token)).await)
    }

    pub async fn retract_as(
        &self,
        token: &str,
        reference: &str,
        reason: &str,
    ) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        let message = reason_request(reference, reason);
        unwrap(client.retract_coa(platform::grpc::outgoing(message, token)).await)
    }

    pub async fn amend_as(
        &self,
        token: &str,
        reference: &str,
        reason: &str,
    ) -> Result<pb::CoaResponse, ApiError> {
        let mut client = self.client.clone();
        let message = reason_request(reference, reason);
        unwrap(client.amend_coa(platform::grpc::outgoing(message, token)).await)
    }

    pub async fn lab_coa(&self, token: &str, accession: &str) -> Result<pb::Coa, ApiError> {
        let mut client = self.client.clone();
        let response = unwrap(
            client
                .get_lab_coa(platform::grpc::outgoing(accession_request(accession), token))
                .await,
        )?;
        Ok(response.coa.expect("a COA"))
    }

    /// The analyst records and submits, QA approves: the COA of `accession` is approved.
    pub async fn approved(&self, accession: &str) -> pb::Coa {
        self.record_as(&self.analyst(), accession, "Purity (HPLC)")
            .await
            .expect("record");
        self.submit_as(&self.analyst(), accession).await.expect("submit");
        self.approve_as(&self.qa(), accession)
            .await
            .expect("approve")
            .coa
            .expect("a COA")
    }

    /// A COA of a paid order, recorded, approved and published.
    pub async fn published(&self, customer_id: Uuid) -> (TestSample, pb::Coa) {
        let sample = self.sample_in_testing(customer_id).await;
        self.pay(&sample).await;
        self.approved(&sample.accession).await;
        wait_until_paid(self, &sample).await;
        let coa = self
            .publish_as(&self.qa(), &sample.accession)
            .await
            .expect("publish")
            .coa
            .expect("a COA");
        assert_eq!(coa.status, "published");
        (sample, coa)
    }

    pub async fn get_result_as(&self, token: &str, reference: &str) -> Result<pb::Coa, ApiError> {
        let mut client = self.client.clone();
        let message = pb::GetResultRequest {
            reference: reference.into(),
        };
        let response = unwrap(client.get_result(platform::grpc::outgoing(message, token)).await)?;
        Ok(response.coa.expect("a COA"))
    }

    pub async fn list_results_as(
        &self,
        token: &str,
        message: pb::ListResultsRequest,
    ) -> Result<pb::ListResultsResponse, ApiError> {
        let mut client = self.client.clone();
        unwrap(
            client
                .list_results(platform::grpc::outgoing(message, token))
                .await,
        )
    }

    pub async fn verify(&self, references: &[&str]) -> Vec<pb::Verification> {
        let mut client = self.client.clone();
        let message = pb::VerifyCoasRequest {
            accession_numbers: references
                .iter()
                .map(|reference| (*reference).to_owned())
                .collect(),
            verification_code: None,
        };
        client
            .verify_coas(tonic::Request::new(message))
            .await
            .expect("verify")
            .into_inner()
            .verifications
    }
}

/// Waits until results-svc applied the payment of the sample's order.
pub async fn wait_until_paid(app: &TestApp, sample: &TestSample) {
    let pool = app.pool.clone();
    let order_id = sample.order_id;
    platform::testing::wait_for("the payment reaches results-svc", Duration::from_secs(10), || {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM results.lab_orders WHERE order_id = $1 AND paid_at IS NOT NULL",
            )
            .bind(order_id)
            .fetch_one(&pool)
            .await
            .ok()
            .filter(|count| *count == 1)
        }
    })
    .await;
}

pub fn unwrap<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Result<T, ApiError> {
    result
        .map(tonic::Response::into_inner)
        .map_err(|status| ApiError::from_status(&status))
}

fn accession_request(accession: &str) -> pb::AccessionRequest {
    pb::AccessionRequest {
        accession_number: accession.into(),
    }
}

fn reason_request(reference: &str, reason: &str) -> pb::ReasonRequest {
    pb::ReasonRequest {
        reference: reference.into(),
        reason: reason.into(),
    }
}

/// An in-specification HPLC purity row for `analyte`.
pub fn row(analyte: &str) -> pb::AnalyteResult {
    pb::AnalyteResult {
        analyte: analyte.into(),
        test_id: TEST_ID.into(),
        value: Some("99.2".into()),
        unit: "%".into(),
        specification: Some(">= 98.0".into()),
        outcome: Some("pass".into()),
        method: "USP <621>".into(),
        instrument: "HPLC-01".into(),
        ..Default::default()
    }
}

/// Asserts a refusal's code and, when given, its `details.status`.
#[track_caller]
pub fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, ApiError>,
    code: platform::error::ErrorCode,
    status: Option<&str>,
) {
    let error = result.expect_err("the step is refused");
    assert_eq!(error.code, code, "{error:?}");
    if let Some(status) = status {
        assert_eq!(
            error.details.as_ref().map(|details| details["status"].clone()),
            Some(serde_json::json!(status)),
            "{error:?}"
        );
    }
}
