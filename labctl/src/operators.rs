//! `labctl operators`: register, approve, list, rotate and disable lab operators (role
//! `identity.admin`).

use crate::Connection;
use crate::OperatorsCommand;
use crate::client::{identity, request, status_error, timestamp};
use anyhow::Context;
use serde_json::{Value, json};

fn operator_json(operator: &proto::identity::Operator) -> Value {
    json!({
        "id": operator.id, "name": operator.name, "roles": operator.roles, "publicId": operator.public_id,
        "status": operator.status, "createdAt": timestamp(operator.created_at.as_ref()),
        "createdBy": operator.created_by, "approvedBy": operator.approved_by,
        "approvedAt": timestamp(operator.approved_at.as_ref()),
        "disabledAt": timestamp(operator.disabled_at.as_ref()),
    })
}

fn with_credential(operator: Option<proto::identity::Operator>, credential: String) -> anyhow::Result<Value> {
    let operator = operator.context("identity-svc returned no operator")?;
    let mut value = operator_json(&operator);
    if credential.is_empty() {
        value["credential"] = Value::Null;
        value["next"] = json!(format!(
            "another admin approves with `labctl operators approve {}` and receives the credential",
            operator.name
        ));
    } else {
        value["credential"] = json!(credential);
    }
    Ok(value)
}

/// Runs one operators command with a staff token holding `identity.admin`.
pub async fn execute(
    connection: &Connection,
    token: &str,
    command: OperatorsCommand,
) -> anyhow::Result<Value> {
    let mut client = identity(connection).await?;
    match command {
        OperatorsCommand::Create { name, roles } => {
            let roles = roles.split(',').map(|role| role.trim().to_owned()).collect();
            let message = proto::identity::CreateOperatorRequest { name, roles };
            let response = client
                .create_operator(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            with_credential(response.operator, response.credential)
        }
        OperatorsCommand::Approve { name } => {
            let message = proto::identity::ApproveOperatorRequest { name };
            let response = client
                .approve_operator(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            with_credential(response.operator, response.credential)
        }
        OperatorsCommand::List => {
            let response = client
                .list_operators(request(proto::identity::ListOperatorsRequest {}, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(Value::Array(
                response.operators.iter().map(operator_json).collect(),
            ))
        }
        OperatorsCommand::Rotate { name } => {
            let message = proto::identity::RotateOperatorCredentialRequest { name };
            let response = client
                .rotate_operator_credential(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            with_credential(response.operator, response.credential)
        }
        OperatorsCommand::Disable { name } => {
            let message = proto::identity::DisableOperatorRequest { name };
            let response = client
                .disable_operator(request(message, token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(response
                .operator
                .as_ref()
                .map(operator_json)
                .unwrap_or(Value::Null))
        }
    }
}
