//! The lab-wide registries of instruments and methods (docs/registries.md): domain
//! ([`instrument`], [`method`]), SQL ([`repo`]) and the use cases ([`RegistryService`]).
//! Customers and operators read them; QA (`lab.qa`) maintains them. Each maintenance step is
//! one transaction that answers the record as it then reads; listings are keyset pages in id
//! order. Nothing here is customer data, so no read filters by customer.

mod checks;
pub mod convert;
pub mod instrument;
pub mod method;
pub mod repo;

use instrument::{Calibration, Instrument, InstrumentDraft, InstrumentFilter, InstrumentStatus};
use method::{Method, MethodDraft, MethodFilter};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{Listing, Page, PageRequest};
use sqlx::{PgConnection, PgPool};

/// The listing of instruments, in id order.
pub const INSTRUMENTS: Listing = Listing::new("registry_instruments");
/// The listing of methods, in id order.
pub const METHODS: Listing = Listing::new("registry_methods");

/// The registry use cases.
#[derive(Clone)]
pub struct RegistryService {
    pool: PgPool,
}

fn instrument_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "instrument not found")
}

fn method_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "method not found")
}

/// Re-reads an instrument inside the transaction that changed it.
async fn reread(conn: &mut PgConnection, id: &str) -> Result<Instrument, ApiError> {
    repo::find_instrument(conn, id)
        .await?
        .ok_or_else(|| ApiError::internal("an instrument vanished inside its own transaction"))
}

impl RegistryService {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// One page of instruments matching `filter`.
    pub async fn list_instruments(
        &self,
        mut filter: InstrumentFilter,
        page: &PageRequest,
    ) -> Result<Page<Instrument>, ApiError> {
        filter.after = INSTRUMENTS.after(page)?;
        filter.limit = page.fetch();
        let mut conn = self.pool.acquire().await?;
        let instruments = repo::list_instruments(&mut conn, &filter).await?;
        Ok(INSTRUMENTS.page(page, instruments, |instrument| instrument.id.clone()))
    }

    /// One instrument by id.
    pub async fn get_instrument(&self, id: &str) -> Result<Instrument, ApiError> {
        let mut conn = self.pool.acquire().await?;
        repo::find_instrument(&mut conn, id.trim())
            .await?
            .ok_or_else(instrument_not_found)
    }

    /// Creates or updates an instrument (a checked draft) with its equipment; answers it and
    /// whether it was created.
    pub async fn upsert_instrument(&self, draft: InstrumentDraft) -> Result<(Instrument, bool), ApiError> {
        let mut tx = self.pool.begin().await?;
        let created = repo::upsert_instrument(&mut tx, &draft, platform::time::now()).await?;
        let instrument = reread(&mut tx, &draft.id).await?;
        tx.commit().await?;
        tracing::info!(instrument = %draft.id, created, "instrument upserted");
        Ok((instrument, created))
    }

    /// Records a calibration (checked) of an instrument.
    pub async fn record_calibration(
        &self,
        id: &str,
        calibration: Calibration,
    ) -> Result<Instrument, ApiError> {
        let mut tx = self.pool.begin().await?;
        if !repo::record_calibration(&mut tx, id.trim(), &calibration, platform::time::now()).await? {
            return Err(instrument_not_found());
        }
        let instrument = reread(&mut tx, id.trim()).await?;
        tx.commit().await?;
        tracing::info!(instrument = %instrument.id, due_at = %calibration.due_at, "calibration recorded");
        Ok(instrument)
    }

    /// Sets an instrument's status, with an optional reason (cleared when absent).
    pub async fn set_instrument_status(
        &self,
        id: &str,
        status: InstrumentStatus,
        reason: Option<String>,
    ) -> Result<Instrument, ApiError> {
        let reason = checks::optional_text("reason", reason, 300)?;
        let mut tx = self.pool.begin().await?;
        let now = platform::time::now();
        if !repo::set_instrument_status(&mut tx, id.trim(), status, reason.as_deref(), now).await? {
            return Err(instrument_not_found());
        }
        let instrument = reread(&mut tx, id.trim()).await?;
        tx.commit().await?;
        tracing::info!(instrument = %instrument.id, status = status.as_str(), "instrument status set");
        Ok(instrument)
    }

    /// One page of methods matching `filter`.
    pub async fn list_methods(
        &self,
        mut filter: MethodFilter,
        page: &PageRequest,
    ) -> Result<Page<Method>, ApiError> {
        filter.after = METHODS.after(page)?;
        filter.limit = page.fetch();
        let mut conn = self.pool.acquire().await?;
        let methods = repo::list_methods(&mut conn, &filter).await?;
        Ok(METHODS.page(page, methods, |method| method.id.clone()))
    }

    /// One method by id.
    pub async fn get_method(&self, id: &str) -> Result<Method, ApiError> {
        let mut conn = self.pool.acquire().await?;
        repo::find_method(&mut conn, id.trim(), false)
            .await?
            .ok_or_else(method_not_found)
    }

    /// Creates a method at version 1, or updates it under its row lock with the version rule of
    /// [`method::next_version`]; answers it and whether it was created. Two creations of the
    /// same id at once: the second is 409 `conflict` (retry, it then updates).
    pub async fn upsert_method(&self, draft: MethodDraft) -> Result<(Method, bool), ApiError> {
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let current = repo::find_method(&mut tx, &draft.id, true).await?;
        let version = current
            .as_ref()
            .map_or(1, |current| method::next_version(current, &draft));
        let validated_at = method::validated_at(current.as_ref(), &draft, now);
        let created = current.is_none();
        repo::save_method(&mut tx, &draft, version, validated_at, created, now)
            .await
            .map_err(|error| match error.as_database_error() {
                Some(database) if database.is_unique_violation() => ApiError::new(
                    ErrorCode::Conflict,
                    "the method was created at the same time; retry",
                ),
                _ => error.into(),
            })?;
        let method = repo::find_method(&mut tx, &draft.id, false)
            .await?
            .ok_or_else(|| ApiError::internal("a method vanished inside its own transaction"))?;
        tx.commit().await?;
        tracing::info!(method = %method.id, version, created, "method upserted");
        Ok((method, created))
    }
}
