//! Email of the label on the bank rail: real SMTP through lettre, or `.eml` files in a directory
//! (the local run's default). The use case (`service::email`) records every message and attempt
//! in `shipping.label_emails`, so a label is emailed once per shipment.

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::path::PathBuf;

/// Where messages go.
#[derive(Clone, Debug)]
pub enum MailTransport {
    /// An SMTP relay, `smtp://host:port` (plain, for a local relay or test server) or any URL
    /// lettre's `from_url` takes (`smtps://…`, `smtp://…?tls=required`).
    Smtp(String),
    /// One `.eml` file per message in this directory.
    Files(PathBuf),
}

/// One label email.
#[derive(Clone, Debug)]
pub struct LabelEmail {
    pub message_id: String,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub filename: String,
    pub pdf: Vec<u8>,
}

/// Sends messages from one sender address.
#[derive(Clone)]
pub struct Mailer {
    from: Mailbox,
    transport: Transport,
}

#[derive(Clone)]
enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files(PathBuf),
}

impl Mailer {
    /// Builds the mailer; fails on a malformed sender or SMTP URL.
    pub fn new(from: &str, transport: &MailTransport) -> anyhow::Result<Self> {
        let from: Mailbox = from.parse()?;
        let transport = match transport {
            MailTransport::Smtp(url) => Transport::Smtp(smtp_transport(url)?),
            MailTransport::Files(dir) => Transport::Files(dir.clone()),
        };
        Ok(Self { from, transport })
    }

    /// Sends one message; the error text is recorded in the message log.
    pub async fn send(&self, email: &LabelEmail) -> Result<(), String> {
        let to: Mailbox = email.to.parse().map_err(|error| format!("recipient: {error}"))?;
        let attachment = Attachment::new(email.filename.clone()).body(
            email.pdf.clone(),
            ContentType::parse("application/pdf").map_err(|error| error.to_string())?,
        );
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(email.subject.clone())
            .message_id(Some(email.message_id.clone()))
            .multipart(
                MultiPart::mixed()
                    .singlepart(SinglePart::plain(email.text.clone()))
                    .singlepart(attachment),
            )
            .map_err(|error| error.to_string())?;
        match &self.transport {
            Transport::Smtp(transport) => transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|error| error.to_string()),
            Transport::Files(dir) => {
                tokio::fs::create_dir_all(dir)
                    .await
                    .map_err(|error| error.to_string())?;
                let name: String = email
                    .message_id
                    .chars()
                    .filter(|character| {
                        character.is_ascii_alphanumeric() || *character == '-' || *character == '.'
                    })
                    .collect();
                tokio::fs::write(dir.join(format!("{name}.eml")), message.formatted())
                    .await
                    .map_err(|error| error.to_string())
            }
        }
    }
}

fn smtp_transport(url: &str) -> anyhow::Result<AsyncSmtpTransport<Tokio1Executor>> {
    if let Some(rest) = url.strip_prefix("smtp://")
        && !rest.contains('?')
        && !rest.contains('@')
    {
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => (host, port.parse::<u16>()?),
            None => (rest, 25),
        };
        return Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(port)
            .build());
    }
    Ok(AsyncSmtpTransport::<Tokio1Executor>::from_url(url)?.build())
}
