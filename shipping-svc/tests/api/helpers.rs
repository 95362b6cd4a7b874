//! Test harness: a migrated shipping-svc database (fresh per test), the use cases built on it
//! with a chosen carrier, the event handler of its consumer, seeded shipments and pickups, and
//! readers of its outbox.

use platform::consumer::{EventHandler, HandlerError};
use proto::common::OrderStatus;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::OrderCancelled;
use shipping_svc::carrier::CarrierAdapter;
use shipping_svc::carrier::sandbox::SandboxCarrier;
use shipping_svc::config::{DEVELOPMENT_SIGNING_KEY, Settings};
use shipping_svc::consumer::ShippingEventsHandler;
use shipping_svc::service::ShippingService;
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;

/// shipping-svc's use cases on a fresh, migrated database.
pub struct TestApp {
    pub pool: PgPool,
    pub service: ShippingService,
    pub handler: Arc<ShippingEventsHandler>,
    /// The default customer of the test.
    pub customer_id: Uuid,
}

/// A seeded shipment.
#[derive(Clone, Debug)]
pub struct Seeded {
    pub shipment_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub tracking_number: String,
}

/// Builds shipping-svc on a fresh database with the sandbox carrier.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(CarrierAdapter::Sandbox(SandboxCarrier)).await
}

/// Builds shipping-svc on a fresh database with `carrier`.
pub async fn spawn_app_with(carrier: CarrierAdapter) -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    let common = platform::config::CommonSettings::local(
        &database_url,
        &platform::testing::redis_url(),
        &platform::testing::unique_stream_prefix(),
    );
    let settings = Settings::local(common);
    // Building the application migrates the schema; the use cases are then built on its pool.
    let application = shipping_svc::Application::build(settings.clone())
        .await
        .expect("build shipping-svc");
    let pool = application.pool().clone();
    drop(application);
    let tokens = platform::tokens::TokenIssuer::new(
        shipping_svc::SERVICE_NAME,
        platform::tokens::SigningKey::development(shipping_svc::SERVICE_NAME),
    );
    let mailer = shipping_svc::mail::Mailer::new(&settings.mail_from, &settings.mail).unwrap();
    let files = platform::blobs::BlobStore::new(&settings.blobs, "labels").unwrap();
    let service = ShippingService::new(
        pool.clone(),
        &settings,
        carrier,
        tokens,
        DEVELOPMENT_SIGNING_KEY.as_bytes().to_vec(),
        mailer,
        files,
    )
    .unwrap();
    TestApp {
        pool,
        handler: Arc::new(ShippingEventsHandler::new(service.clone())),
        service,
        customer_id: Uuid::now_v7(),
    }
}

impl TestApp {
    /// Seeds a bank-rail shipment whose label is bought, at `status`, with the carrier's
    /// shipment `carrier_shipment_id` (`""`: the sandbox).
    pub async fn seed_shipment(&self, status: &str, carrier_shipment_id: &str) -> Seeded {
        let shipment_id = Uuid::now_v7();
        let order_id = Uuid::now_v7();
        let order_number = format!("ORD-{}", &order_id.simple().to_string()[20..]);
        let tracking_number = format!("1ZTEST{}", &shipment_id.simple().to_string()[20..]);
        sqlx::query(
            "INSERT INTO shipping.shipments (id, customer_id, order_id, order_number, payment_method, label_state, \
               carrier_code, service_code, tracking_number, tracking_url, status, ship_from, ship_to, \
               carrier_shipment_id, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'bank_invoice', 'bought', 'ups', 'ups_ground', $5, '', $6, '{}', '{}', $7, now(), now())",
        )
        .bind(shipment_id)
        .bind(self.customer_id)
        .bind(order_id)
        .bind(&order_number)
        .bind(&tracking_number)
        .bind(status)
        .bind(carrier_shipment_id)
        .execute(&self.pool)
        .await
        .unwrap();
        Seeded {
            shipment_id,
            order_id,
            order_number,
            tracking_number,
        }
    }

    /// Seeds a door pickup of the shipment at `status` (`awaiting_payment` or `booked`).
    pub async fn seed_pickup(&self, seeded: &Seeded, status: &str) -> Uuid {
        let pickup_id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO shipping.pickups (id, customer_id, shipment_id, order_id, status, pickup_date, pickup_window, \
               price_cents, pay_url, carrier_pickup_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, current_date + 1, 'morning', 1500, 'https://pay.example/p', '', now())",
        )
        .bind(pickup_id)
        .bind(self.customer_id)
        .bind(seeded.shipment_id)
        .bind(seeded.order_id)
        .bind(status)
        .execute(&self.pool)
        .await
        .unwrap();
        pickup_id
    }

    /// The `order.cancelled` event of the customer's order, cancelled from `from_status`.
    pub fn cancelled(&self, order_id: Uuid, from_status: OrderStatus) -> EventEnvelope {
        EventEnvelope {
            id: Uuid::now_v7().to_string(),
            r#type: "order.cancelled".to_owned(),
            occurred_at: platform::time::rfc3339(platform::time::now()),
            customer_id: self.customer_id.to_string(),
            source: "orders-svc".to_owned(),
            subject_id: order_id.to_string(),
            schema_version: 1,
            data: Some(Data::OrderCancelled(OrderCancelled {
                order_id: order_id.to_string(),
                order_number: "ORD-CANCELLED".to_owned(),
                from_status: from_status as i32,
                legacy_from_status: from_status.as_str().to_owned(),
                cancelled_at: platform::time::rfc3339(platform::time::now()),
                reason: "ordered the wrong test".to_owned(),
                cancel_request_id: Uuid::now_v7().to_string(),
                currency: "USD".to_owned(),
                total_cents: 45_000,
                ..OrderCancelled::default()
            })),
            ..EventEnvelope::default()
        }
    }

    /// Delivers an event to the consumer's handler.
    pub async fn deliver(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        self.handler.handle(event).await
    }

    /// The label columns of a shipment: (label_void, refund_status, voided_at is set).
    pub async fn label_void(&self, shipment_id: Uuid) -> (Option<String>, Option<String>, bool) {
        let (label_void, refund_status, voided): (Option<String>, Option<String>, bool) = sqlx::query_as(
            "SELECT label_void, refund_status, voided_at IS NOT NULL FROM shipping.shipments WHERE id = $1",
        )
        .bind(shipment_id)
        .fetch_one(&self.pool)
        .await
        .unwrap();
        (label_void, refund_status, voided)
    }

    /// The status of a pickup.
    pub async fn pickup_status(&self, pickup_id: Uuid) -> String {
        sqlx::query_scalar("SELECT status FROM shipping.pickups WHERE id = $1")
            .bind(pickup_id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Whether shipping-svc recorded the order as cancelled.
    pub async fn recorded_cancelled(&self, order_id: Uuid) -> bool {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM shipping.cancelled_orders WHERE order_id = $1)")
            .bind(order_id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// The outbox's events of `event_type`, decoded.
    pub async fn outbox(&self, event_type: &str) -> Vec<EventEnvelope> {
        use prost::Message;
        let rows: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT envelope FROM shipping.outbox WHERE event_type = $1 ORDER BY event_id",
        )
        .bind(event_type)
        .fetch_all(&self.pool)
        .await
        .unwrap();
        rows.iter()
            .map(|bytes| EventEnvelope::decode(bytes.as_slice()).unwrap())
            .collect()
    }
}
