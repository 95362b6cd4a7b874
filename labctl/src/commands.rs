//! Execution of labctl commands: each asks the identity API for a staff token addressed to the
//! one service it calls with the one role it needs, then makes its call.

use crate::client::{identity, request, staff_token, status_error, timestamp};
use crate::{
    CatalogCommand, Cli, Command, Connection, CustomersCommand, KeysCommand, PaymentsCommand, TokensCommand,
    WebhooksCommand,
};
use anyhow::Context;
use platform::mesh;
use platform::principal::roles;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use proto::common::InvoiceStatus;
use proto::enums::shown;
use proto::payments::payments_service_client::PaymentsServiceClient;
use proto::webhooks::webhooks_service_client::WebhooksServiceClient;
use serde_json::{Value, json};

/// Runs one command and returns its result as JSON.
pub async fn execute(cli: Cli) -> anyhow::Result<Value> {
    let connection = &cli.connection;
    match cli.command {
        Command::Tokens(command) => Ok(tokens(command)),
        Command::Token { audience, roles } => token(connection, &audience, roles, cli.json).await,
        Command::Customers(command) => {
            let token = staff_token(connection, mesh::IDENTITY_SVC, roles::IDENTITY_ADMIN).await?;
            customers(connection, &token, command).await
        }
        Command::Keys(command) => {
            let token = staff_token(connection, mesh::IDENTITY_SVC, roles::IDENTITY_ADMIN).await?;
            keys(connection, &token, command).await
        }
        Command::Operators(command) => {
            let token = staff_token(connection, mesh::IDENTITY_SVC, roles::IDENTITY_ADMIN).await?;
            crate::operators::execute(connection, &token, command).await
        }
        Command::Catalog(command) => {
            let token = staff_token(connection, mesh::CATALOG_SVC, roles::CATALOG_ADMIN).await?;
            catalog(connection, &token, command).await
        }
        Command::Payments(PaymentsCommand::Refunds { status, limit }) => {
            let token = staff_token(connection, mesh::PAYMENTS_SVC, "").await?;
            let message = proto::payments::ListRefundsRequest { status, limit };
            let response = payments_client(connection)
                .await?
                .list_refunds(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(json!({ "refunds": response.refunds.iter().map(refund_json).collect::<Vec<_>>() }))
        }
        Command::Payments(PaymentsCommand::RecordRefund { refund, reference }) => {
            let token = staff_token(connection, mesh::PAYMENTS_SVC, roles::PAYMENTS_ADMIN).await?;
            let message = proto::payments::RecordRefundRequest {
                refund_id: refund,
                reference,
            };
            let response = payments_client(connection)
                .await?
                .record_refund(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(json!({
                "refund": response.refund.as_ref().map(refund_json),
                "alreadyRecorded": response.already_recorded,
            }))
        }
        Command::Payments(command) => {
            let token = staff_token(connection, mesh::PAYMENTS_SVC, roles::PAYMENTS_ADMIN).await?;
            payments(connection, &token, command).await
        }
        Command::Shipments(command) => crate::shipments::execute(connection, command).await,
        Command::Tickets(command) => crate::tickets::execute(connection, command).await,
        Command::Webhooks(command) => {
            let token = staff_token(connection, mesh::WEBHOOKS_SVC, roles::WEBHOOKS_ADMIN).await?;
            webhooks(connection, &token, command).await
        }
        Command::Cancellations(command) => crate::cancellations::execute(connection, command).await,
        Command::Samples(command) => {
            let token = staff_token(connection, mesh::ORDERS_SVC, roles::LAB_TECHNICIAN).await?;
            crate::lab::samples(connection, &token, command).await
        }
        Command::Results(command) => {
            let role = crate::lab::role_of(&command);
            let token = staff_token(connection, mesh::RESULTS_SVC, role).await?;
            crate::lab::results(connection, &token, command).await
        }
        Command::Data(command) => {
            let role = match command {
                crate::DataCommand::Import { .. } => roles::LAB_ANALYST,
                crate::DataCommand::Imports { .. } => "",
            };
            let token = staff_token(connection, mesh::RESULTS_SVC, role).await?;
            crate::data::execute(connection, &token, command).await
        }
        Command::Instruments(command) => crate::registry::instruments(connection, command).await,
        Command::Methods(command) => crate::registry::methods(connection, command).await,
        Command::Demo { order, qa_credential } => crate::demo::walk(connection, &order, &qa_credential).await,
        Command::Health => {
            // Any operator may look; the token carries no role.
            let token = staff_token(connection, mesh::GATEWAY, "").await?;
            crate::health::health(connection, &token).await
        }
    }
}

/// A staff token of the operator for `audience` with `roles`: the bare token, or with `json`
/// the token and what it grants.
async fn token(
    connection: &Connection,
    audience: &str,
    roles: Vec<String>,
    json: bool,
) -> anyhow::Result<Value> {
    let roles: Vec<String> = roles
        .into_iter()
        .map(|role| role.trim().to_owned())
        .filter(|role| !role.is_empty())
        .collect();
    let issued = crate::client::issue_staff_token(connection, audience, roles.clone()).await?;
    if !json {
        return Ok(Value::String(issued.token));
    }
    Ok(json!({
        "token": issued.token,
        "audience": audience,
        "roles": roles,
        "operator": issued.operator,
        "expiresAt": timestamp(issued.expires_at.as_ref()),
    }))
}

/// Generates a signing key (local; nothing is sent anywhere).
fn tokens(command: TokensCommand) -> Value {
    let TokensCommand::GenerateKey { issuer, kid } = command;
    let kid = kid.unwrap_or_else(|| format!("{issuer}-{}", chrono::Utc::now().format("%Y%m%d")));
    let (key, private) = platform::tokens::SigningKey::generate(&kid);
    let private: Value =
        serde_json::from_str(secrecy::ExposeSecret::expose_secret(&private)).unwrap_or_default();
    json!({ "signingKey": private, "trustedKey": key.public_jwk(&issuer) })
}

fn customer_json(customer: &proto::identity::Customer) -> Value {
    json!({
        "id": customer.id, "name": customer.name, "email": customer.email,
        "createdAt": timestamp(customer.created_at.as_ref()), "sandbox": customer.sandbox,
    })
}

fn key_json(key: &proto::identity::ApiKey) -> Value {
    json!({
        "id": key.id, "customerId": key.customer_id, "publicId": key.public_id, "name": key.name,
        "scopes": key.scopes, "spendLimitCents": key.spend_limit_cents,
        "createdAt": timestamp(key.created_at.as_ref()), "revokedAt": timestamp(key.revoked_at.as_ref()),
    })
}

async fn customers(connection: &Connection, token: &str, command: CustomersCommand) -> anyhow::Result<Value> {
    let mut client = identity(connection).await?;
    match command {
        CustomersCommand::Ensure { name, email } => {
            let response = client
                .create_customer(request(
                    proto::identity::CreateCustomerRequest { name, email },
                    token,
                ))
                .await
                .map_err(status_error)?
                .into_inner();
            let customer = response.customer.context("identity-svc returned no customer")?;
            let mut value = customer_json(&customer);
            value["created"] = json!(response.created);
            Ok(value)
        }
        CustomersCommand::List => {
            let response = client
                .list_customers(request(proto::identity::ListCustomersRequest {}, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(Value::Array(
                response.customers.iter().map(customer_json).collect(),
            ))
        }
        CustomersCommand::Sandbox { customer, state } => {
            let message = proto::identity::SetCustomerSandboxRequest {
                customer,
                sandbox: state == "on",
            };
            let response = client
                .set_customer_sandbox(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            let customer = response.customer.context("identity-svc returned no customer")?;
            let mut value = customer_json(&customer);
            value["changed"] = json!(response.changed);
            Ok(value)
        }
    }
}

async fn keys(connection: &Connection, token: &str, command: KeysCommand) -> anyhow::Result<Value> {
    let mut client = identity(connection).await?;
    match command {
        KeysCommand::Create {
            customer,
            name,
            scopes,
            spend_limit_cents,
        } => {
            let scopes = scopes
                .split(',')
                .map(str::trim)
                .filter(|scope| !scope.is_empty())
                .map(str::to_owned)
                .collect();
            let message = proto::identity::CreateApiKeyRequest {
                customer_id: customer,
                name,
                scopes,
                spend_limit_cents,
            };
            let response = client
                .create_api_key(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            let mut value = response.key.as_ref().map(key_json).unwrap_or_else(|| json!({}));
            value["key"] = json!(response.plaintext);
            Ok(value)
        }
        KeysCommand::List { customer } => {
            let message = proto::identity::ListApiKeysRequest {
                customer_id: customer,
            };
            let response = client
                .list_api_keys(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(Value::Array(response.keys.iter().map(key_json).collect()))
        }
        KeysCommand::Revoke { key } => {
            let message = proto::identity::RevokeApiKeyRequest { key };
            let response = client
                .revoke_api_key(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(response.key.as_ref().map(key_json).unwrap_or(Value::Null))
        }
    }
}

async fn catalog(connection: &Connection, token: &str, command: CatalogCommand) -> anyhow::Result<Value> {
    let CatalogCommand::Import { file, note } = command;
    let document_json =
        std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut client = connection
        .channel(&connection.catalog_addr)
        .await
        .map(CatalogServiceClient::new)
        .with_context(|| format!("cannot reach catalog-svc at {}", connection.catalog_addr))?;
    let message = proto::catalog::ImportCatalogRequest { document_json, note };
    let response = client
        .import_catalog(request(message, token))
        .await
        .map_err(status_error)?
        .into_inner();
    Ok(json!({
        "catalogRevision": response.catalog_revision, "testCount": response.test_count,
        "bundleCount": response.bundle_count, "unchanged": response.unchanged,
    }))
}

async fn payments(connection: &Connection, token: &str, command: PaymentsCommand) -> anyhow::Result<Value> {
    let (invoice, amount_cents, bank_reference, received_at) = match command {
        PaymentsCommand::Record {
            invoice,
            amount_cents,
            bank_reference,
            received_at,
        } => (invoice, amount_cents, bank_reference, received_at),
        PaymentsCommand::SetEnvelope {
            customer,
            key,
            per_order_cents,
            daily_cents,
            monthly_cents,
        } => {
            let message = proto::payments::SetSpendEnvelopeRequest {
                customer_id: customer,
                key_id: key,
                per_order_cap_cents: per_order_cents,
                daily_cap_cents: daily_cents,
                monthly_cap_cents: monthly_cents,
            };
            let mut client = payments_client(connection).await?;
            let response = client
                .set_spend_envelope(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            return Ok(envelope_json(&response.envelope.unwrap_or_default()));
        }
        PaymentsCommand::GetEnvelope { customer, key } => {
            let message = proto::payments::GetSpendEnvelopeRequest {
                customer_id: Some(customer),
                key_id: Some(key),
            };
            let mut client = payments_client(connection).await?;
            let response = client
                .get_spend_envelope(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            return Ok(envelope_json(&response.envelope.unwrap_or_default()));
        }
        PaymentsCommand::Refunds { .. } | PaymentsCommand::RecordRefund { .. } => {
            anyhow::bail!("refund commands are dispatched with their own token")
        }
    };
    let received_at = match received_at {
        Some(text) => Some(rfc3339_timestamp(&text, "--received-at")?),
        None => None,
    };
    let mut client = connection
        .channel(&connection.payments_addr)
        .await
        .map(PaymentsServiceClient::new)
        .with_context(|| format!("cannot reach payments-svc at {}", connection.payments_addr))?;
    let message = proto::payments::RecordBankPaymentRequest {
        invoice_reference: invoice,
        amount_cents,
        bank_reference,
        received_at,
    };
    let response = client
        .record_bank_payment(request(message, token))
        .await
        .map_err(status_error)?
        .into_inner();
    let payment = response.payment.unwrap_or_default();
    let invoice = response.invoice.unwrap_or_default();
    Ok(json!({
        "paymentId": payment.id, "amountCents": payment.amount_cents, "alreadyRecorded": response.already_recorded,
        "recordedBy": payment.recorded_by,
        "invoice": { "id": invoice.id, "invoiceNumber": invoice.invoice_number,
                     "status": shown::<InvoiceStatus>(invoice.status, invoice.legacy_status),
                     "amountPaidCents": invoice.amount_paid_cents, "amountDueCents": invoice.amount_due_cents },
    }))
}

fn rfc3339_timestamp(text: &str, flag: &str) -> anyhow::Result<prost_types::Timestamp> {
    let time =
        chrono::DateTime::parse_from_rfc3339(text).with_context(|| format!("{flag} must be RFC 3339"))?;
    Ok(platform::time::to_timestamp(time.with_timezone(&chrono::Utc)))
}

fn refund_json(refund: &proto::payments::Refund) -> Value {
    json!({
        "id": refund.id, "orderNumber": refund.order_number, "invoiceNumber": refund.invoice_number,
        "rail": shown::<proto::common::PaymentMethod>(refund.rail, String::new()),
        "amountCents": refund.amount_cents, "currency": refund.currency, "status": refund.status,
        "paidWith": refund.paid_with, "reference": refund.reference, "failure": refund.failure,
        "recordedBy": refund.recorded_by, "createdAt": timestamp(refund.created_at.as_ref()),
        "completedAt": timestamp(refund.completed_at.as_ref()),
    })
}

fn delivery_json(delivery: &proto::webhooks::Delivery) -> Value {
    let attempts: Vec<Value> = delivery
        .attempts
        .iter()
        .map(|attempt| {
            json!({
                "attemptNumber": attempt.attempt_number, "attemptedAt": timestamp(attempt.attempted_at.as_ref()),
                "statusCode": attempt.status_code, "latencyMs": attempt.latency_ms, "error": attempt.error,
                "outcome": attempt.outcome,
            })
        })
        .collect();
    json!({
        "id": delivery.id, "endpointId": delivery.endpoint_id, "eventId": delivery.event_id,
        "eventType": delivery.event_type, "status": delivery.status, "attemptCount": delivery.attempt_count,
        "nextAttemptAt": timestamp(delivery.next_attempt_at.as_ref()), "createdAt": timestamp(delivery.created_at.as_ref()),
        "attempts": attempts,
    })
}

async fn webhooks(connection: &Connection, token: &str, command: WebhooksCommand) -> anyhow::Result<Value> {
    let mut client = connection
        .channel(&connection.webhooks_addr)
        .await
        .map(WebhooksServiceClient::new)
        .with_context(|| format!("cannot reach webhooks-svc at {}", connection.webhooks_addr))?;
    match command {
        WebhooksCommand::Deliveries {
            endpoint,
            status,
            limit,
        } => {
            let message = proto::webhooks::ListDeliveriesRequest {
                endpoint_id: endpoint,
                status,
                limit,
                cursor: None,
            };
            let response = client
                .list_deliveries(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(Value::Array(
                response.deliveries.iter().map(delivery_json).collect(),
            ))
        }
        WebhooksCommand::Redeliver { endpoint } => {
            let message = proto::webhooks::RedeliverDeadLettersRequest {
                endpoint_id: endpoint,
            };
            let response = client
                .redeliver_dead_letters(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(json!({ "queued": response.queued }))
        }
        WebhooksCommand::Replay { endpoint, since } => {
            let since = rfc3339_timestamp(&since, "--since")?;
            let message = proto::webhooks::ReplayEventsRequest {
                endpoint_id: endpoint,
                since: Some(since),
            };
            let response = client
                .replay_events(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(json!({ "queued": response.queued }))
        }
    }
}

async fn payments_client(
    connection: &Connection,
) -> anyhow::Result<PaymentsServiceClient<tonic::transport::Channel>> {
    connection
        .channel(&connection.payments_addr)
        .await
        .map(PaymentsServiceClient::new)
        .with_context(|| format!("cannot reach payments-svc at {}", connection.payments_addr))
}

fn envelope_json(envelope: &proto::payments::SpendEnvelope) -> Value {
    json!({
        "keyId": envelope.key_id, "customerId": envelope.customer_id, "configured": envelope.configured,
        "perOrderCapCents": envelope.per_order_cap_cents, "dailyCapCents": envelope.daily_cap_cents,
        "monthlyCapCents": envelope.monthly_cap_cents, "spentTodayCents": envelope.spent_today_cents,
        "spentThisMonthCents": envelope.spent_this_month_cents,
        "remainingTodayCents": envelope.remaining_today_cents,
        "remainingThisMonthCents": envelope.remaining_this_month_cents,
        "withoutEnvelope": envelope.without_envelope,
    })
}
