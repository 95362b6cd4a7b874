//! Result shapes: a published COA with its structured results, the normalized analyte rows, the
//! results query, the public verification request and answer, and the JWK set of the keys that
//! sign COA contents.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::results as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Query of `GET /results`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ResultsQuery {
    /// Only COAs of this order (UUID).
    pub order_id: Option<Uuid>,
    /// Only COAs of this compound (exact).
    pub compound: Option<String>,
    /// Only COAs of this lot number (exact).
    pub lot_number: Option<String>,
    /// Published at or after this time (RFC 3339).
    pub published_from: Option<DateTime<Utc>>,
    /// Published before this time (RFC 3339).
    pub published_to: Option<DateTime<Utc>>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

impl From<ResultsQuery> for pb::ListResultsRequest {
    fn from(query: ResultsQuery) -> Self {
        Self {
            order_id: query.order_id.map(|id| id.to_string()),
            compound: query.compound,
            lot_number: query.lot_number,
            published_from: query.published_from.map(platform::time::to_timestamp),
            published_to: query.published_to.map(platform::time::to_timestamp),
            limit: query.limit,
            cursor: query.cursor,
        }
    }
}

/// One measured analyte of a COA (normalized row).
#[derive(Serialize, ToSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Analyte {
    pub coa_id: String,
    pub accession_number: String,
    pub analyte: String,
    /// Catalog test id.
    pub test_id: String,
    /// Decimal value as a string (never a float), or `null` when a qualifier stands instead.
    pub value: Option<String>,
    /// `<LOQ`, `<LOD`, `ND`, `>ULOQ`, `detected` or `not_detected`, else `null`.
    pub qualifier: Option<String>,
    pub unit: String,
    pub loq: Option<String>,
    pub lod: Option<String>,
    /// For example `>= 98.0`; `null` when the test has no specification.
    pub specification: Option<String>,
    /// `pass` or `fail` against the specification, else `null`.
    pub outcome: Option<String>,
    pub method: String,
    pub instrument: String,
    pub analyst: String,
    #[serde(serialize_with = "rfc3339")]
    pub measured_at: DateTime<Utc>,
}

/// A published certificate of analysis with its structured results.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Coa {
    /// COA id.
    pub id: String,
    pub submission_id: String,
    pub accession_number: String,
    pub order_id: String,
    pub order_number: String,
    pub compound: String,
    pub lot_number: Option<String>,
    /// `published`, `retracted` (withdrawn, still readable) or `superseded` (by an amendment).
    pub status: String,
    /// 1 for the original, higher for amendments.
    pub version: i32,
    #[serde(serialize_with = "rfc3339_opt")]
    pub published_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    pub received_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub testing_started_at: Option<DateTime<Utc>>,
    /// QA signatory.
    pub approved_by: Option<String>,
    pub analysts: Vec<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub retracted_at: Option<DateTime<Utc>>,
    pub retraction_reason: Option<String>,
    /// The COA this one amends, and why.
    pub amends: Option<String>,
    pub amendment_reason: Option<String>,
    /// The amendment that supersedes this COA.
    pub superseded_by: Option<String>,
    /// Printed on the document; reveals compound and lot on public verification.
    pub verification_code: String,
    /// The signed canonical content (JSON text) and its Ed25519 signature (base64url), verifiable
    /// with the key of the JWK set at `/.well-known/coa-signing-key.json` whose `kid` is
    /// `signingKeyId`.
    pub signed_content: String,
    pub signature: String,
    pub signing_key_id: String,
    /// Signed link to the COA's PDF; valid for one hour (do not store it as a permanent link).
    pub document_url: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub document_expires_at: Option<DateTime<Utc>>,
    pub results: Vec<Analyte>,
}

single_envelope!(CoaEnvelope, CoaData, result: Coa);

impl Coa {
    /// Makes the document link absolute under the site root `site` (`https://lab.example`).
    pub fn with_site(mut self, site: &str) -> Self {
        if self.document_url.starts_with('/') {
            self.document_url = format!("{}{}", site.trim_end_matches('/'), self.document_url);
        }
        self
    }
}
list_envelope!(CoaList, Coa);
list_envelope!(AnalyteList, Analyte);

fn analyte(coa: &pb::Coa, row: pb::AnalyteResult) -> Result<Analyte, ApiError> {
    Ok(Analyte {
        coa_id: coa.id.clone(),
        accession_number: coa.accession_number.clone(),
        measured_at: required_time(row.measured_at.as_ref(), "analyte measuredAt")?,
        analyte: row.analyte,
        test_id: row.test_id,
        value: row.value,
        qualifier: row.qualifier,
        unit: row.unit,
        loq: row.loq,
        lod: row.lod,
        specification: row.specification,
        outcome: row.outcome,
        method: row.method,
        instrument: row.instrument,
        analyst: row.analyst,
    })
}

impl TryFrom<pb::Coa> for Coa {
    type Error = ApiError;

    fn try_from(mut coa: pb::Coa) -> Result<Self, ApiError> {
        let rows = std::mem::take(&mut coa.results);
        let results = rows
            .into_iter()
            .map(|row| analyte(&coa, row))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            received_at: required_time(coa.received_at.as_ref(), "COA receivedAt")?,
            published_at: optional_time(coa.published_at.as_ref()),
            testing_started_at: optional_time(coa.testing_started_at.as_ref()),
            retracted_at: optional_time(coa.retracted_at.as_ref()),
            id: coa.id,
            submission_id: coa.submission_id,
            accession_number: coa.accession_number,
            order_id: coa.order_id,
            order_number: coa.order_number,
            compound: coa.compound,
            lot_number: coa.lot_number,
            status: coa.status,
            version: coa.version,
            approved_by: coa.approved_by,
            analysts: coa.analysts,
            retraction_reason: coa.retraction_reason,
            amends: coa.amends,
            amendment_reason: coa.amendment_reason,
            superseded_by: coa.superseded_by,
            verification_code: coa.verification_code,
            signed_content: coa.signed_content,
            signature: coa.signature,
            signing_key_id: coa.signing_key_id,
            document_url: coa.document_path,
            document_expires_at: optional_time(coa.document_expires_at.as_ref()),
            results,
        })
    }
}

/// Query of `GET /verify`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct VerifyQuery {
    /// Accession number (or the COA id printed on the document).
    // Required (documented so), optional in the type: a missing one is the operation's 400
    // `invalid_request` naming `accession`, as in the body form.
    #[param(required = true)]
    pub accession: Option<String>,
    /// Verification code printed on the COA: reveals compound and lot number.
    pub code: Option<String>,
}

/// Body of `POST /verify`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifyRequest {
    /// Accession number (or the COA id printed on the document).
    pub accession: String,
    /// Verification code printed on the COA.
    #[serde(default)]
    pub code: Option<String>,
}

/// Query of `GET /verify/batch`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct VerifyBatchQuery {
    /// Comma-separated accession numbers (1 to 100).
    pub accessions: Option<String>,
}

impl VerifyBatchQuery {
    /// The comma-separated accessions, trimmed, empty ones dropped.
    pub fn split(self) -> Vec<String> {
        self.accessions
            .unwrap_or_default()
            .split(',')
            .map(|accession| accession.trim().to_owned())
            .filter(|accession| !accession.is_empty())
            .collect()
    }
}

/// Body of `POST /verify/batch`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifyBatchRequest {
    /// 1 to 100 accession numbers (or COA ids).
    #[schema(min_items = 1, max_items = 100)]
    pub accessions: Vec<String>,
}

/// The public answer for one accession.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub accession_number: String,
    /// `authentic` (published, in force, and its signature verifies with the key `signingKeyId`
    /// names), `unverifiable` (in force, but its signature does not verify with any published
    /// key: do not rely on it), `retracted`, `superseded` or `unknown`.
    pub status: String,
    pub coa_id: Option<String>,
    /// When the COA was published: only with the matching verification code (`null` otherwise).
    #[serde(serialize_with = "rfc3339_opt")]
    pub published_at: Option<DateTime<Utc>>,
    /// The amendment that supersedes the COA.
    pub superseded_by: Option<String>,
    /// True when the presented verification code matches; only then are compound, lot number
    /// and the signed content given.
    pub code_matched: bool,
    pub compound: Option<String>,
    pub lot_number: Option<String>,
    pub signed_content: Option<String>,
    pub signature: Option<String>,
    /// Key id (`kid`) of the key that signed the COA, in the JWK set at
    /// `/.well-known/coa-signing-key.json`; null when no COA was published.
    pub signing_key_id: Option<String>,
}

single_envelope!(VerificationEnvelope, VerificationData, verification: Verification);
/// `{ "data": [ … ] }`: one verification per requested accession, in request order.
#[derive(Serialize, ToSchema)]
pub struct VerificationList {
    pub data: Vec<Verification>,
}

impl From<pb::Verification> for Verification {
    fn from(verification: pb::Verification) -> Self {
        Self {
            // When a COA was published tells about the sample: only with its code.
            published_at: optional_time(verification.published_at.as_ref())
                .filter(|_| verification.code_matched),
            accession_number: verification.accession_number,
            status: verification.status,
            coa_id: verification.coa_id,
            superseded_by: verification.superseded_by,
            code_matched: verification.code_matched,
            compound: verification.compound,
            lot_number: verification.lot_number,
            signed_content: verification.signed_content,
            signature: verification.signature,
            signing_key_id: verification.signing_key_id.filter(|kid| !kid.is_empty()),
        }
    }
}

/// One public key of COA contents: an Ed25519 JWK (RFC 8037).
#[derive(Serialize, ToSchema)]
pub struct CoaPublicJwk {
    /// Always `OKP`.
    #[schema(example = "OKP")]
    pub kty: &'static str,
    /// Always `Ed25519`.
    #[schema(example = "Ed25519")]
    pub crv: &'static str,
    /// Key id: what a COA's `signingKeyId` names.
    pub kid: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    #[schema(example = "sig")]
    pub key_use: &'static str,
    /// Always `EdDSA`.
    #[schema(example = "EdDSA")]
    pub alg: &'static str,
    /// The raw 32-byte public key, base64url without padding.
    pub x: String,
}

/// `GET /.well-known/coa-signing-key.json`: a JWK set (RFC 7517) of every key a COA may name,
/// the current key (which signs new COAs) first, then the previous keys.
#[derive(Serialize, ToSchema)]
pub struct CoaSigningKeySet {
    pub keys: Vec<CoaPublicJwk>,
}

impl From<pb::CoaPublicKey> for CoaPublicJwk {
    fn from(key: pb::CoaPublicKey) -> Self {
        Self {
            kty: "OKP",
            crv: "Ed25519",
            kid: key.kid,
            key_use: "sig",
            alg: "EdDSA",
            x: key.x,
        }
    }
}
