//! The gRPC plumbing every labctl command shares: the identity client, the staff token exchanged
//! for the operator's credential, outgoing requests, and rendering errors and timestamps.

use crate::Connection;
use anyhow::Context;
use proto::identity::identity_service_client::IdentityServiceClient;
use serde_json::Value;

/// Exchanges the operator's credential for a staff token for `audience` carrying `role` (no role
/// when empty: the operator's identity only, for what any operator may do).
pub(crate) async fn staff_token(
    connection: &Connection,
    audience: &str,
    role: &str,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        !connection.credential.trim().is_empty(),
        "no operator credential: set LABCTL_CREDENTIAL (or --credential) to your lab_op_… credential"
    );
    let message = proto::identity::IssueStaffTokenRequest {
        credential: connection.credential.trim().to_owned(),
        audience: audience.to_owned(),
        roles: if role.is_empty() {
            Vec::new()
        } else {
            vec![role.to_owned()]
        },
    };
    let response = identity(connection)
        .await?
        .issue_staff_token(tonic::Request::new(message))
        .await
        .map_err(status_error)?;
    Ok(response.into_inner().token)
}

pub(crate) fn request<T>(message: T, token: &str) -> tonic::Request<T> {
    platform::grpc::outgoing(message, token)
}

pub(crate) fn status_error(status: tonic::Status) -> anyhow::Error {
    let error = platform::error::ApiError::from_status(&status);
    anyhow::anyhow!("{}: {}", error.code.as_str(), error.message)
}

pub(crate) async fn identity(
    connection: &Connection,
) -> anyhow::Result<IdentityServiceClient<tonic::transport::Channel>> {
    IdentityServiceClient::connect(connection.identity_addr.clone())
        .await
        .with_context(|| {
            format!(
                "cannot reach the gateway's identity API at {}",
                connection.identity_addr
            )
        })
}

pub(crate) fn timestamp(value: Option<&prost_types::Timestamp>) -> Value {
    platform::time::timestamp_rfc3339(value)
        .map(Value::String)
        .unwrap_or(Value::Null)
}
