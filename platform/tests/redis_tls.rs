//! `rediss://` works: the mesh's Redis client connects over TLS (rustls) to a real Redis that
//! requires TLS and client certificates, trusting the CA of `REDIS_CA_FILE` and presenting
//! `REDIS_CLIENT_CERT_FILE`/`REDIS_CLIENT_KEY_FILE` (here passed explicitly), streams included;
//! and it refuses a server its CA did not sign, while the server refuses a client without a
//! certificate and a plain-text connection.

use platform::db::{RedisTls, redis_client_with};
use platform::testing::pki::TestPki;
use platform::testing::wait_for;
use redis::AsyncCommands;
use std::time::Duration;

/// A Redis process that speaks only TLS and requires client certificates, killed when dropped.
struct TlsRedis {
    child: std::process::Child,
    port: u16,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TlsRedis {
    fn start(pki: &TestPki) -> Self {
        let dir = std::env::temp_dir().join(format!("lab-redis-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let server = pki.server(&["127.0.0.1", "localhost"]);
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let (cert, key, ca) = (
            write("server.pem", &server.cert_pem),
            write("server.key", &server.key_pem),
            write("ca.pem", &pki.ca_pem()),
        );
        let port = free_port();
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--tls-cert-file",
                &cert,
                "--tls-key-file",
                &key,
                "--tls-ca-cert-file",
                &ca,
                "--tls-auth-clients",
                "yes",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (the README's test command installs it)");
        Self {
            child,
            port,
            _dir: TempDir(dir),
        }
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }
}

async fn connect(url: &str, tls: &RedisTls) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let client = redis_client_with(url, tls)?;
    tokio::time::timeout(Duration::from_secs(5), client.get_multiplexed_async_connection())
        .await
        .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()))
}

#[tokio::test]
async fn rediss_urls_connect_over_tls_with_the_configured_ca_and_client_certificate() {
    let pki = TestPki::new("lab redis test CA");
    let redis = TlsRedis::start(&pki);
    let client = pki.client("payments-svc");
    let trusted = RedisTls {
        ca_pem: Some(pki.ca_pem().into_bytes()),
        client_cert_pem: Some(client.cert_pem.into_bytes()),
        client_key_pem: Some(client.key_pem.into_bytes()),
    };
    let mut connection = wait_for("the TLS Redis to answer", Duration::from_secs(10), || async {
        connect(&redis.url(), &trusted).await.ok()
    })
    .await;
    let entry: String = connection
        .xadd("lab:events:payments", "*", &[("envelope", b"bytes".to_vec())])
        .await
        .unwrap();
    let range: redis::streams::StreamRangeReply = connection.xrange_all("lab:events:payments").await.unwrap();
    assert_eq!(range.ids.len(), 1);
    assert_eq!(range.ids[0].id, entry);

    // No client certificate: the server, which requires one, refuses the handshake.
    let without_certificate = RedisTls {
        ca_pem: Some(pki.ca_pem().into_bytes()),
        ..RedisTls::default()
    };
    let refused = match connect(&redis.url(), &without_certificate).await {
        Err(_) => true,
        Ok(mut connection) => redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
            .is_err(),
    };
    assert!(refused, "a client without a certificate was served");

    // Another CA: the client refuses the server's certificate.
    let stranger = TestPki::new("another CA");
    let other_client = stranger.client("payments-svc");
    let untrusted = RedisTls {
        ca_pem: Some(stranger.ca_pem().into_bytes()),
        client_cert_pem: Some(other_client.cert_pem.into_bytes()),
        client_key_pem: Some(other_client.key_pem.into_bytes()),
    };
    assert!(
        connect(&redis.url(), &untrusted).await.is_err(),
        "a server signed by another CA was trusted"
    );

    // Plain text to the TLS port gets no answer.
    let plain = format!("redis://127.0.0.1:{}", redis.port);
    let answered = match connect(&plain, &RedisTls::default()).await {
        Err(_) => false,
        Ok(mut connection) => tokio::time::timeout(
            Duration::from_secs(2),
            redis::cmd("PING").query_async::<String>(&mut connection),
        )
        .await
        .is_ok_and(|reply| reply.is_ok()),
    };
    assert!(!answered, "the TLS port answered plain text");
}
