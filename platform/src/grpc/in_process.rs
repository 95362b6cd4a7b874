//! In-process gRPC connections: when a channel's target is a loopback address that this same
//! process serves (labd runs the whole mesh in one process), the connection is handed to that
//! server over an in-memory duplex pipe instead of loopback TCP. The calls keep everything
//! else — HTTP/2, interceptors, codecs, deadlines — and skip the kernel's socket path and its
//! task wake-ups. Channels to any other address (Kubernetes, another host, a name) are plain
//! TCP exactly as before, and so is a loopback address no server of this process listens on.
//!
//! A hand-over happens only between a client and a server of the same Tokio runtime: the
//! tests run one mesh per runtime in one process, and a pipe to a server of another runtime
//! (one that is stopping, say) would tie the two meshes together.

use futures::Stream;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes buffered in each direction of an in-memory connection (an HTTP/2 window's worth).
const PIPE_BUFFER: usize = 256 * 1024;

/// The servers of this process that accept in-memory connections, by listening address.
static SERVERS: LazyLock<Mutex<HashMap<SocketAddr, Server>>> = LazyLock::new(Mutex::default);

/// A registered server: where its connections go and the runtime it runs on.
struct Server {
    sender: mpsc::UnboundedSender<DuplexStream>,
    runtime: Option<tokio::runtime::Id>,
}

/// The id of the runtime the caller runs on, if any.
fn current_runtime() -> Option<tokio::runtime::Id> {
    tokio::runtime::Handle::try_current()
        .ok()
        .map(|handle| handle.id())
}
/// Whether new channels may use in-memory connections (benchmarks compare both ways).
static ENABLED: AtomicBool = AtomicBool::new(true);
/// In-memory connections handed over so far (for tests and diagnostics).
static HANDED_OVER: AtomicU64 = AtomicU64::new(0);

/// Lets channels created from now on use in-memory connections (the default) or not.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether new channels may use in-memory connections.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How many in-memory connections servers of this process have been handed.
pub fn handed_over() -> u64 {
    HANDED_OVER.load(Ordering::Relaxed)
}

fn servers() -> std::sync::MutexGuard<'static, HashMap<SocketAddr, Server>> {
    SERVERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The loopback socket address a channel URI names with an IP literal, if any.
pub fn loopback_target(uri: &http::Uri) -> Option<SocketAddr> {
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = host.parse().ok()?;
    let port = uri.port_u16().unwrap_or(80);
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

/// A server's registration; dropping it stops in-memory hand-over to that server.
pub struct Registration {
    address: SocketAddr,
    sender: Option<mpsc::UnboundedSender<DuplexStream>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(sender) = self.sender.take() else { return };
        let mut servers = servers();
        if servers
            .get(&self.address)
            .is_some_and(|current| current.sender.same_channel(&sender))
        {
            servers.remove(&self.address);
        }
    }
}

/// Registers a server listening on `address` (loopback addresses only) and returns the stream
/// of the in-memory connections handed to it.
pub fn register(address: SocketAddr) -> (Registration, impl Stream<Item = DuplexStream> + Send + Unpin) {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let sender = address.ip().is_loopback().then(|| {
        servers().insert(
            address,
            Server {
                sender: sender.clone(),
                runtime: current_runtime(),
            },
        );
        sender
    });
    let registration = Registration { address, sender };
    let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    (registration, stream)
}

/// Connects to `address`: in memory when a server of this process listens there, else TCP
/// with `TCP_NODELAY`.
pub async fn connect(address: SocketAddr) -> io::Result<TokioIo<MeshStream>> {
    let runtime = current_runtime();
    let sender = servers()
        .get(&address)
        .filter(|server| runtime.is_some() && server.runtime == runtime)
        .map(|server| server.sender.clone());
    if let Some(sender) = sender {
        let (client, server) = tokio::io::duplex(PIPE_BUFFER);
        if sender.send(server).is_ok() {
            HANDED_OVER.fetch_add(1, Ordering::Relaxed);
            return Ok(TokioIo::new(MeshStream::Memory(client)));
        }
    }
    let tcp = TcpStream::connect(address).await?;
    tcp.set_nodelay(true)?;
    Ok(TokioIo::new(MeshStream::Tcp(tcp)))
}

/// A connection of the mesh: accepted or opened over TCP, or an in-memory pipe.
#[derive(Debug)]
pub enum MeshStream {
    Tcp(TcpStream),
    Memory(DuplexStream),
}

impl Connected for MeshStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        match self {
            Self::Tcp(stream) => stream.connect_info(),
            Self::Memory(_) => TcpConnectInfo {
                local_addr: None,
                remote_addr: None,
            },
        }
    }
}

impl AsyncRead for MeshStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            Self::Memory(stream) => Pin::new(stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MeshStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(stream) => Pin::new(stream).poll_write(cx, buf),
            Self::Memory(stream) => Pin::new(stream).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Self::Memory(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Tcp(stream) => stream.is_write_vectored(),
            Self::Memory(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(stream) => Pin::new(stream).poll_flush(cx),
            Self::Memory(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(stream) => Pin::new(stream).poll_shutdown(cx),
            Self::Memory(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_ip_literals_are_in_process_targets() {
        let target = |uri: &'static str| loopback_target(&http::Uri::from_static(uri));
        assert_eq!(
            target("http://127.0.0.1:50052"),
            Some(SocketAddr::from(([127, 0, 0, 1], 50052)))
        );
        assert!(target("http://[::1]:7").is_some());
        assert_eq!(target("http://orders-svc:50052"), None);
        assert_eq!(target("http://localhost:50052"), None);
        assert_eq!(target("http://10.0.0.7:50052"), None);
    }
}
