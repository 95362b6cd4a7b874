//! The mesh's gRPC over mutual TLS (`platform::grpc::tls`): a server given TLS settings answers
//! a client presenting a certificate of the mesh's CA bundle and refuses, at the handshake, a
//! client without one or with one of another CA; a plaintext client gets nothing; a `dns:`
//! target's connections to resolved addresses verify the peer against the target's host name;
//! the plaintext health port answers Kubernetes' probes alone; and the settings are checked when
//! they are read (chain, key, usages, expiry), so a process refuses to start with unusable ones.

use platform::grpc::tls::{CA_FILE_VAR, CERT_FILE_VAR, KEY_FILE_VAR, MeshTls, Role, SETTINGS};
use platform::grpc::{dns, lazy_channel, replica_endpoint, serve, serve_health, server_builder};
use platform::testing::pki::{Issued, TestPki};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

fn mesh_tls(pki: &TestPki, issued: &Issued, role: Role) -> MeshTls {
    MeshTls::from_pem(
        issued.cert_pem.as_bytes(),
        issued.key_pem.as_bytes(),
        pki.ca_pem().as_bytes(),
        SETTINGS,
        role,
    )
    .expect("usable TLS material")
}

/// A health server over mutual TLS with `tls` on a free loopback port; its reporter and the
/// token that stops it.
async fn tls_server(
    tls: MeshTls,
) -> (
    SocketAddr,
    tonic_health::server::HealthReporter,
    CancellationToken,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (reporter, health) = tonic_health::server::health_reporter();
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        server_builder().tls(Some(tls)).add_service(health),
        listener,
        shutdown.clone(),
    ));
    (address, reporter, shutdown)
}

async fn check<C>(client: &mut HealthClient<C>) -> Result<i32, tonic::Status>
where
    C: tonic::client::GrpcService<tonic::body::Body>,
    C::Error: Into<tonic::codegen::StdError>,
    C::ResponseBody: tonic::codegen::Body<Data = bytes::Bytes> + Send + 'static,
    <C::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    tokio::time::timeout(
        Duration::from_secs(10),
        client.check(HealthCheckRequest::default()),
    )
    .await
    .unwrap_or_else(|_| Err(tonic::Status::deadline_exceeded("no answer within 10 s")))
    .map(|response| response.into_inner().status)
}

/// A raw TLS client (tokio-rustls) trusting `ca_pem`, presenting `client` when given: the
/// handshake and a first read, whose error (the server's alert) is returned.
async fn raw_tls_read(address: SocketAddr, ca_pem: &str, client: Option<&Issued>) -> std::io::Result<usize> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match client {
        Some(issued) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(issued.cert_pem.as_bytes())
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_slice(issued.key_pem.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let server_name = ServerName::try_from("localhost").unwrap();
    let mut stream = connector.connect(server_name, tcp).await?;
    // TLS 1.3: the client finishes its side first; the server's verdict on the client's
    // certificate arrives as an alert on the first read.
    stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await?;
    let mut buffer = [0u8; 64];
    tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

#[tokio::test]
async fn a_server_with_tls_settings_answers_a_client_presenting_a_certificate_of_the_mesh_ca() {
    let pki = TestPki::new("mesh CA");
    let server = mesh_tls(&pki, &pki.peer(&["localhost"]), Role::Peer);
    let (address, _reporter, shutdown) = tls_server(server).await;
    let client = mesh_tls(&pki, &pki.peer(&["gateway"]), Role::Peer);
    // A name, not a loopback literal: the call goes over TCP and TLS, not in memory.
    let channel = lazy_channel(&format!("https://localhost:{}", address.port()), Some(&client)).unwrap();
    let status = check(&mut HealthClient::new(channel))
        .await
        .expect("the TLS server answers");
    assert_eq!(status, ServingStatus::Serving as i32);
    // The same with a raw TLS client: the handshake completes and HTTP/2 is spoken.
    let read = raw_tls_read(address, &pki.ca_pem(), Some(&pki.client("operator"))).await;
    assert!(matches!(read, Ok(bytes) if bytes > 0), "{read:?}");
    shutdown.cancel();
}

#[tokio::test]
async fn a_client_without_a_certificate_or_with_one_of_another_ca_is_refused_at_the_handshake() {
    let pki = TestPki::new("mesh CA");
    let server = mesh_tls(&pki, &pki.peer(&["localhost"]), Role::Peer);
    let (address, _reporter, shutdown) = tls_server(server).await;

    // No certificate: the server's alert ends the connection before any HTTP/2.
    let error = raw_tls_read(address, &pki.ca_pem(), None)
        .await
        .expect_err("a client without a certificate is refused");
    assert!(error.to_string().contains("CertificateRequired"), "{error}");
    // A certificate of another CA (the client trusts the server, the server not the client).
    let stranger = TestPki::new("another CA");
    let error = raw_tls_read(address, &pki.ca_pem(), Some(&stranger.client("intruder")))
        .await
        .expect_err("a client certificate of another CA is refused");
    assert!(error.to_string().contains("UnknownCA"), "{error}");

    // Through tonic too: TLS trusting the mesh's CA but without a client certificate.
    let endpoint = platform::grpc::peer_endpoint(&format!("https://localhost:{}", address.port()))
        .unwrap()
        .tls_config(
            tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(pki.ca_pem()))
                .domain_name("localhost"),
        )
        .unwrap();
    let status = check(&mut HealthClient::new(endpoint.connect_lazy())).await;
    assert!(status.is_err(), "{status:?}");
    shutdown.cancel();
}

#[tokio::test]
async fn a_plaintext_client_gets_nothing_from_a_tls_server() {
    let pki = TestPki::new("mesh CA");
    let server = mesh_tls(&pki, &pki.peer(&["localhost"]), Role::Peer);
    let (address, _reporter, shutdown) = tls_server(server).await;
    let channel = lazy_channel(&format!("http://localhost:{}", address.port()), None).unwrap();
    let status = check(&mut HealthClient::new(channel)).await;
    assert!(status.is_err(), "a plaintext call was answered: {status:?}");
    // On the wire: the HTTP/2 preface gets at most a TLS alert record (content type 21) back,
    // never HTTP/2.
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let mut received = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut received)).await;
    assert!(
        received.is_empty() || received[0] == 0x15,
        "a plaintext client got {received:?}"
    );
    shutdown.cancel();
}

#[tokio::test]
async fn a_dns_target_verifies_its_host_name_not_the_addresses_it_resolves_to() {
    let pki = TestPki::new("mesh CA");
    let client = mesh_tls(&pki, &pki.peer(&["gateway"]), Role::Peer);
    // A pod of orders-svc: its certificate names the Services, not its own address.
    let named = mesh_tls(&pki, &pki.peer(&["orders-svc", "orders-svc-peers"]), Role::Peer);
    let (named_address, _reporter, named_stop) = tls_server(named).await;
    // A server whose certificate names only the address the target resolves to.
    let by_address = mesh_tls(&pki, &pki.peer(&["127.0.0.1"]), Role::Peer);
    let (address_only, _reporter2, address_stop) = tls_server(by_address).await;

    let balanced = |address: SocketAddr| {
        let client = client.clone();
        dns::balanced(
            "orders-svc-peers".to_owned(),
            address.port(),
            Duration::from_secs(60),
            move |replica| replica_endpoint(replica, "orders-svc-peers", Some(&client)),
            move |_host, _port| async move { Ok(vec![address]) },
        )
    };
    let status = check(&mut HealthClient::new(balanced(named_address))).await;
    assert_eq!(
        status.expect("the certificate names the target's host"),
        ServingStatus::Serving as i32
    );
    let status = check(&mut HealthClient::new(balanced(address_only))).await;
    let error = status.expect_err("a certificate for the address, not the name, was accepted");
    assert!(
        error
            .message()
            .contains("not valid for name \"orders-svc-peers\""),
        "{error:?}"
    );
    named_stop.cancel();
    address_stop.cancel();
}

#[tokio::test]
async fn the_plaintext_health_port_answers_the_probe_while_the_mesh_port_requires_a_certificate() {
    let pki = TestPki::new("mesh CA");
    let server = mesh_tls(&pki, &pki.peer(&["localhost"]), Role::Peer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let health_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (address, health_address) = (
        listener.local_addr().unwrap(),
        health_listener.local_addr().unwrap(),
    );
    let (reporter, health) = tonic_health::server::health_reporter();
    let shutdown = CancellationToken::new();
    tokio::spawn(serve_health(health.clone(), health_listener, shutdown.clone()));
    tokio::spawn(serve(
        server_builder().tls(Some(server)).add_service(health),
        listener,
        shutdown.clone(),
    ));
    let plaintext = |address: SocketAddr| {
        HealthClient::new(
            platform::grpc::peer_endpoint(&format!("http://localhost:{}", address.port()))
                .unwrap()
                .connect_lazy(),
        )
    };
    let mut probe = plaintext(health_address);
    assert_eq!(check(&mut probe).await.unwrap(), ServingStatus::Serving as i32);
    // The probe reads the process's own health: draining shows there too.
    reporter
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
    assert_eq!(check(&mut probe).await.unwrap(), ServingStatus::NotServing as i32);
    // The health port serves nothing else; the mesh port answers no plaintext client.
    assert!(check(&mut plaintext(address)).await.is_err());
    let mut other = proto::identity::identity_service_client::IdentityServiceClient::new(
        platform::grpc::peer_endpoint(&format!("http://localhost:{}", health_address.port()))
            .unwrap()
            .connect_lazy(),
    );
    let answer = other
        .list_customers(proto::identity::ListCustomersRequest::default())
        .await;
    assert_eq!(
        answer.expect_err("only health is served").code(),
        tonic::Code::Unimplemented
    );
    shutdown.cancel();
}

#[tokio::test]
async fn with_tls_settings_every_peer_address_is_dialed_over_tls_and_https_needs_them() {
    let pki = TestPki::new("mesh CA");
    let server = mesh_tls(&pki, &pki.peer(&["localhost"]), Role::Peer);
    let (address, _reporter, shutdown) = tls_server(server).await;
    let client = mesh_tls(&pki, &pki.peer(&["gateway"]), Role::Peer);
    // An address written http:// (a default, say) still goes over TLS: the settings decide.
    for written in [
        format!("http://localhost:{}", address.port()),
        format!("https://localhost:{0},http://localhost:{0}", address.port()),
    ] {
        let channel = lazy_channel(&written, Some(&client)).unwrap();
        let status = check(&mut HealthClient::new(channel)).await;
        assert_eq!(status.unwrap(), ServingStatus::Serving as i32, "{written}");
    }
    // https:// cannot be honoured without TLS settings.
    let error = lazy_channel("https://catalog-svc:50051", None).unwrap_err();
    assert!(error.to_string().contains(CA_FILE_VAR), "{error}");
    assert!(lazy_channel("dns:///catalog-svc-peers:50051", Some(&client)).is_ok());
    shutdown.cancel();
}

#[test]
fn tls_settings_are_checked_when_read_and_name_the_setting_at_fault() {
    let pki = TestPki::new("mesh CA");
    let stranger = TestPki::new("another CA");
    let own = pki.peer(&["orders-svc"]);
    let refused = |cert: &str, key: &str, ca: &str, role| {
        MeshTls::from_pem(cert.as_bytes(), key.as_bytes(), ca.as_bytes(), SETTINGS, role)
            .unwrap_err()
            .to_string()
    };
    let foreign = stranger.peer(&["orders-svc"]);
    let error = refused(&foreign.cert_pem, &foreign.key_pem, &pki.ca_pem(), Role::Peer);
    assert!(
        error.contains(CERT_FILE_VAR) && error.contains("UnknownIssuer"),
        "{error}"
    );
    let error = refused(&own.cert_pem, &foreign.key_pem, &pki.ca_pem(), Role::Peer);
    assert!(error.contains(KEY_FILE_VAR), "{error}");
    let error = refused(&own.cert_pem, "", &pki.ca_pem(), Role::Peer);
    assert!(error.contains(KEY_FILE_VAR), "{error}");
    let error = refused(&own.cert_pem, &own.key_pem, "not a certificate", Role::Peer);
    assert!(error.contains(CA_FILE_VAR), "{error}");
    let expired = pki.peer_until(&["orders-svc"], (2020, 1, 1));
    let error = refused(&expired.cert_pem, &expired.key_pem, &pki.ca_pem(), Role::Peer);
    assert!(
        error.contains(CERT_FILE_VAR) && error.contains("Expired"),
        "{error}"
    );
    // A client-only certificate cannot serve; it is what labctl needs.
    let operator = pki.client("operator");
    let error = refused(&operator.cert_pem, &operator.key_pem, &pki.ca_pem(), Role::Peer);
    assert!(error.contains("serverAuth"), "{error}");
    mesh_tls(&pki, &operator, Role::Client);

    // A bundle of two CAs (a rotation under way) trusts certificates of either.
    let bundle = format!("{}{}", pki.ca_pem(), stranger.ca_pem());
    for issued in [&own, &foreign] {
        MeshTls::from_pem(
            issued.cert_pem.as_bytes(),
            issued.key_pem.as_bytes(),
            bundle.as_bytes(),
            SETTINGS,
            Role::Peer,
        )
        .expect("a certificate of either CA of the bundle");
    }

    // The expiry is read from the certificate (UTCTime before 2050, GeneralizedTime after).
    let until_2049 = mesh_tls(&pki, &pki.peer_until(&["orders-svc"], (2049, 12, 31)), Role::Peer);
    assert_eq!(
        until_2049.not_after().unwrap().to_rfc3339(),
        "2049-12-31T00:00:00+00:00"
    );
    let until_2051 = mesh_tls(&pki, &pki.peer_until(&["orders-svc"], (2051, 6, 1)), Role::Peer);
    assert_eq!(
        until_2051.not_after().unwrap().to_rfc3339(),
        "2051-06-01T00:00:00+00:00"
    );

    // Files: a missing one is named with its path.
    let error = MeshTls::from_files(
        (CERT_FILE_VAR, "/nonexistent/tls.crt"),
        (KEY_FILE_VAR, "/nonexistent/tls.key"),
        (CA_FILE_VAR, "/nonexistent/ca.crt"),
        Role::Peer,
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("GRPC_TLS_CERT_FILE=/nonexistent/tls.crt"),
        "{error}"
    );
}
