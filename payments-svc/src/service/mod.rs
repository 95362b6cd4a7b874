//! Use cases of payments-svc. Each owns its transaction: a state change and its events commit
//! together through the outbox. Card checkout is in [`checkout`], payment preparation in
//! [`prepare`], the periodic jobs (expiring sessions, overdue invoices) in [`jobs`], the hosted
//! payment of door pickups in [`pickup_checkout`].

mod cancellation;
mod checkout;
mod jobs;
mod pickup_checkout;
mod prepare;
mod simulate;
mod spend;

pub use cancellation::RecordedRefund;
pub use pickup_checkout::NewPickupCheckout;
pub use prepare::{OPERATION_PREPARE, Prepared};
pub use spend::{SpendCommitment, UNCONFIRMED_REAP_AGE};

use crate::config::BankAccount;
use crate::domain::checkout::{
    CheckoutSession, CheckoutStatus, ProcessorKind, SessionSubject, hosted_url, new_session_id,
};
use crate::domain::invoice::invoice_number;
use crate::domain::payment::{Balance, STATUS_SUCCEEDED};
use crate::domain::spend::SpendKind;
use crate::domain::{
    BankPayment, Invoice, InvoiceReference, InvoiceStatus, NewInvoice, Payment, PaymentMethod,
};
use crate::processor::CardProcessor;
use crate::repo::{self, invoices::InvoiceFilter};
use crate::{OUTBOX, SCHEMA, events};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::IdempotencyStore;
use platform::money::Cents;
use platform::pagination::{After, Listing, Page, PageRequest};
use sqlx::{PgConnection, PgPool};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The listing of a customer's invoices, newest first.
pub const INVOICES: Listing = Listing::new("invoices");
/// The listing of a customer's payments, newest first.
pub const PAYMENTS: Listing = Listing::new("payments");

/// The outcome of recording a bank payment.
#[derive(Clone, Debug)]
pub struct RecordedPayment {
    pub payment: Payment,
    /// The invoice as it stands after the payment (or now, for an earlier recording).
    pub invoice: Invoice,
    /// True when the bank reference had been recorded before; nothing changed.
    pub already_recorded: bool,
}

/// How card checkout runs: the processor, the site of the pay page and the lifetime of a fresh link.
#[derive(Clone)]
pub struct CardSettings {
    /// The deployment's processor (live customers; in development mode the sandbox).
    pub processor: Arc<dyn CardProcessor>,
    pub site_url: String,
    pub checkout_ttl: Duration,
}

/// The built-in sandbox processor, which a sandbox customer's sessions run on in every mode.
static SANDBOX_PROCESSOR: crate::processor::sandbox::SandboxProcessor =
    crate::processor::sandbox::SandboxProcessor;

impl CardSettings {
    /// The processor a new session runs on: the built-in sandbox for a sandbox customer's
    /// (docs/sandbox.md), the deployment's otherwise.
    pub fn kind_for(&self, sandbox: bool) -> ProcessorKind {
        if sandbox {
            ProcessorKind::Sandbox
        } else {
            self.processor.kind()
        }
    }

    /// The processor of a session opened on `kind` (recorded with the session, so a session
    /// keeps its processor for its whole life: charges, expiry and refunds go back to it).
    pub fn processor(&self, kind: ProcessorKind) -> &dyn CardProcessor {
        if kind == ProcessorKind::Sandbox && self.processor.kind() != ProcessorKind::Sandbox {
            &SANDBOX_PROCESSOR
        } else {
            self.processor.as_ref()
        }
    }
}

/// The use cases, over a pool and the issuing settings.
#[derive(Clone)]
pub struct PaymentsService {
    pool: PgPool,
    bank: Arc<BankAccount>,
    /// The demo account a sandbox customer's bank invoices name (docs/sandbox.md).
    sandbox_bank: Arc<BankAccount>,
    due_days: i64,
    card: CardSettings,
    idempotency: IdempotencyStore,
    /// What a key without a spend envelope may commit.
    spend_default: crate::domain::spend::WithoutEnvelope,
    /// Whether this deployment runs the stablecoin rail (invoices on it are refused otherwise).
    stablecoin_rail: bool,
}

impl PaymentsService {
    pub fn new(
        pool: PgPool,
        bank: BankAccount,
        due_days: i64,
        card: CardSettings,
        spend_default: crate::domain::spend::WithoutEnvelope,
        stablecoin_rail: bool,
    ) -> Self {
        Self {
            pool,
            bank: Arc::new(bank),
            sandbox_bank: Arc::new(BankAccount::default()),
            due_days,
            card,
            idempotency: IdempotencyStore::new(crate::SCHEMA),
            spend_default,
            stablecoin_rail,
        }
    }

    /// Issues the invoice of an order, or returns the order's existing invoice unchanged.
    pub async fn create_invoice(&self, customer_id: Uuid, new: NewInvoice) -> Result<Invoice, ApiError> {
        if new.payment_method == PaymentMethod::ChainStablecoin && !self.stablecoin_rail {
            return Err(ApiError::new(
                ErrorCode::PaymentMethodUnavailable,
                "this deployment does not run the stablecoin rail",
            ));
        }
        let mut tx = self.pool.begin().await?;
        let mut invoice = self.issue(&mut tx, customer_id, new).await?;
        self.attach_checkout(&mut tx, std::slice::from_mut(&mut invoice))
            .await?;
        tx.commit().await?;
        Ok(invoice)
    }

    /// The order.created backstop: issues the invoice unless event `event_id` was handled before
    /// or the order already has one.
    pub async fn backstop_invoice(
        &self,
        event_id: &str,
        customer_id: Uuid,
        new: NewInvoice,
    ) -> Result<(), ApiError> {
        let mut tx = self.pool.begin().await?;
        if !platform::consumer::first_delivery(&mut tx, SCHEMA, platform::streams::GROUP_PAYMENTS, event_id)
            .await?
        {
            return Ok(());
        }
        self.issue(&mut tx, customer_id, new).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Issues within `tx`: number, due date, bank instructions, lines and `invoice.created`.
    async fn issue(
        &self,
        tx: &mut PgConnection,
        customer_id: Uuid,
        new: NewInvoice,
    ) -> Result<Invoice, ApiError> {
        let existing = match new.addon_id {
            Some(addon_id) => repo::invoices::by_addon(tx, customer_id, addon_id).await?,
            None => repo::invoices::by_order(tx, customer_id, new.order_id).await?,
        };
        if let Some(existing) = existing {
            return Ok(existing);
        }
        // The order (add-on) exists: its spend commitment is no longer a candidate for reaping.
        match new.addon_id {
            Some(addon_id) => {
                repo::spend::confirm(tx, customer_id, SpendKind::Addon, &addon_id.to_string()).await?
            }
            None => repo::spend::confirm_order(tx, customer_id, new.order_id).await?,
        }
        let now = platform::time::now();
        let number = invoice_number(now, repo::invoices::next_invoice_sequence(tx).await?);
        // A sandbox customer's invoice names the demo account: nobody pays real money for it.
        let bank = if new.sandbox {
            &self.sandbox_bank
        } else {
            &*self.bank
        };
        let bank_instructions =
            (new.payment_method == PaymentMethod::BankInvoice).then(|| bank.instructions(&number));
        let invoice = Invoice {
            id: Uuid::now_v7(),
            invoice_number: number,
            customer_id,
            order_id: new.order_id,
            order_number: new.order_number,
            status: InvoiceStatus::Open,
            previous_status: None,
            payment_method: new.payment_method,
            currency: new.currency.to_owned(),
            lines: new.lines,
            total: new.total,
            amount_paid: Cents::ZERO,
            amount_due: new.total,
            issued_at: now,
            due_at: now + chrono::Duration::days(self.due_days),
            paid_at: None,
            bank_instructions,
            created_at: now,
            checkout: None,
            addon_id: new.addon_id,
            sandbox: new.sandbox,
        };
        if !repo::invoices::insert_invoice(tx, &invoice).await? {
            // A concurrent call issued it first; answer with the winner.
            let winner = match invoice.addon_id {
                Some(addon_id) => repo::invoices::by_addon(tx, customer_id, addon_id).await?,
                None => repo::invoices::by_order(tx, customer_id, invoice.order_id).await?,
            };
            return winner.ok_or_else(|| ApiError::internal("invoice conflict without an invoice"));
        }
        if invoice.payment_method == PaymentMethod::CardCheckout {
            let expires_at = new.checkout_expires_at.unwrap_or_else(|| {
                now + chrono::Duration::from_std(self.card.checkout_ttl).unwrap_or_default()
            });
            self.open_session(tx, &invoice, expires_at).await?;
        }
        OUTBOX.enqueue(tx, events::invoice_created(&invoice)).await?;
        Ok(invoice)
    }

    /// Opens a checkout session of `invoice` (card rail) locked to its amount due, expiring at
    /// `expires_at`. The processor's side (a PSP session) is opened when the pay page is first
    /// shown, outside this transaction.
    async fn open_session(
        &self,
        tx: &mut PgConnection,
        invoice: &Invoice,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<CheckoutSession, ApiError> {
        let id = new_session_id();
        let session = CheckoutSession {
            hosted_url: hosted_url(&self.card.site_url, &id),
            id,
            customer_id: invoice.customer_id,
            subject: SessionSubject::Invoice(invoice.id),
            amount: invoice.amount_due,
            currency: invoice.currency.clone(),
            status: CheckoutStatus::Open,
            processor: self.card.kind_for(invoice.sandbox),
            processor_session_id: None,
            processor_url: None,
            pending_token: None,
            last_error: None,
            expires_at,
            created_at: platform::time::now(),
            completed_at: None,
        };
        if !repo::checkout::insert_session(tx, &session).await? {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the invoice already has an open checkout session",
            ));
        }
        Ok(session)
    }

    /// Attaches the newest checkout session of each card-rail invoice.
    async fn attach_checkout(
        &self,
        conn: &mut PgConnection,
        invoices: &mut [Invoice],
    ) -> Result<(), ApiError> {
        let Some(customer_id) = invoices.first().map(|invoice| invoice.customer_id) else {
            return Ok(());
        };
        let ids: Vec<Uuid> = invoices
            .iter()
            .filter(|invoice| invoice.payment_method == PaymentMethod::CardCheckout)
            .map(|invoice| invoice.id)
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let sessions = repo::checkout::latest_sessions(conn, customer_id, &ids).await?;
        for invoice in invoices {
            invoice.checkout = sessions
                .iter()
                .find(|session| session.invoice_id() == Some(invoice.id))
                .cloned();
        }
        Ok(())
    }

    /// The customer's invoice by its UUID, its order's UUID or its number.
    pub async fn get_invoice(
        &self,
        customer_id: Uuid,
        reference: &InvoiceReference,
    ) -> Result<Invoice, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let mut invoice = repo::invoices::by_reference(&mut conn, customer_id, reference)
            .await?
            .ok_or_else(invoice_not_found)?;
        self.attach_checkout(&mut conn, std::slice::from_mut(&mut invoice))
            .await?;
        Ok(invoice)
    }

    /// One newest-first page of the customer's invoices.
    pub async fn list_invoices(
        &self,
        customer_id: Uuid,
        filter: &InvoiceFilter,
        page: &PageRequest,
    ) -> Result<Page<Invoice>, ApiError> {
        let after = INVOICES.after(page)?;
        let mut conn = self.pool.acquire().await?;
        let mut rows = repo::invoices::list(&mut conn, customer_id, filter, after, page.fetch()).await?;
        self.attach_checkout(&mut conn, &mut rows).await?;
        Ok(INVOICES.page(page, rows, |invoice| After::new(invoice.created_at, invoice.id)))
    }

    /// The customer's payment by its UUID.
    pub async fn get_payment(&self, customer_id: Uuid, reference: &str) -> Result<Payment, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "payment not found");
        let id = Uuid::parse_str(reference.trim()).map_err(|_| not_found())?;
        let mut conn = self.pool.acquire().await?;
        repo::payments::by_id(&mut conn, customer_id, id)
            .await?
            .ok_or_else(not_found)
    }

    /// One newest-first page of the customer's payments, optionally of one invoice.
    pub async fn list_payments(
        &self,
        customer_id: Uuid,
        invoice_id: Option<Uuid>,
        page: &PageRequest,
    ) -> Result<Page<Payment>, ApiError> {
        let after = PAYMENTS.after(page)?;
        let mut conn = self.pool.acquire().await?;
        let rows = repo::payments::list(&mut conn, customer_id, invoice_id, after, page.fetch()).await?;
        Ok(PAYMENTS.page(page, rows, |payment| After::new(payment.created_at, payment.id)))
    }

    /// Staff: records a bank transfer against an open invoice, once per bank reference. The
    /// payment that reaches the total marks the invoice paid and emits `invoice.updated` then
    /// `payment.confirmed`; a partial payment changes only the amounts and emits nothing. The
    /// same reference again with the same invoice and amount answers the first record
    /// (`already_recorded`); with another invoice or amount it is 409 `bank_reference_conflict`.
    /// The payment records `operator`, who recorded it.
    pub async fn record_bank_payment(
        &self,
        operator: &str,
        command: BankPayment,
    ) -> Result<RecordedPayment, ApiError> {
        let mut tx = self.pool.begin().await?;
        if let Some(recorded) = self.recorded(&mut tx, &command).await? {
            return Ok(recorded);
        }
        // The lock serialises payments of one invoice, so their amounts add up.
        let locked = repo::invoices::lock_for_payment(&mut tx, &command.invoice)
            .await?
            .ok_or_else(invoice_not_found)?;
        // Re-checked under the lock: a concurrent call with this reference may have just committed.
        if let Some(recorded) = self.recorded(&mut tx, &command).await? {
            return Ok(recorded);
        }
        let balance = Balance {
            status: locked.status,
            total: locked.total,
            paid: locked.amount_paid,
            due: locked.amount_due,
        };
        let settlement = balance.settle(&locked.invoice_number, command.amount)?;
        let now = platform::time::now();
        let payment = Payment {
            id: Uuid::now_v7(),
            customer_id: locked.customer_id,
            invoice_id: locked.id,
            invoice_number: locked.invoice_number.clone(),
            order_id: locked.order_id,
            order_number: locked.order_number.clone(),
            rail: PaymentMethod::BankInvoice,
            status: STATUS_SUCCEEDED.to_owned(),
            amount: command.amount,
            currency: locked.currency.clone(),
            external_reference: command.bank_reference.clone(),
            received_at: command.received_at.unwrap_or(now),
            created_at: now,
            recorded_by: Some(operator.to_owned()),
        };
        if !repo::payments::insert(&mut tx, &payment).await? {
            // The same reference was recorded concurrently against another invoice.
            tx.rollback().await?;
            let mut conn = self.pool.acquire().await?;
            return self
                .recorded(&mut conn, &command)
                .await?
                .ok_or_else(|| ApiError::internal("bank reference conflict without a payment"));
        }
        repo::invoices::apply_settlement(&mut tx, locked.customer_id, locked.id, &settlement, now).await?;
        let invoice = self.reload(&mut tx, locked.customer_id, locked.id).await?;
        if settlement.completes {
            OUTBOX
                .enqueue(&mut tx, events::invoice_updated(&invoice, now))
                .await?;
            OUTBOX
                .enqueue(&mut tx, events::payment_confirmed(&payment, &invoice, now))
                .await?;
        }
        tx.commit().await?;
        let outcome = if settlement.completes { "paid" } else { "partial" };
        platform::metrics::record_settlements("bank", outcome, 1);
        Ok(RecordedPayment {
            payment,
            invoice,
            already_recorded: false,
        })
    }

    /// The earlier recording of the command's bank reference, with its invoice as it stands;
    /// 409 `bank_reference_conflict` when it was recorded for another invoice or amount.
    async fn recorded(
        &self,
        conn: &mut PgConnection,
        command: &BankPayment,
    ) -> Result<Option<RecordedPayment>, ApiError> {
        let Some(payment) =
            repo::payments::by_external_reference(conn, PaymentMethod::BankInvoice, &command.bank_reference)
                .await?
        else {
            return Ok(None);
        };
        if !command.is_recorded_as(&payment) {
            tracing::warn!(
                payment.id = %payment.id,
                invoice = %payment.invoice_number,
                "a bank reference was recorded again with another invoice or amount"
            );
            return Err(command.conflict_with(&payment));
        }
        let invoice = self.reload(conn, payment.customer_id, payment.invoice_id).await?;
        Ok(Some(RecordedPayment {
            payment,
            invoice,
            already_recorded: true,
        }))
    }

    async fn reload(
        &self,
        conn: &mut PgConnection,
        customer_id: Uuid,
        invoice_id: Uuid,
    ) -> Result<Invoice, ApiError> {
        repo::invoices::by_reference(conn, customer_id, &InvoiceReference::Id(invoice_id))
            .await?
            .ok_or_else(|| ApiError::internal("a payment's invoice is missing"))
    }
}

fn invoice_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "invoice not found")
}
