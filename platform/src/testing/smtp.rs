//! A real SMTP server process for the tests: PyPI `aiosmtpd` (installed by `deploy/local/test.sh`)
//! with its Maildir handler, so every accepted message is a file the test can read.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use uuid::Uuid;

/// A running SMTP server; killed when dropped.
pub struct SmtpServer {
    pub port: u16,
    pub maildir: PathBuf,
    child: Child,
}

impl SmtpServer {
    /// Starts `python3 -m aiosmtpd` on a free loopback port, delivering into a fresh Maildir.
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free port");
        Self::start_on(port).await
    }

    /// Starts the server on `port` (a relay that comes back where it was).
    pub async fn start_on(port: u16) -> Self {
        let maildir = std::env::temp_dir().join(format!("lab-smtp-{}", Uuid::now_v7().simple()));
        let child = Command::new("python3")
            .args([
                "-m",
                "aiosmtpd",
                "-n",
                "-l",
                &format!("127.0.0.1:{port}"),
                "-c",
                "aiosmtpd.handlers.Mailbox",
            ])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m aiosmtpd starts (bash deploy/local/test.sh installs PyPI aiosmtpd)");
        let server = Self { port, maildir, child };
        super::wait_for("the SMTP server to listen", Duration::from_secs(20), || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
                .map(|_| ())
        })
        .await;
        server
    }

    /// `smtp://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message delivered so far, as raw text.
    pub fn messages(&self) -> Vec<String> {
        let mut messages = Vec::new();
        for folder in ["new", "cur"] {
            let Ok(entries) = std::fs::read_dir(self.maildir.join(folder)) else {
                continue;
            };
            for entry in entries.flatten() {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    messages.push(text);
                }
            }
        }
        messages
    }
}

/// One delivered message as Python's `email` package parses it (the standard library, not our
/// code, decodes the MIME structure, the transfer encodings and the attachments).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ParsedEmail {
    /// Every header (name, value) in order, values unfolded.
    pub headers: Vec<(String, String)>,
    /// Content types of every part, in order (`multipart/mixed`, `text/plain`, …).
    pub content_types: Vec<String>,
    /// The decoded `text/plain` body.
    pub text: String,
    /// Attachments (file name, content type, bytes).
    pub attachments: Vec<ParsedAttachment>,
}

/// One attachment of a [`ParsedEmail`].
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ParsedAttachment {
    pub filename: String,
    pub content_type: String,
    #[serde(deserialize_with = "from_hex")]
    pub bytes: Vec<u8>,
}

fn from_hex<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    hex::decode(text).map_err(serde::de::Error::custom)
}

impl ParsedEmail {
    /// The value of the first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

const PARSE_EMAIL: &str = r#"
import email, email.policy, json, sys
message = email.message_from_bytes(open(sys.argv[1], 'rb').read(), policy=email.policy.default)
text = message.get_body(preferencelist=('plain',))
print(json.dumps({
    'headers': [[name, str(value)] for name, value in message.items()],
    'content_types': [part.get_content_type() for part in message.walk()],
    'text': text.get_content() if text is not None else '',
    'attachments': [{'filename': part.get_filename(), 'content_type': part.get_content_type(),
                     'bytes': part.get_payload(decode=True).hex()} for part in message.iter_attachments()],
}))
"#;

impl SmtpServer {
    /// Every message delivered so far, parsed by Python's `email` package.
    pub fn parsed(&self) -> Vec<ParsedEmail> {
        let mut parsed = Vec::new();
        for folder in ["new", "cur"] {
            let Ok(entries) = std::fs::read_dir(self.maildir.join(folder)) else {
                continue;
            };
            for entry in entries.flatten() {
                let output = Command::new("python3")
                    .args(["-c", PARSE_EMAIL])
                    .arg(entry.path())
                    .output()
                    .expect("python3 parses the message");
                assert!(
                    output.status.success(),
                    "{}",
                    String::from_utf8_lossy(&output.stderr)
                );
                parsed.push(serde_json::from_slice(&output.stdout).expect("the parser's JSON"));
            }
        }
        parsed
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.maildir);
    }
}
