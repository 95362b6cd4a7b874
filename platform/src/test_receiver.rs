//! A real HTTPS receiver on loopback for tests (feature `testing`): webhooks and other outbound
//! calls are sent to it exactly as they would be to a customer's server.
//!
//! It listens on `127.0.0.1:<free port>` with a certificate for `localhost` and `127.0.0.1` issued
//! by a throw-away CA made with `rcgen` (trust [`TestReceiver::ca_pem`] in the client under
//! test), records every request (headers, the exact raw body, the time), and answers as scripted:
//! a status code, after a delay, with a `Retry-After`, or by closing the connection without an
//! answer. [`TestReceiver::stop`] closes the listener and every open connection, so clients see
//! connection refused until [`TestReceiver::resume`] listens on the same port again.

use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_util::sync::CancellationToken;

/// How the receiver answers one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// Status code of the answer.
    pub status: u16,
    /// Wait this long before answering (longer than the client's timeout makes it time out).
    pub delay: Duration,
    /// Value of a `Retry-After` header, when set.
    pub retry_after: Option<String>,
    /// Close the connection without answering anything.
    pub close: bool,
}

impl Behaviour {
    /// Answers `status` at once.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            delay: Duration::ZERO,
            retry_after: None,
            close: false,
        }
    }

    /// Answers 200 at once.
    pub fn ok() -> Self {
        Self::status(200)
    }

    /// Closes the connection without answering.
    pub fn close_connection() -> Self {
        Self {
            close: true,
            ..Self::ok()
        }
    }

    /// The same answer after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The same answer with `Retry-After: value`.
    pub fn with_retry_after(mut self, value: &str) -> Self {
        self.retry_after = Some(value.to_owned());
        self
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: http::HeaderMap,
    /// The exact raw body bytes.
    pub body: Vec<u8>,
    /// When the whole body had arrived.
    pub received_at: DateTime<Utc>,
    /// What the receiver did with it.
    pub behaviour: Behaviour,
}

impl RecordedRequest {
    /// A header as text (empty when absent or not visible ASCII).
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// True when the receiver answered 2xx without a delay of `client_timeout` or more, i.e.
    /// the client saw a success.
    pub fn succeeded_within(&self, client_timeout: Duration) -> bool {
        !self.behaviour.close
            && (200..300).contains(&self.behaviour.status)
            && self.behaviour.delay < client_timeout
    }
}

type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<Behaviour> + Send + Sync>;

struct State {
    requests: Vec<RecordedRequest>,
    script: VecDeque<Behaviour>,
    responder: Option<Responder>,
    default: Behaviour,
    serving: Option<CancellationToken>,
}

struct Inner {
    port: u16,
    /// Parent of every serving token; cancelled when the last handle is dropped.
    root: CancellationToken,
    ca_pem: String,
    acceptor: TlsAcceptor,
    state: Mutex<State>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running HTTPS test receiver; it stops when its last handle is dropped.
#[derive(Clone)]
pub struct TestReceiver {
    inner: Arc<Inner>,
    _stop_on_drop: Arc<tokio_util::sync::DropGuard>,
}

impl TestReceiver {
    /// Starts a receiver on `127.0.0.1` with a free port, answering 200 to everything.
    pub async fn start() -> Self {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind the test receiver");
        let port = listener.local_addr().expect("bound address").port();
        let (ca_pem, acceptor) = tls_acceptor();
        let root = CancellationToken::new();
        let receiver = Self {
            _stop_on_drop: Arc::new(root.clone().drop_guard()),
            inner: Arc::new(Inner {
                port,
                root,
                ca_pem,
                acceptor,
                state: Mutex::new(State {
                    requests: Vec::new(),
                    script: VecDeque::new(),
                    responder: None,
                    default: Behaviour::ok(),
                    serving: None,
                }),
            }),
        };
        receiver.serve(listener);
        receiver
    }

    /// PEM of the CA that issued the receiver's certificate.
    pub fn ca_pem(&self) -> String {
        self.inner.ca_pem.clone()
    }

    /// The port the receiver listens on.
    pub fn port(&self) -> u16 {
        self.inner.port
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        self.url_for_host("127.0.0.1", path)
    }

    /// `https://<host>:<port><path>` (the certificate covers `localhost` and `127.0.0.1`).
    pub fn url_for_host(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.inner.port)
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.state().requests.clone()
    }

    /// The requests received on `path`, oldest first.
    pub fn requests_to(&self, path: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|request| request.path == path)
            .collect()
    }

    /// How many recorded requests satisfy `predicate` (cheap: nothing is copied).
    pub fn count_matching(&self, predicate: impl Fn(&RecordedRequest) -> bool) -> usize {
        self.inner
            .state()
            .requests
            .iter()
            .filter(|request| predicate(request))
            .count()
    }

    /// Forgets the recorded requests.
    pub fn clear(&self) {
        self.inner.state().requests.clear();
    }

    /// Answers every request not otherwise scripted with `behaviour`.
    pub fn respond_with(&self, behaviour: Behaviour) {
        self.inner.state().default = behaviour;
    }

    /// Queues behaviours for the next requests, one each, before the responder and default.
    pub fn script(&self, behaviours: impl IntoIterator<Item = Behaviour>) {
        self.inner.state().script.extend(behaviours);
    }

    /// Decides per request (after the script); `None` falls back to the default behaviour.
    pub fn respond_by(
        &self,
        responder: impl Fn(&RecordedRequest) -> Option<Behaviour> + Send + Sync + 'static,
    ) {
        self.inner.state().responder = Some(Arc::new(responder));
    }

    /// Stops listening and closes every open connection: clients get connection refused.
    pub async fn stop(&self) {
        if let Some(token) = self.inner.state().serving.take() {
            token.cancel();
        }
        // Let the accept loop and the connections observe the cancellation.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    /// Listens on the same port again after [`stop`](Self::stop).
    pub async fn resume(&self) {
        if self.inner.state().serving.is_some() {
            return;
        }
        let address = SocketAddr::from(([127, 0, 0, 1], self.inner.port));
        let mut pause = Duration::from_millis(10);
        let listener = loop {
            match TcpListener::bind(address).await {
                Ok(listener) => break listener,
                Err(error) if pause < Duration::from_secs(2) => {
                    tracing::debug!(%error, "test receiver port not free yet");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                Err(error) => panic!("cannot listen on {address} again: {error}"),
            }
        };
        self.serve(listener);
    }

    fn serve(&self, listener: TcpListener) {
        let token = self.inner.root.child_token();
        self.inner.state().serving = Some(token.clone());
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(Arc::clone(&inner), stream, token.child_token()));
            }
        });
    }
}

async fn serve_connection(inner: Arc<Inner>, stream: tokio::net::TcpStream, token: CancellationToken) {
    let tls = tokio::select! {
        () = token.cancelled() => return,
        tls = inner.acceptor.accept(stream) => tls,
    };
    let Ok(tls) = tls else { return };
    let close = token.child_token();
    let service_close = close.clone();
    let service_inner = Arc::clone(&inner);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let inner = Arc::clone(&service_inner);
        let close = service_close.clone();
        async move { Ok::<_, Infallible>(answer(inner, request, close).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service);
    tokio::select! {
        () = close.cancelled() => {}
        _ = connection => {}
    }
}

async fn answer(
    inner: Arc<Inner>,
    request: hyper::Request<Incoming>,
    close: CancellationToken,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|collected| collected.to_bytes().to_vec())
        .unwrap_or_default();
    let mut recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|path| path.as_str().to_owned())
            .unwrap_or_default(),
        headers: parts.headers,
        body,
        received_at: Utc::now(),
        behaviour: Behaviour::ok(),
    };
    let behaviour = {
        let mut state = inner.state();
        let scripted = state.script.pop_front();
        let responder = state.responder.clone();
        let behaviour = scripted
            .or_else(|| responder.and_then(|responder| responder(&recorded)))
            .unwrap_or_else(|| state.default.clone());
        recorded.behaviour = behaviour.clone();
        state.requests.push(recorded);
        behaviour
    };
    if behaviour.close {
        close.cancel();
        std::future::pending::<()>().await;
    }
    if !behaviour.delay.is_zero() {
        tokio::time::sleep(behaviour.delay).await;
    }
    let mut response = hyper::Response::builder().status(behaviour.status);
    if let Some(retry_after) = &behaviour.retry_after {
        response = response.header("retry-after", retry_after);
    }
    response
        .body(Full::new(Bytes::from_static(b"ok")))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// A CA, a leaf for `localhost` and `127.0.0.1` signed by it, and a TLS acceptor serving the leaf.
fn tls_acceptor() -> (String, TlsAcceptor) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "lab test receiver CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");

    let mut leaf_params = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("leaf parameters");
    leaf_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf = leaf_params.signed_by(&leaf_key, &ca).expect("leaf certificate");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), CertificateDer::from(ca.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .expect("TLS server configuration");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (ca.pem(), TlsAcceptor::from(Arc::new(config)))
}
