//! Use cases of catalog-svc: import a catalog revision, list one page of a revision, create and
//! read quotes. Who may call which use case is the access table of the gRPC adapter
//! (`crate::grpc::ACCESS`); each use case acts for the customer (or operator) it is given,
//! validates, then owns its transaction. Parsed catalogs are cached by revision id (revisions are immutable). The quote
//! use cases are in [`quotes`].

mod quotes;

pub use quotes::OP_CREATE_QUOTE;

use crate::domain::catalog::Catalog;
use crate::domain::document::{self, CatalogDocument};
use crate::domain::listing::{CATALOG_ITEMS, CatalogPage, CursorPosition, ListRequest};
use crate::repo::{self, RevisionRow};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::IdempotencyStore;
use platform::pagination::Page;
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Longest import note, in characters.
pub const MAX_NOTE_CHARS: usize = 2000;
/// Parsed catalogs kept in memory; the cache is emptied when it grows past this.
const CACHE_CAPACITY: usize = 16;

/// Raw listing parameters as received.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    pub category: Option<String>,
    pub query: Option<String>,
    pub include: Vec<String>,
    pub limit: Option<i32>,
    pub cursor: Option<String>,
    /// Reads this revision instead of the current one (ignored with a cursor).
    pub catalog_revision: Option<String>,
}

/// Result of an import.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOutcome {
    pub revision: String,
    pub test_count: i32,
    pub bundle_count: i32,
    /// The document equals the current revision; no revision was made.
    pub unchanged: bool,
}

/// The use cases, over one database pool.
pub struct CatalogService {
    pool: PgPool,
    quote_ttl: chrono::Duration,
    idempotency: IdempotencyStore,
    catalogs: Mutex<HashMap<String, Arc<Catalog>>>,
}

fn count(value: usize) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

impl CatalogService {
    pub fn new(pool: PgPool, quote_ttl: std::time::Duration) -> Self {
        Self {
            pool,
            quote_ttl: chrono::Duration::from_std(quote_ttl).unwrap_or(chrono::Duration::minutes(15)),
            idempotency: IdempotencyStore::new(crate::SCHEMA),
            catalogs: Mutex::new(HashMap::new()),
        }
    }

    /// Imports a document as a new current revision, recording the operator who imported it
    /// (`seed` for the seed file read at start).
    pub async fn import_document(
        &self,
        document_json: &str,
        note: &str,
        imported_by: &str,
    ) -> Result<ImportOutcome, ApiError> {
        if note.chars().count() > MAX_NOTE_CHARS {
            let message = format!("note has at most {MAX_NOTE_CHARS} characters");
            return Err(ApiError::field(ErrorCode::InvalidRequest, "note", message));
        }
        let parsed = document::parse(document_json)?;
        let catalog = Catalog::from_document(parsed.document)?;
        let (tests, bundles) = catalog.counts();
        let mut tx = self.pool.begin().await?;
        repo::lock_imports(&mut tx).await?;
        if let Some(current) = repo::current_revision(&mut tx).await?
            && current.content_sha256 == parsed.sha256
        {
            tx.commit().await?;
            let RevisionRow {
                id,
                test_count,
                bundle_count,
                ..
            } = current;
            return Ok(ImportOutcome {
                revision: id,
                test_count,
                bundle_count,
                unchanged: true,
            });
        }
        let revision = RevisionRow {
            id: repo::next_revision_id(&mut tx).await?,
            content_sha256: parsed.sha256,
            test_count: count(tests),
            bundle_count: count(bundles),
        };
        repo::insert_current_revision(&mut tx, &revision, &parsed.canonical, note, imported_by).await?;
        repo::insert_items(&mut tx, &revision.id, catalog.items.values()).await?;
        tx.commit().await?;
        tracing::info!(revision = %revision.id, tests, bundles, imported_by, "catalog revision imported");
        self.remember(&revision.id, Arc::new(catalog));
        let RevisionRow {
            id,
            test_count,
            bundle_count,
            ..
        } = revision;
        Ok(ImportOutcome {
            revision: id,
            test_count,
            bundle_count,
            unchanged: false,
        })
    }

    /// Whether any catalog was imported.
    pub async fn has_catalog(&self) -> Result<bool, ApiError> {
        Ok(repo::current_revision_id(&self.pool).await?.is_some())
    }

    /// Returns one page of the current revision, or of the revision pinned by the cursor.
    pub async fn list_items(&self, params: ListParams) -> Result<CatalogPage, ApiError> {
        let ListParams {
            category,
            query,
            include,
            limit,
            cursor,
            catalog_revision,
        } = params;
        let request = ListRequest::new(category, query, &include, limit, cursor)?;
        let (revision, catalog) = match &request.cursor {
            Some(position) => {
                let catalog = self.catalog(&position.revision).await?.ok_or_else(|| {
                    ApiError::field(
                        ErrorCode::InvalidCursor,
                        "cursor",
                        "the cursor names an unknown catalog revision",
                    )
                })?;
                (position.revision.clone(), catalog)
            }
            None => match catalog_revision {
                Some(revision) => {
                    let catalog = self.catalog(&revision).await?.ok_or_else(|| {
                        ApiError::field(
                            ErrorCode::InvalidRequest,
                            "catalogRevision",
                            "the catalog revision is unknown",
                        )
                    })?;
                    (revision, catalog)
                }
                None => self.current().await?,
            },
        };
        if let Some(category) = &request.filters.category
            && catalog.category(category).is_none()
        {
            let message = format!("unknown category {category:?}");
            return Err(ApiError::field(ErrorCode::UnknownCategory, "category", message));
        }
        let after = request.cursor.as_ref().map(|position| position.after_id.as_str());
        let items = repo::list_items(
            &self.pool,
            &revision,
            &request.filters,
            after,
            request.page.fetch(),
        )
        .await?;
        let Page {
            mut items,
            next_cursor,
        } = CATALOG_ITEMS.page(&request.page, items, |item| CursorPosition {
            revision: revision.clone(),
            filters: request.filters.clone(),
            after_id: item.id.clone(),
        });
        let includes = request.includes;
        if !includes.requirements {
            items.iter_mut().for_each(|item| item.sample_requirement = None);
        }
        Ok(CatalogPage {
            revision,
            items,
            next_cursor,
            categories: if includes.categories {
                catalog.categories.clone()
            } else {
                Vec::new()
            },
            matrices: if includes.matrices {
                catalog.matrices.clone()
            } else {
                Vec::new()
            },
            turnarounds: if includes.turnarounds {
                catalog.turnarounds.clone()
            } else {
                Vec::new()
            },
        })
    }

    /// The current revision and its catalog; `catalog_unavailable` before the first import.
    pub(crate) async fn current(&self) -> Result<(String, Arc<Catalog>), ApiError> {
        let unavailable = || ApiError::new(ErrorCode::CatalogUnavailable, "no catalog has been imported yet");
        let revision = repo::current_revision_id(&self.pool)
            .await?
            .ok_or_else(unavailable)?;
        let catalog = self.catalog(&revision).await?.ok_or_else(unavailable)?;
        Ok((revision, catalog))
    }

    /// The parsed catalog of a revision, from the cache or the stored document.
    async fn catalog(&self, revision: &str) -> Result<Option<Arc<Catalog>>, ApiError> {
        if let Some(catalog) = self
            .catalogs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(revision)
        {
            return Ok(Some(catalog.clone()));
        }
        let Some(value) = repo::revision_document(&self.pool, revision).await? else {
            return Ok(None);
        };
        let document: CatalogDocument = serde_json::from_value(value).map_err(ApiError::internal)?;
        let catalog =
            Arc::new(Catalog::from_document(document).map_err(|error| ApiError::internal(error.message))?);
        self.remember(revision, catalog.clone());
        Ok(Some(catalog))
    }

    fn remember(&self, revision: &str, catalog: Arc<Catalog>) {
        let mut catalogs = self.catalogs.lock().unwrap_or_else(|p| p.into_inner());
        if catalogs.len() >= CACHE_CAPACITY {
            catalogs.clear();
        }
        catalogs.insert(revision.to_owned(), catalog);
    }
}
