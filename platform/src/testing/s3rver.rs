//! A real S3 server for blob tests (features `testing` and `blobs`): npm `s3rver`, started on a
//! free port with a fresh data directory and one bucket, killed and removed on drop.
//!
//! The binary is `S3RVER_BIN`, else `tests/clients/node/node_modules/.bin/s3rver` (installed by
//! `bash deploy/local/test.sh` from that directory's package-lock.json), else
//! `<LAB_STATE_DIR or .local>/node/node_modules/.bin/s3rver`, else `s3rver` on `PATH`. When none
//! is there, [`S3rver::start`] answers `None` and the test skips with a printed reason, unless
//! `LAB_REQUIRE_NODE_TOOLS` is set (deploy/local/test.sh sets it): then it panics.
//!
//! What s3rver 3.7 checks of a presigned URL (docs/operations.md, "Blob storage"): the access
//! key must be one it knows (`S3RVER`) and `X-Amz-Date` + `X-Amz-Expires` must not have passed.
//! It does not compute SigV4 signatures, so tampering is not detectable against it.

use crate::blobs::BlobSettings;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The access key and secret s3rver accepts by default.
pub const S3RVER_CREDENTIAL: &str = "S3RVER";

/// A running s3rver with one bucket.
pub struct S3rver {
    /// `http://127.0.0.1:{port}`.
    pub endpoint: String,
    pub bucket: String,
    child: Child,
    dir: PathBuf,
}

impl std::fmt::Debug for S3rver {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("S3rver")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// The s3rver to run, if one is installed.
pub fn s3rver_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("S3RVER_BIN") {
        return Some(PathBuf::from(path));
    }
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let state = std::env::var_os("LAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".local"));
    let candidates = [
        root.join("tests/clients/node/node_modules/.bin/s3rver"),
        state.join("node/node_modules/.bin/s3rver"),
    ];
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("s3rver"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates.into_iter().chain(on_path).find(|path| path.is_file())
}

impl S3rver {
    /// Starts s3rver with a bucket `test-bucket` and waits (20 s at most) until the bucket
    /// answers; `None` when s3rver is not installed and not required.
    pub fn start() -> Option<Self> {
        let Some(binary) = s3rver_binary() else {
            assert!(
                std::env::var_os("LAB_REQUIRE_NODE_TOOLS").is_none(),
                "LAB_REQUIRE_NODE_TOOLS is set but s3rver is missing (npm ci in tests/clients/node, \
                 as bash deploy/local/test.sh does)"
            );
            println!("note: s3rver is not installed (npm ci in tests/clients/node); skipping the S3 half");
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!("s3rver-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the s3rver data directory");
        let bucket = "test-bucket".to_owned();
        let child = Command::new(&binary)
            .arg("--directory")
            .arg(&dir)
            .args(["--address", "127.0.0.1", "--port", &port.to_string(), "--silent"])
            .args(["--configure-bucket", &bucket])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "{} does not start (is node installed?): {error}",
                    binary.display()
                )
            });
        let mut server = Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket,
            child,
            dir,
        };
        server.wait_until_the_bucket_answers(port);
        Some(server)
    }

    /// Polls `HEAD /{bucket}` until it answers 200, failing at once if s3rver exits.
    fn wait_until_the_bucket_answers(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                panic!("s3rver exited with {status} before answering: {stderr}");
            }
            if head_status(port, &self.bucket).as_deref() == Some("200") {
                return;
            }
            assert!(Instant::now() < deadline, "s3rver did not answer within 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Settings of a store in this server's bucket, with s3rver's credentials.
    pub fn settings(&self) -> BlobSettings {
        BlobSettings::s3(
            &self.endpoint,
            &self.bucket,
            crate::blobs::DEFAULT_S3_REGION,
            S3RVER_CREDENTIAL,
            S3RVER_CREDENTIAL,
        )
    }
}

/// The status code of an anonymous `HEAD /{bucket}` (s3rver lets anyone read), or `None`.
fn head_status(port: u16, bucket: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "HEAD /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = [0u8; 64];
    let read = stream.read(&mut answer).ok()?;
    let line = String::from_utf8_lossy(&answer[..read]).into_owned();
    line.split(' ').nth(1).map(str::to_owned)
}

impl Drop for S3rver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
