//! Mutual TLS on the mesh's gRPC (docs/security.md, "Internal TLS").
//!
//! A process given its certificate, its private key and the mesh's CA bundle
//! (`GRPC_TLS_CERT_FILE`, `GRPC_TLS_KEY_FILE`, `GRPC_TLS_CA_FILE`, PEM files; `<PREFIX>_…`
//! overrides each) serves every gRPC server over TLS 1.3 or 1.2 (rustls with ring) and accepts
//! a connection only from a client that presents a certificate signed by a CA of the bundle;
//! every channel it opens to a peer ([`super::lazy_channel`]) speaks TLS, presents the same
//! certificate and verifies the peer's against the same bundle and the host name the peer was
//! addressed by (for a `dns:///orders-svc-peers:50052` target, `orders-svc-peers`, although the
//! connections go to the pods' addresses). So the one certificate serves both ways: it carries
//! the `serverAuth` and `clientAuth` extended key usages and names every host the process is
//! addressed by. Both are checked when the files are read, with the chain, the validity period
//! and that the key is the certificate's: a process with an unusable certificate refuses to
//! start instead of failing its calls.
//!
//! The files are read at start: a renewed certificate or a changed bundle takes effect when the
//! process restarts (rotation without downtime: docs/operations.md, "Internal TLS").
//!
//! Without the settings the mesh speaks plaintext gRPC, which only development mode accepts
//! (`crate::config::CommonSettings::from_env`).

use crate::env::env_var;
use chrono::{DateTime, Utc};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use std::time::Duration;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// The setting naming this process's certificate (PEM, the leaf first, then any intermediates).
pub const CERT_FILE_VAR: &str = "GRPC_TLS_CERT_FILE";
/// The setting naming the certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
pub const KEY_FILE_VAR: &str = "GRPC_TLS_KEY_FILE";
/// The setting naming the CA bundle (PEM, one or more CA certificates) that signs the mesh's
/// certificates: clients are accepted, and servers believed, when a CA of it signed theirs.
pub const CA_FILE_VAR: &str = "GRPC_TLS_CA_FILE";
/// Longest a TLS handshake may take, on either side, before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A certificate that expires sooner than this is warned about at start.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(14 * 24 * 3600);

/// What the certificate, key and CA bundle are called in error messages (the settings, or
/// labctl's options, with their paths).
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    pub cert: &'a str,
    pub key: &'a str,
    pub ca: &'a str,
}

/// The names of the process settings.
pub const SETTINGS: Names<'static> = Names {
    cert: CERT_FILE_VAR,
    key: KEY_FILE_VAR,
    ca: CA_FILE_VAR,
};

/// How a certificate will be used, which decides the extended key usages it must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A process of the mesh: it serves and calls (`serverAuth` and `clientAuth`).
    Peer,
    /// A client only, such as labctl (`clientAuth`).
    Client,
}

/// A process's TLS material, checked: its certificate and key, and the CA bundle it trusts.
/// Cloning copies a few kilobytes; `Debug` shows no key.
#[derive(Clone)]
pub struct MeshTls {
    identity: Identity,
    ca: Certificate,
    /// The leaf certificate's `notAfter`.
    not_after: Option<DateTime<Utc>>,
    /// How many CA certificates the bundle holds.
    authorities: usize,
}

impl std::fmt::Debug for MeshTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshTls")
            .field("not_after", &self.not_after)
            .field("authorities", &self.authorities)
            .finish_non_exhaustive()
    }
}

impl MeshTls {
    /// Reads the settings of the process with environment prefix `prefix`: `None` when none of
    /// the three is set; an error naming what is missing when only some are, or naming the file
    /// at fault when one cannot be read or is not usable.
    pub fn from_env(prefix: &str) -> anyhow::Result<Option<Self>> {
        let lookup = |name: &str| {
            let own = format!("{prefix}_{name}");
            match env_var(&own) {
                Some(path) => Some((own, path)),
                None => env_var(name).map(|path| (name.to_owned(), path)),
            }
        };
        match (lookup(CERT_FILE_VAR), lookup(KEY_FILE_VAR), lookup(CA_FILE_VAR)) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => {
                let files = [&cert, &key, &ca].map(|(name, path)| (name.as_str(), path.as_str()));
                Self::from_files(files[0], files[1], files[2], Role::Peer).map(Some)
            }
            (cert, key, ca) => {
                let missing: Vec<String> = [(CERT_FILE_VAR, &cert), (KEY_FILE_VAR, &key), (CA_FILE_VAR, &ca)]
                    .into_iter()
                    .filter(|(_, found)| found.is_none())
                    .map(|(name, _)| format!("{name} (or {prefix}_{name})"))
                    .collect();
                anyhow::bail!(
                    "{} not set while the other TLS settings are: the mesh's gRPC TLS needs the certificate ({CERT_FILE_VAR}), its key ({KEY_FILE_VAR}) and the CA bundle ({CA_FILE_VAR})",
                    missing.join(" and ")
                )
            }
        }
    }

    /// Reads and checks the PEM files given as `(name, path)` pairs.
    pub fn from_files(
        cert: (&str, &str),
        key: (&str, &str),
        ca: (&str, &str),
        role: Role,
    ) -> anyhow::Result<Self> {
        let read = |(name, path): (&str, &str)| {
            std::fs::read(path).map_err(|error| anyhow::anyhow!("{name}={path}: cannot read it: {error}"))
        };
        let named = |(name, path): (&str, &str)| format!("{name}={path}");
        let (cert_name, key_name, ca_name) = (named(cert), named(key), named(ca));
        Self::from_pem(
            &read(cert)?,
            &read(key)?,
            &read(ca)?,
            Names {
                cert: &cert_name,
                key: &key_name,
                ca: &ca_name,
            },
            role,
        )
    }

    /// Checks PEM material: the certificate chain parses, the key is the leaf's, and the leaf
    /// chains to a CA of the bundle, is valid now and carries the usages of `role`.
    pub fn from_pem(
        cert: &[u8],
        key: &[u8],
        ca: &[u8],
        names: Names<'_>,
        role: Role,
    ) -> anyhow::Result<Self> {
        // rustls needs a process-wide provider for the servers tonic builds: the workspace's
        // one, ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let chain = certificates(cert).map_err(|problem| anyhow::anyhow!("{}: {problem}", names.cert))?;
        let authorities = certificates(ca).map_err(|problem| anyhow::anyhow!("{}: {problem}", names.ca))?;
        let private_key = PrivateKeyDer::from_pem_slice(key).map_err(|error| {
            anyhow::anyhow!(
                "{} holds no usable PEM private key (PKCS#8, PKCS#1 or SEC1): {error}",
                names.key
            )
        })?;
        let provider = rustls::crypto::ring::default_provider();
        rustls::sign::CertifiedKey::from_der(chain.clone(), private_key, &provider).map_err(|error| {
            anyhow::anyhow!(
                "{} is not the private key of the certificate in {} ({error})",
                names.key,
                names.cert
            )
        })?;
        let anchors = authorities
            .iter()
            .enumerate()
            .map(|(index, authority)| {
                webpki::anchor_from_trusted_cert(authority).map_err(|error| {
                    anyhow::anyhow!(
                        "{}: certificate {} of the bundle is not a usable CA certificate: {error}",
                        names.ca,
                        index + 1
                    )
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let leaf = webpki::EndEntityCert::try_from(&chain[0])
            .map_err(|error| anyhow::anyhow!("{}: the certificate does not parse: {error}", names.cert))?;
        let usages: &[(webpki::KeyUsage, &str)] = match role {
            Role::Peer => &[
                (webpki::KeyUsage::server_auth(), "serverAuth"),
                (webpki::KeyUsage::client_auth(), "clientAuth"),
            ],
            Role::Client => &[(webpki::KeyUsage::client_auth(), "clientAuth")],
        };
        for (usage, usage_name) in usages {
            leaf.verify_for_usage(
                provider.signature_verification_algorithms.all,
                &anchors,
                &chain[1..],
                UnixTime::now(),
                usage,
                None,
                None,
            )
            .map_err(|error| {
                anyhow::anyhow!(
                    "{} is not a certificate the mesh accepts for {usage_name} under the CA bundle {}: {error} (it must be signed by a CA of the bundle, valid now, and carry the {usage_name} extended key usage)",
                    names.cert,
                    names.ca
                )
            })?;
        }
        Ok(Self {
            identity: Identity::from_pem(cert, key),
            ca: Certificate::from_pem(ca),
            not_after: not_after(&chain[0]),
            authorities: authorities.len(),
        })
    }

    /// When the certificate expires (its `notAfter`), if it could be read.
    pub fn not_after(&self) -> Option<DateTime<Utc>> {
        self.not_after
    }

    /// Logs that `process` speaks TLS and until when its certificate is valid, warning when
    /// that is less than [`EXPIRY_WARNING`] away, and reports the expiry as
    /// `grpc_tls_certificate_expiry_timestamp_seconds` (the certificate is read at start only:
    /// restart the process once its certificate is renewed; the GrpcCertificateExpiring alert
    /// says when one was not).
    pub fn announce(&self, process: &str) {
        let Some(not_after) = self.not_after else {
            tracing::info!(process, authorities = self.authorities, "gRPC over mutual TLS");
            return;
        };
        crate::metrics::metrics()
            .grpc_tls_certificate_expiry
            .get_or_create(&crate::metrics::ServiceLabels {
                service: process.to_owned(),
            })
            .set(not_after.timestamp());
        let left = (not_after - Utc::now()).to_std().unwrap_or_default();
        if left < EXPIRY_WARNING {
            tracing::warn!(
                process,
                %not_after,
                "gRPC TLS certificate expires within {} days: restart the process once its certificate is renewed",
                EXPIRY_WARNING.as_secs() / 86_400
            );
        } else {
            tracing::info!(process, %not_after, authorities = self.authorities, "gRPC over mutual TLS");
        }
    }

    /// The server side: this certificate, client certificates required and verified against
    /// the bundle, the handshake bounded by [`HANDSHAKE_TIMEOUT`].
    pub fn server_config(&self) -> ServerTlsConfig {
        ServerTlsConfig::new()
            .identity(self.identity.clone())
            .client_ca_root(self.ca.clone())
            .timeout(HANDSHAKE_TIMEOUT)
    }

    /// The client side towards a server addressed as `server_name` (the name its certificate
    /// must carry, also sent as SNI): this certificate presented, the server's verified against
    /// the bundle.
    pub fn client_config(&self, server_name: &str) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(self.ca.clone())
            .identity(self.identity.clone())
            .domain_name(server_name)
            .timeout(HANDSHAKE_TIMEOUT)
    }
}

/// The certificates of a PEM text, at least one.
fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("not a PEM certificate file: {error}"))?;
    if certificates.is_empty() {
        return Err("holds no PEM certificate".to_owned());
    }
    Ok(certificates)
}

/// The `notAfter` of a DER certificate: Certificate → tbsCertificate → validity (RFC 5280
/// 4.1), read without a full X.509 parser (rustls verifies the certificate; this only reports
/// its expiry).
fn not_after(certificate: &[u8]) -> Option<DateTime<Utc>> {
    /// One DER element: its tag, contents and what follows it.
    fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, mut rest) = rest.split_first()?;
        let length = if first < 0x80 {
            usize::from(first)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 {
                return None;
            }
            let (bytes, after) = rest.split_at_checked(count)?;
            rest = after;
            bytes
                .iter()
                .fold(0, |length, byte| (length << 8) | usize::from(*byte))
        };
        let (contents, rest) = rest.split_at_checked(length)?;
        Some((tag, contents, rest))
    }
    const SEQUENCE: u8 = 0x30;
    const VERSION: u8 = 0xa0;
    const UTC_TIME: u8 = 0x17;
    const GENERALIZED_TIME: u8 = 0x18;
    let (_, certificate, _) = element(certificate).filter(|(tag, ..)| *tag == SEQUENCE)?;
    let (_, tbs, _) = element(certificate).filter(|(tag, ..)| *tag == SEQUENCE)?;
    let (tag, _, after_version) = element(tbs)?;
    let serial = if tag == VERSION { after_version } else { tbs };
    let (_, _, after_serial) = element(serial)?;
    let (_, _, after_signature) = element(after_serial)?;
    let (_, _, after_issuer) = element(after_signature)?;
    let (_, validity, _) = element(after_issuer).filter(|(tag, ..)| *tag == SEQUENCE)?;
    let (_, _, after_not_before) = element(validity)?;
    let (tag, time, _) = element(after_not_before)?;
    let text = std::str::from_utf8(time).ok()?;
    let text = match tag {
        // YYMMDDHHMMSSZ: years 50–99 are 19YY, 00–49 20YY (RFC 5280 4.1.2.5.1).
        UTC_TIME => {
            let year: u32 = text.get(..2)?.parse().ok()?;
            format!("{}{text}", if year >= 50 { "19" } else { "20" })
        }
        GENERALIZED_TIME => text.to_owned(),
        _ => return None,
    };
    chrono::NaiveDateTime::parse_from_str(&text, "%Y%m%d%H%M%SZ")
        .ok()
        .map(|time| time.and_utc())
}
