//! The gRPC plumbing every labctl command shares: the identity client, the staff token exchanged
//! for the operator's credential, outgoing requests, and rendering errors and timestamps.

use crate::Connection;
use anyhow::Context;
use platform::grpc::tls::{MeshTls, Role};
use proto::identity::identity_service_client::IdentityServiceClient;
use serde_json::Value;
use tonic::transport::{Channel, Endpoint};

/// Exchanges the operator's credential for a staff token for `audience` carrying `role` (no role
/// when empty: the operator's identity only, for what any operator may do).
pub(crate) async fn staff_token(
    connection: &Connection,
    audience: &str,
    role: &str,
) -> anyhow::Result<String> {
    let roles = if role.is_empty() {
        Vec::new()
    } else {
        vec![role.to_owned()]
    };
    Ok(issue_staff_token(connection, audience, roles).await?.token)
}

/// Exchanges the operator's credential for a staff token for `audience` carrying `roles`:
/// the whole answer (token, expiry, operator).
pub(crate) async fn issue_staff_token(
    connection: &Connection,
    audience: &str,
    roles: Vec<String>,
) -> anyhow::Result<proto::identity::IssueStaffTokenResponse> {
    anyhow::ensure!(
        !connection.credential.trim().is_empty(),
        "no operator credential: set LABCTL_CREDENTIAL (or --credential) to your lab_op_… credential"
    );
    let message = proto::identity::IssueStaffTokenRequest {
        credential: connection.credential.trim().to_owned(),
        audience: audience.to_owned(),
        roles,
    };
    let response = identity(connection)
        .await?
        .issue_staff_token(tonic::Request::new(message))
        .await
        .map_err(status_error)?;
    Ok(response.into_inner())
}

impl Connection {
    /// The TLS material given (`--ca-file`, `--client-cert-file`, `--client-key-file` or their
    /// `LABCTL_*` variables; when none is given, the `GRPC_TLS_*` files of the pod labctl runs
    /// in), checked; `None` when there is none (plaintext, development).
    pub(crate) fn tls(&self) -> anyhow::Result<Option<MeshTls>> {
        use platform::grpc::tls::{CA_FILE_VAR, CERT_FILE_VAR, KEY_FILE_VAR};
        let given = |flag: &'static str, path: &Option<std::path::PathBuf>| {
            path.as_ref()
                .map(|path| (flag.to_owned(), path.display().to_string()))
        };
        let mut files = [
            given(
                "--client-cert-file (LABCTL_CLIENT_CERT_FILE)",
                &self.client_cert_file,
            ),
            given(
                "--client-key-file (LABCTL_CLIENT_KEY_FILE)",
                &self.client_key_file,
            ),
            given("--ca-file (LABCTL_CA_FILE)", &self.ca_file),
        ];
        if files.iter().all(Option::is_none) {
            files = [CERT_FILE_VAR, KEY_FILE_VAR, CA_FILE_VAR]
                .map(|name| platform::config::env_var(name).map(|path| (name.to_owned(), path)));
        }
        match files {
            [None, None, None] => Ok(None),
            [Some(cert), Some(key), Some(ca)] => {
                MeshTls::from_files((&cert.0, &cert.1), (&key.0, &key.1), (&ca.0, &ca.1), Role::Client)
                    .map(Some)
            }
            _ => anyhow::bail!(
                "TLS needs all three of --ca-file, --client-cert-file and --client-key-file (LABCTL_CA_FILE, LABCTL_CLIENT_CERT_FILE, LABCTL_CLIENT_KEY_FILE)"
            ),
        }
    }

    /// Connects to `address`: `http://host:port` in plaintext; with TLS material ([`Self::tls`])
    /// over TLS whatever the scheme (`https://host:port`, or `http://` written by habit or a
    /// default), presenting the client certificate and verifying the server's against the
    /// bundle and `host`. A gRPC `dns:///host:port` target (a mesh pod's own peer settings) is
    /// reached as `host:port`. An `https://` address without TLS material is an error.
    pub(crate) async fn channel(&self, address: &str) -> anyhow::Result<Channel> {
        let tls = self.tls()?;
        let address = match platform::grpc::dns::target(address) {
            Some((host, port)) => format!("http://{host}:{port}"),
            None => address.to_owned(),
        };
        let address = match (&tls, address.strip_prefix("http://")) {
            (Some(_), Some(rest)) => format!("https://{rest}"),
            _ => address,
        };
        let endpoint = Endpoint::from_shared(address.clone())
            .with_context(|| format!("{address} is not a gRPC address"))?;
        let endpoint = match (endpoint.uri().scheme_str(), &tls) {
            (Some("http"), None) => endpoint,
            (Some("https"), Some(tls)) => {
                let host = endpoint.uri().host().unwrap_or_default();
                let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
                endpoint.tls_config(tls.client_config(&host))?
            }
            (Some("https"), None) => anyhow::bail!(
                "{address} is https://: give the mesh's CA bundle and a client certificate (--ca-file, --client-cert-file, --client-key-file or LABCTL_CA_FILE, LABCTL_CLIENT_CERT_FILE, LABCTL_CLIENT_KEY_FILE)"
            ),
            _ => anyhow::bail!("{address}: expected http://host:port, https://host:port or dns:///host:port"),
        };
        Ok(endpoint.connect().await?)
    }
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
    connection
        .channel(&connection.identity_addr)
        .await
        .map(IdentityServiceClient::new)
        .with_context(|| format!("cannot reach identity-svc at {}", connection.identity_addr))
}

pub(crate) fn timestamp(value: Option<&prost_types::Timestamp>) -> Value {
    platform::time::timestamp_rfc3339(value)
        .map(Value::String)
        .unwrap_or(Value::Null)
}
