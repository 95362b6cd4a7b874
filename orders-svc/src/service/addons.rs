//! Add-ons (rules: `crate::domain::addon`): more tests on the retained sample of an order line.
//!
//! Preview (`confirm: false`): read the order, its samples and add-ons → read the order's
//! catalog revision (catalog-svc) → price; nothing is stored. Confirmed, under the idempotency
//! key: the same pricing → commit the total against the key's spend envelope (payments-svc,
//! kind `addon`; released if the add-on is not stored) → transaction A under the order's row
//! lock: the add-on (`pending_payment`), `order.addon_requested` and the recovery point
//! `{"addonId"}` → CreateInvoice with the add-on id (payments-svc: one supplementary invoice per
//! add-on, on the order's rail) → transaction B: the invoice block and the stored answer. A retry
//! resumes from the recovery point, so one key makes one add-on and one invoice.
//!
//! Afterwards, each once per event: the invoice's payment (`invoice.updated` paid or
//! `payment.confirmed` carrying the add-on id) makes it `paid` (or `in_testing` when the sample's
//! testing runs) with `order.addon_updated`, which hands the tests to results-svc; the order's
//! `testing.started` moves paid add-ons to `in_testing`; a published COA reporting every test of
//! an add-on makes it `reported`.

use super::OrdersService;
use crate::domain::addon::{self, Addon, AddonStatus, CatalogTest};
use crate::domain::order::{InvoiceLine, Order, PaymentSummary};
use crate::domain::payment_method::PaymentMethod;
use crate::domain::reference::OrderReference;
use crate::repo::{self, addons as addon_repo, samples as sample_repo};
use crate::{OUTBOX, SCHEMA, convert, events};
use chrono::{DateTime, Utc};
use platform::consumer::first_delivery;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, Json};
use platform::money::Cents;
use platform::principal::Principal;
use platform::streams::GROUP_ORDERS;
use proto::common::InvoiceStatus;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

/// Idempotency operation name of a confirmed RequestAddon.
pub const OPERATION_ADDON: &str = "orders.addon";

/// Largest catalog page read while pricing.
const CATALOG_PAGE: i32 = 200;

/// What the customer asks for.
#[derive(Clone, Debug)]
pub struct AddonRequest {
    pub reference: String,
    pub line_number: i32,
    pub test_ids: Vec<String>,
}

/// The recovery point of transaction A: the add-on it stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    addon_id: Uuid,
}

/// What payments-svc announced about an add-on's invoice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddonInvoiceNews {
    pub addon_id: Uuid,
    pub invoice_id: String,
    pub invoice_number: String,
    pub status: InvoiceStatus,
    /// `None` when the event does not say (payment.confirmed: nothing is due).
    pub amount_due: Option<Cents>,
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "order not found")
}

impl OrdersService {
    /// Prices add-on tests on the retained sample of one of the principal's customer's order
    /// lines; stores nothing.
    pub async fn preview_addon(
        &self,
        principal: &Principal,
        request: &AddonRequest,
    ) -> Result<Addon, ApiError> {
        let customer_id = principal.customer()?;
        let (_, addon) = self.price_addon(customer_id, request).await?;
        Ok(addon)
    }

    /// Orders add-on tests under idempotency `key`; the answer is the add-on with its invoice.
    pub async fn request_addon(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        request: AddonRequest,
    ) -> Answer<Addon> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let call = key.call(customer_id, OPERATION_ADDON);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                let addon_id = match attempt.recovery::<Stored>() {
                    Some(stored) => stored.addon_id,
                    None => {
                        self.store_addon(principal, customer_id, attempt, &request)
                            .await?
                    }
                };
                self.invoice_addon(customer_id, attempt, addon_id).await
            })
            .await
    }

    /// Reads the order, its samples, add-ons and catalog revision, and prices the request.
    async fn price_addon(
        &self,
        customer_id: Uuid,
        request: &AddonRequest,
    ) -> Result<(Order, Addon), ApiError> {
        let test_ids = addon::check_test_ids(&request.test_ids)?;
        let mut conn = self.pool.acquire().await?;
        let order_id =
            super::cancellation::resolve_customer_order(&mut conn, customer_id, &request.reference)
                .await?
                .ok_or_else(not_found)?;
        let order = repo::find_order(&mut conn, customer_id, &OrderReference::Id(order_id))
            .await?
            .ok_or_else(not_found)?;
        let line = order
            .lines
            .iter()
            .find(|line| line.line_number == request.line_number)
            .ok_or_else(|| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "lineNumber",
                    format!("order {} has no line {}", order.order_number, request.line_number),
                )
            })?;
        if order.payment_method == PaymentMethod::ChainStablecoin {
            return Err(ApiError::field(
                ErrorCode::PaymentMethodUnavailable,
                "paymentMethod",
                "add-ons of stablecoin orders are not offered yet; open a support ticket to order more tests",
            ));
        }
        addon::check_order_holds_sample(order.status, &order.order_number)?;
        let samples = sample_repo::list_samples(&mut conn, customer_id, order_id).await?;
        let now = platform::time::now();
        let sample = addon::check_sample(&samples, line.line_number, now)?;
        let earlier = addon_repo::of_order(&mut conn, customer_id, order_id).await?;
        drop(conn);
        let offered = self.catalog_tests(customer_id, &order.catalog_revision).await?;
        let ordered = addon::ordered_tests(line, &earlier);
        let (tests, total) =
            addon::price_tests(&test_ids, &offered, &order.category_id, &ordered, sample.units)?;
        let addon = Addon {
            id: Uuid::nil(),
            order_id,
            order_number: order.order_number.clone(),
            line_number: line.line_number,
            accession_number: sample.accession_number.clone(),
            status: AddonStatus::Preview,
            tests,
            total,
            currency: order.currency.clone(),
            catalog_revision: order.catalog_revision.clone(),
            requested_at: None,
            paid_at: None,
            reported_at: None,
            invoice: None,
        };
        Ok((order, addon))
    }

    /// Every item of catalog revision `revision` (catalog-svc, acting for the customer).
    async fn catalog_tests(&self, customer_id: Uuid, revision: &str) -> Result<Vec<CatalogTest>, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::CATALOG_SVC, Some(customer_id));
        let mut tests = Vec::new();
        let mut cursor = None;
        loop {
            let request = proto::catalog::ListCatalogItemsRequest {
                limit: Some(CATALOG_PAGE),
                cursor: cursor.take(),
                catalog_revision: Some(revision.to_owned()),
                ..Default::default()
            };
            let page = self
                .catalog
                .clone()
                .list_catalog_items(platform::grpc::outgoing(request, &token))
                .await
                .map_err(|status| {
                    ApiError::unavailable(
                        "catalog-svc",
                        format!("ListCatalogItems {:?}: {}", status.code(), status.message()),
                    )
                })?
                .into_inner();
            tests.extend(page.items.into_iter().map(|item| CatalogTest {
                id: item.id,
                kind: item.kind,
                name: item.name,
                category_ids: item.category_ids,
                price: Cents(item.price_cents),
            }));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tests),
            }
        }
    }

    /// Prices, commits the spend and commits transaction A; returns the new add-on's id.
    async fn store_addon(
        &self,
        principal: &Principal,
        customer_id: Uuid,
        attempt: &Attempt<'_, Json>,
        request: &AddonRequest,
    ) -> Result<Uuid, ApiError> {
        let (_, mut addon) = self.price_addon(customer_id, request).await?;
        addon.id = Uuid::now_v7();
        addon.status = AddonStatus::PendingPayment;
        addon.requested_at = Some(platform::time::now());
        self.commit_spend(principal, customer_id, ("addon", addon.id), addon.total)
            .await?;
        let stored = self.insert_addon(customer_id, attempt, &addon).await;
        if stored.is_err() {
            self.release_spend(customer_id, ("addon", addon.id)).await;
        }
        stored.map(|()| addon.id)
    }

    async fn insert_addon(
        &self,
        customer_id: Uuid,
        attempt: &Attempt<'_, Json>,
        addon: &Addon,
    ) -> Result<(), ApiError> {
        let mut tx = self.pool.begin().await?;
        let (status, order_number) = repo::lock_order(&mut tx, customer_id, addon.order_id)
            .await?
            .ok_or_else(not_found)?;
        // The order may have been cancelled since it was read.
        addon::check_order_holds_sample(status, &order_number)?;
        addon_repo::insert(&mut tx, customer_id, addon).await?;
        let at = addon.requested_at.unwrap_or_else(platform::time::now);
        OUTBOX
            .enqueue(&mut tx, events::order_addon(customer_id, addon, false, at))
            .await?;
        attempt
            .save_recovery(&mut tx, &Stored { addon_id: addon.id })
            .await?;
        repo::view::refresh(&mut tx, customer_id, addon.order_id).await?;
        tx.commit().await?;
        tracing::info!(order.id = %addon.order_id, addon.id = %addon.id, total = addon.total.0, "add-on ordered");
        Ok(())
    }

    /// Issues the add-on's invoice (again, when resuming) and commits transaction B.
    async fn invoice_addon(
        &self,
        customer_id: Uuid,
        attempt: &Attempt<'_, Json>,
        addon_id: Uuid,
    ) -> Result<Addon, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let missing = || ApiError::internal(format!("recovery point names the missing add-on {addon_id}"));
        let addon = addon_repo::lock(&mut conn, customer_id, addon_id)
            .await?
            .ok_or_else(missing)?;
        let order = repo::find_order(&mut conn, customer_id, &OrderReference::Id(addon.order_id))
            .await?
            .ok_or_else(missing)?;
        drop(conn);
        let compound = order
            .lines
            .iter()
            .find(|line| line.line_number == addon.line_number)
            .map(|line| line.compound_name.clone())
            .unwrap_or_default();
        let summary = self
            .issue_addon_invoice(&order, &addon, &addon::invoice_lines(&addon, &compound))
            .await?;
        let mut tx = self.pool.begin().await?;
        let mut addon = addon_repo::lock(&mut tx, customer_id, addon_id)
            .await?
            .ok_or_else(missing)?;
        // A payment may have been applied already (a slow answer): keep the newer status.
        let keep = addon
            .invoice
            .as_ref()
            .is_some_and(|known| known.status == InvoiceStatus::Paid);
        if !keep {
            addon_repo::store_invoice(&mut tx, customer_id, addon_id, &summary).await?;
            addon.invoice = Some(summary);
        }
        repo::view::refresh(&mut tx, customer_id, addon.order_id).await?;
        attempt.complete(&mut tx, &addon).await?;
        tx.commit().await?;
        Ok(addon)
    }

    /// CreateInvoice for the add-on (idempotent per add-on); any failure is a retryable 503.
    async fn issue_addon_invoice(
        &self,
        order: &Order,
        addon: &Addon,
        lines: &[InvoiceLine],
    ) -> Result<PaymentSummary, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(order.customer_id));
        let key = format!("{OPERATION_ADDON}:{}", addon.id);
        let request = convert::create_addon_invoice_request(order, addon, lines);
        let response = self
            .payments
            .clone()
            .create_invoice(platform::grpc::outgoing_idempotent(request, &token, &key))
            .await
            .map_err(|status| {
                ApiError::unavailable(
                    "payments-svc",
                    format!("CreateInvoice (add-on) {:?}: {}", status.code(), status.message()),
                )
            })?;
        let invoice = response
            .into_inner()
            .invoice
            .ok_or_else(|| ApiError::unavailable("payments-svc", "no invoice answered"))?;
        Ok(PaymentSummary::from(&invoice))
    }

    /// Applies what payments-svc announced about an add-on's invoice, once per event.
    pub async fn apply_addon_invoice_news(
        &self,
        event_id: &str,
        customer_id: Uuid,
        news: &AddonInvoiceNews,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, event_id).await? {
            return tx.commit().await;
        }
        let Some(mut addon) = addon_repo::lock(&mut tx, customer_id, news.addon_id).await? else {
            tracing::warn!(addon.id = %news.addon_id, "invoice news for an unknown add-on, ignored");
            return tx.commit().await;
        };
        let mut invoice = addon.invoice.clone().unwrap_or(PaymentSummary {
            invoice_id: news.invoice_id.clone(),
            invoice_number: news.invoice_number.clone(),
            status: news.status,
            amount_due: news.amount_due.unwrap_or(addon.total),
            due_at: None,
            bank_instructions: None,
            hosted_url: None,
            checkout_expires_at: None,
        });
        if invoice.status != InvoiceStatus::Paid {
            invoice.status = news.status;
            invoice.amount_due = match news.status {
                InvoiceStatus::Paid => Cents::ZERO,
                _ => news.amount_due.unwrap_or(invoice.amount_due),
            };
        }
        addon_repo::store_invoice(&mut tx, customer_id, addon.id, &invoice).await?;
        addon.invoice = Some(invoice);
        if news.status == InvoiceStatus::Void && addon.status == AddonStatus::PendingPayment {
            // Voided unpaid: its order was cancelled (payments-svc); the tests are never run.
            let now = platform::time::now();
            self.move_addon(&mut tx, customer_id, &mut addon, AddonStatus::Cancelled, now)
                .await?;
        }
        if news.status == InvoiceStatus::Paid && addon.status == AddonStatus::PendingPayment {
            let now = platform::time::now();
            let samples = sample_repo::list_samples(&mut tx, customer_id, addon.order_id).await?;
            let testing = samples.iter().any(|sample| {
                sample.accession_number == addon.accession_number && sample.testing_started_at.is_some()
            });
            let status = if testing {
                AddonStatus::InTesting
            } else {
                AddonStatus::Paid
            };
            self.move_addon(&mut tx, customer_id, &mut addon, status, now)
                .await?;
        }
        repo::view::refresh(&mut tx, customer_id, addon.order_id).await?;
        tx.commit().await
    }

    /// Moves `addon` to `status` at `at` with `order.addon_updated`.
    async fn move_addon(
        &self,
        tx: &mut PgConnection,
        customer_id: Uuid,
        addon: &mut Addon,
        status: AddonStatus,
        at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        addon_repo::set_status(tx, customer_id, addon.id, status, at).await?;
        addon.status = status;
        if matches!(status, AddonStatus::Paid | AddonStatus::InTesting) && addon.paid_at.is_none() {
            addon.paid_at = Some(at);
        }
        if status == AddonStatus::Reported {
            addon.reported_at = Some(at);
        }
        OUTBOX
            .enqueue(tx, events::order_addon(customer_id, addon, true, at))
            .await?;
        tracing::info!(addon.id = %addon.id, status = status.as_str(), "add-on moved");
        Ok(())
    }

    /// The order's testing started: its paid add-ons are in testing (inside the caller's
    /// transaction).
    pub(super) async fn addons_testing_started(
        &self,
        tx: &mut PgConnection,
        customer_id: Uuid,
        order_id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        for mut addon in addon_repo::unreported_of_order(tx, customer_id, order_id).await? {
            if addon.status == AddonStatus::Paid {
                self.move_addon(tx, customer_id, &mut addon, AddonStatus::InTesting, at)
                    .await?;
            }
        }
        Ok(())
    }

    /// A COA of `accession` reporting `test_ids` was published: the paid add-ons of that sample
    /// whose every test it reports are reported (inside the caller's transaction).
    pub(super) async fn addons_reported(
        &self,
        tx: &mut PgConnection,
        (customer_id, order_id): (Uuid, Uuid),
        accession: &str,
        test_ids: &[String],
        at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        for mut addon in addon_repo::unreported_of_order(tx, customer_id, order_id).await? {
            let covered = addon.tests.iter().all(|test| test_ids.contains(&test.test_id));
            if addon.accession_number == accession && covered {
                self.move_addon(tx, customer_id, &mut addon, AddonStatus::Reported, at)
                    .await?;
            }
        }
        Ok(())
    }
}
