//! An S3 server that verifies SigV4 presigned URLs, for blob tests (features `testing` and
//! `blobs`): PyPI `ministack` (1.5.33), started on a free port with a scratch directory and one
//! bucket, killed and removed on drop.
//!
//! The binary is `MINISTACK_BIN`, else `<LAB_STATE_DIR or .local>/venv/bin/ministack` (installed by
//! `bash deploy/local/test.sh` into its venv), else `ministack` on `PATH`. When none is there,
//! [`Ministack::start`] answers `None` and the test skips with a printed reason, unless
//! `LAB_REQUIRE_PYTHON_TOOLS` is set (deploy/local/test.sh sets it): then it panics.
//!
//! What ministack 1.5.33 checks (docs/operations.md, "Blob storage"): a presigned URL's access key,
//! its `X-Amz-Date` + `X-Amz-Expires`, and its SigV4 signature over the method, path, query and
//! signed headers, with the secret it was started with. It does not check header-signed requests
//! (object_store's `put`, `get`, `delete` and the bucket's creation here), and it lets anyone read
//! an object without any signature, so a test proves a refusal only with a presigned URL.

use crate::blobs::BlobSettings;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The access key id ministack is started with (its root credential).
pub const MINISTACK_ACCESS_KEY_ID: &str = "LABMINISTACKTEST";
/// The secret ministack is started with: presigned URLs must be signed with it.
pub const MINISTACK_SECRET_ACCESS_KEY: &str = "lab-ministack-test-secret";

/// A running ministack with one bucket.
pub struct Ministack {
    /// `http://127.0.0.1:{port}`.
    pub endpoint: String,
    pub bucket: String,
    child: Child,
    dir: PathBuf,
}

impl std::fmt::Debug for Ministack {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Ministack")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// The ministack to run, if one is installed.
pub fn ministack_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MINISTACK_BIN") {
        return Some(PathBuf::from(path));
    }
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let state = std::env::var_os("LAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".local"));
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("ministack"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    std::iter::once(state.join("venv/bin/ministack"))
        .chain(on_path)
        .find(|path| path.is_file())
}

impl Ministack {
    /// Starts ministack with a bucket `test-bucket` in [`crate::blobs::DEFAULT_S3_REGION`] and
    /// waits (30 s at most) until it answers; `None` when ministack is not installed and not
    /// required.
    pub fn start() -> Option<Self> {
        let Some(binary) = ministack_binary() else {
            assert!(
                std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_none(),
                "LAB_REQUIRE_PYTHON_TOOLS is set but ministack is missing (pip install ministack==1.5.33 \
                 into <LAB_STATE_DIR>/venv, as bash deploy/local/test.sh does, or set MINISTACK_BIN)"
            );
            println!(
                "note: ministack is not installed (bash deploy/local/test.sh installs it, or set \
                 MINISTACK_BIN); skipping the SigV4 half"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!("ministack-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the ministack scratch directory");
        let log = std::fs::File::create(dir.join("ministack.log")).expect("create the ministack log");
        // Port, bind address and credentials are environment settings of ministack (it has no
        // such options); TMPDIR holds its pid file, so every file it writes is in `dir`.
        let child = Command::new(&binary)
            .env("GATEWAY_PORT", port.to_string())
            .env("BIND_HOST", "127.0.0.1")
            .env("AWS_ACCESS_KEY_ID", MINISTACK_ACCESS_KEY_ID)
            .env("AWS_SECRET_ACCESS_KEY", MINISTACK_SECRET_ACCESS_KEY)
            .env("MINISTACK_REGION", crate::blobs::DEFAULT_S3_REGION)
            .env("TMPDIR", &dir)
            .env("S3_DATA_DIR", dir.join("s3"))
            .env("STATE_DIR", dir.join("state"))
            .env("LOG_LEVEL", "WARNING")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("EDGE_PORT")
            .env_remove("AUTH")
            .env_remove("PERSIST_STATE")
            .env_remove("S3_PERSIST")
            .env_remove("USE_SSL")
            .env_remove("MINISTACK_HOST")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "{} does not start (is its venv's python3 there?): {error}",
                    binary.display()
                )
            });
        let mut server = Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: "test-bucket".to_owned(),
            child,
            dir,
        };
        server.wait_until_it_answers(port);
        let created = request_status(port, "PUT", &format!("/{}", server.bucket));
        assert_eq!(
            created.as_deref(),
            Some("200"),
            "ministack did not create the bucket: {}",
            server.log()
        );
        Some(server)
    }

    /// What ministack wrote to stderr.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ministack.log")).unwrap_or_default()
    }

    /// Polls its health route until it answers 200, failing at once if ministack exits.
    fn wait_until_it_answers(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("ministack exited with {status} before answering: {}", self.log());
            }
            if request_status(port, "GET", "/_ministack/health").as_deref() == Some("200") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ministack did not answer within 30 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Settings of a store in this server's bucket, with ministack's credentials.
    pub fn settings(&self) -> BlobSettings {
        self.settings_with_secret(MINISTACK_SECRET_ACCESS_KEY)
    }

    /// Settings of a store in this server's bucket that signs with `secret` (the right access key
    /// id), for URLs ministack must refuse.
    pub fn settings_with_secret(&self, secret: &str) -> BlobSettings {
        BlobSettings::s3(
            &self.endpoint,
            &self.bucket,
            crate::blobs::DEFAULT_S3_REGION,
            MINISTACK_ACCESS_KEY_ID,
            secret,
        )
    }
}

/// The status code of an unsigned `{method} {path}` with no body (ministack does not check
/// requests that carry no presigned query), or `None`.
fn request_status(port: u16, method: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = [0u8; 64];
    let read = stream.read(&mut answer).ok()?;
    let line = String::from_utf8_lossy(&answer[..read]).into_owned();
    line.split(' ').nth(1).map(str::to_owned)
}

impl Drop for Ministack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
