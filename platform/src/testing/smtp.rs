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

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.maildir);
    }
}
