//! The OpenAPI 3.1.0 document (`GET /api/v1/openapi.json`), generated from the handlers'
//! `#[utoipa::path]` attributes (written by `crate::operation_table`'s declarations) and the
//! DTOs' `ToSchema` derives, then completed from the scope table: each operation's description
//! names its scope, its security requirement lists the scope, operations that take
//! `Idempotency-Key` declare the header (required or optional), every `cursor` parameter has the
//! one description of the opaque cursor, and every operation lists the error responses the
//! front door and its handler can answer with the `ErrorEnvelope` schema (404 where a path
//! parameter or a body property names a resource).

use crate::dto::common::{ErrorBody, ErrorEnvelope};
use crate::scopes::{self, Access, Idempotency};
use http::Method;
use utoipa::OpenApi;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, Required, ResponseBuilder};

/// Version of the interface description required by the spec.
pub const DOCUMENT_VERSION: &str = "2026-07-17";
/// Name of the bearer security scheme.
pub const BEARER: &str = "bearerAuth";
/// What every listing's `cursor` parameter says (the format is `platform::pagination`'s).
pub const CURSOR_DESCRIPTION: &str = "Opaque pagination cursor: pass back `pagination.nextCursor` of \
    the previous page unchanged. Do not parse, build or edit it; its content may change at any time. \
    A malformed or edited cursor, or one from another listing, is 400 `invalid_cursor`. Absent: the \
    first page.";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Laboratory Testing Agent API",
        version = "2026-07-17",
        description = "Customer-bound programmatic interface to a testing laboratory. Every operation needs \
            `Authorization: Bearer svc_live_<public-id>_<secret>` holding the scope named in its description. \
            Single resources answer `{ \"data\": { \"<name>\": { … } } }`, lists answer \
            `{ \"data\": [ … ], \"pagination\": { \"nextCursor\": … } }`, errors answer \
            `{ \"error\": { \"code\", \"message\", \"details\" } }`. Money is integer USD cents. \
            No string may contain a control character (U+0000–U+001F, U+007F, U+0080–U+009F) except \
            TAB, LF and CR in `notes`, `matrixNotes` and `description`; path and query parameters must be \
            validly percent-encoded UTF-8. A refusal is 400 `invalid_request` whose `details.field` names \
            the location, e.g. `path.reference`, `query.query`, `body.sampleMetadata[0].lotNumber`."
    ),
    servers((url = "/api/v1/agent", description = "REST interface, version 1, agent area")),
    components(schemas(ErrorEnvelope, ErrorBody)),
    tags(
        (name = "catalog", description = "catalog and quotes"),
        (name = "orders", description = "laboratory orders"),
        (name = "billing", description = "invoices and payments"),
        (name = "shipping", description = "prepaid inbound labels, tracking and door pickups"),
        (name = "results", description = "QA-published certificates of analysis and their analyte rows"),
        (name = "registry", description = "the lab-wide instrument and method registries"),
        (name = "verification", description = "public COA authenticity check (no key)"),
        (name = "webhooks", description = "signed webhook endpoints and their deliveries"),
    )
)]
struct ApiDoc;

/// The document before routes are added.
pub fn base() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    // utoipa copies the crate's license, which is not a public one.
    document.info.license = None;
    let components = document.components.get_or_insert_with(Default::default);
    let scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format("svc_live_<public-id>_<secret>")
        .description(Some(
            "a customer API key; the security requirement of each operation lists its scopes",
        ))
        .build();
    components.add_security_scheme(BEARER, SecurityScheme::Http(scheme));
    document
}

/// Completes the generated document from the scope table.
///
/// # Panics
/// When a documented operation is missing from the scope table (a programming error that the
/// unit tests catch).
pub fn finish(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let components = document.components.clone().unwrap_or_default();
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations_mut(item) {
            let entry = scopes::operation(&method, path)
                .unwrap_or_else(|| panic!("{method} {path} is documented but missing from the scope table"));
            let finds = path.contains('{') || body_names_a_resource(operation, &components);
            complete(operation, entry, finds);
        }
    }
    document
}

/// The body properties that name an existing resource of the customer (a service answers 404
/// `not_found`, `quote_not_found` or `transaction_not_found` when there is none).
pub const RESOURCE_PROPERTIES: &[&str] = &["quoteId", "orderReference", "reference"];

/// True when the operation's JSON body names a resource ([`RESOURCE_PROPERTIES`]): it can
/// answer 404 like an operation with a path parameter.
fn body_names_a_resource(operation: &Operation, components: &utoipa::openapi::Components) -> bool {
    let Some(RefOr::T(body)) = &operation.request_body else {
        return false;
    };
    let Some(RefOr::T(content)) = body.content.get("application/json") else {
        return false;
    };
    let Some(RefOr::Ref(reference)) = &content.schema else {
        return false;
    };
    let name = reference.ref_location.rsplit('/').next().unwrap_or_default();
    match components.schemas.get(name) {
        Some(RefOr::T(Schema::Object(object))) => RESOURCE_PROPERTIES
            .iter()
            .any(|property| object.properties.contains_key(*property)),
        _ => false,
    }
}

fn operations_mut(item: &mut PathItem) -> Vec<(Method, &mut Operation)> {
    [
        (Method::GET, item.get.as_mut()),
        (Method::POST, item.post.as_mut()),
        (Method::PUT, item.put.as_mut()),
        (Method::PATCH, item.patch.as_mut()),
        (Method::DELETE, item.delete.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
    .collect()
}

fn complete(operation: &mut Operation, entry: &scopes::Operation, finds: bool) {
    let access = match entry.access {
        Access::Scopes(required) => {
            operation.security = Some(vec![SecurityRequirement::new(BEARER, required.iter().copied())]);
            format!(
                "Required scope: {}.",
                required
                    .iter()
                    .map(|scope| format!("`{scope}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        }
        Access::Public => {
            operation.security = Some(vec![SecurityRequirement::default()]);
            "Public: no API key; rate-limited per client address and by the global `verify-lookups` ceiling (one token per accession looked up, shared by every client).".to_owned()
        }
    };
    operation.description = Some(match operation.description.take() {
        Some(text) if !text.is_empty() => format!("{text}\n\n{access}"),
        _ => access,
    });
    describe_cursor(operation);
    match entry.idempotency {
        Idempotency::Required => operation
            .parameters
            .get_or_insert_with(Vec::new)
            .push(idempotency_header(Required::True).into()),
        Idempotency::Optional => operation
            .parameters
            .get_or_insert_with(Vec::new)
            .push(idempotency_header(Required::False).into()),
        Idempotency::None => {}
    }
    let mut errors = vec![
        ("400", "invalid request, body, cursor or idempotency key"),
        ("401", "missing, malformed, unknown or revoked API key"),
        (
            "403",
            "the key lacks the scope (insufficient_scope) or spend authorization",
        ),
        ("409", "conflict or idempotency collision"),
        (
            "429",
            "rate limited (per-key, per-address, key-lookups or verify-lookups policy); retry after Retry-After seconds",
        ),
        ("500", "unexpected error, logged with the request id"),
        (
            "503",
            "a dependency is unavailable (service_unavailable) or the gateway is overloaded; retry later",
        ),
        (
            "504",
            "the request took longer than the gateway's time limit (timeout); retry with the same Idempotency-Key",
        ),
    ];
    if finds {
        errors.push(("404", "not found, or owned by another customer"));
    }
    for (status, description) in errors {
        let mut response = ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                .build(),
        );
        if status == "401" {
            response = response.header(
                "WWW-Authenticate",
                HeaderBuilder::new().description(Some("Bearer challenge")).build(),
            );
        }
        if status == "429" {
            response = response
                .header(
                    "Retry-After",
                    HeaderBuilder::new().description(Some("seconds to wait")).build(),
                )
                .header(
                    "RateLimit-Policy",
                    HeaderBuilder::new()
                        .description(Some(
                            "the limit that refused the request, e.g. `\"per-key\";q=40;w=2` (draft-ietf-httpapi-ratelimit-headers)",
                        ))
                        .build(),
                )
                .header(
                    "RateLimit",
                    HeaderBuilder::new()
                        .description(Some("its state, e.g. `\"per-key\";r=0;t=2`: requests left, seconds until whole again"))
                        .build(),
                );
        }
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| response.build().into());
    }
}

/// Gives a `cursor` query parameter the one opaque-cursor description, keeping what its DTO
/// adds about the listing.
fn describe_cursor(operation: &mut Operation) {
    let cursors = operation
        .parameters
        .iter_mut()
        .flatten()
        .filter_map(|parameter| match parameter {
            RefOr::T(parameter)
                if parameter.name == "cursor" && parameter.parameter_in == ParameterIn::Query =>
            {
                Some(parameter)
            }
            _ => None,
        });
    for parameter in cursors {
        parameter.description = Some(match parameter.description.take() {
            Some(specific) if !specific.is_empty() => format!("{CURSOR_DESCRIPTION} {specific}"),
            _ => CURSOR_DESCRIPTION.to_owned(),
        });
    }
}

fn idempotency_header(required: Required) -> utoipa::openapi::path::Parameter {
    let description = match required {
        Required::True => "8 to 255 visible ASCII characters; binds the exact request to its first result",
        Required::False => {
            "optional; 8 to 255 visible ASCII characters; binds the exact request to its first result. \
            Without it, the same request (same API key, path and body) is answered like the first"
        }
    };
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(8))
        .max_length(Some(255))
        .build();
    ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(required)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cursor_parameter_is_described_as_opaque() {
        let (_, document) = crate::http::agent_routes();
        let mut cursors = 0;
        for (path, item) in document.paths.paths.iter() {
            let operations = [&item.get, &item.post, &item.delete];
            for operation in operations.into_iter().flatten() {
                for parameter in operation.parameters.iter().flatten() {
                    if let RefOr::T(parameter) = parameter
                        && parameter.name == "cursor"
                    {
                        cursors += 1;
                        let description = parameter.description.as_deref().unwrap_or_default();
                        assert!(
                            description.starts_with(CURSOR_DESCRIPTION),
                            "{path}: {description}"
                        );
                    }
                }
            }
        }
        assert!(cursors >= 6, "every listing has a cursor: {cursors}");
    }
}
