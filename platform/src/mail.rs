//! Outgoing email (feature `mail`): real SMTP through lettre, or one `.eml` file per message in a
//! directory (the local run's default). A message is a plain-text body with attachments and a
//! few extra headers (for example `List-Unsubscribe`); nothing is ever rendered as HTML. The
//! services keep their own message log (who, what, sent or failed); this module only sends.

use lettre::message::header::{ContentType, HeaderName, HeaderValue};
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

/// One file attached to a message.
#[derive(Clone, Debug)]
pub struct MailAttachment {
    pub filename: String,
    /// MIME type, e.g. `application/pdf`.
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// One message: a plain-text body, attachments and extra headers.
#[derive(Clone, Debug, Default)]
pub struct OutgoingEmail {
    /// `<…@…>`: stable per logical message, so a resend after a crash is recognisable.
    pub message_id: String,
    pub to: String,
    pub subject: String,
    /// The body, sent as `text/plain; charset=utf-8`.
    pub text: String,
    pub attachments: Vec<MailAttachment>,
    /// Extra headers (name, value), e.g. `List-Unsubscribe`. Values are ASCII.
    pub headers: Vec<(String, String)>,
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

    /// Sends one message; the error text is for the caller's message log (it never holds the
    /// relay's credentials: lettre's errors name the failing step, not the URL).
    pub async fn send(&self, email: &OutgoingEmail) -> Result<(), String> {
        let message = self.build(email)?;
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

    fn build(&self, email: &OutgoingEmail) -> Result<Message, String> {
        let to: Mailbox = email.to.parse().map_err(|error| format!("recipient: {error}"))?;
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(email.subject.clone())
            .message_id(Some(email.message_id.clone()));
        for (name, value) in &email.headers {
            let name = HeaderName::new_from_ascii(name.clone())
                .map_err(|error| format!("header {name}: {error}"))?;
            builder = builder.raw_header(HeaderValue::new(name, value.clone()));
        }
        let mut body = MultiPart::mixed().singlepart(SinglePart::plain(email.text.clone()));
        for attachment in &email.attachments {
            let content_type =
                ContentType::parse(&attachment.content_type).map_err(|error| error.to_string())?;
            body = body.singlepart(
                Attachment::new(attachment.filename.clone()).body(attachment.bytes.clone(), content_type),
            );
        }
        builder.multipart(body).map_err(|error| error.to_string())
    }
}

/// Whether `address` is one plain mailbox address (`name@domain`, no display name), as lettre
/// parses it.
pub fn is_plain_address(address: &str) -> bool {
    address.parse::<lettre::Address>().is_ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_carries_its_extra_headers_and_a_plain_text_body() {
        let mailer = Mailer::new(
            "Lab <lab@example.com>",
            &MailTransport::Files(PathBuf::from("/nonexistent")),
        )
        .unwrap();
        let email = OutgoingEmail {
            message_id: "<m-1@lab.example>".into(),
            to: "someone@example.org".into(),
            subject: "Hello".into(),
            text: "<b>not html</b>".into(),
            attachments: vec![MailAttachment {
                filename: "a.pdf".into(),
                content_type: "application/pdf".into(),
                bytes: b"%PDF-1.4".to_vec(),
            }],
            headers: vec![
                ("List-Unsubscribe".into(), "<https://lab.example/u/abc>".into()),
                (
                    "List-Unsubscribe-Post".into(),
                    "List-Unsubscribe=One-Click".into(),
                ),
            ],
        };
        let formatted = String::from_utf8(mailer.build(&email).unwrap().formatted()).unwrap();
        assert!(
            formatted.contains("List-Unsubscribe: <https://lab.example/u/abc>\r\n"),
            "{formatted}"
        );
        assert!(formatted.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"));
        assert!(formatted.contains("Content-Type: text/plain; charset=utf-8"));
        assert!(!formatted.contains("text/html"));
        assert!(formatted.contains("filename=\"a.pdf\""));
    }

    #[test]
    fn only_plain_addresses_are_accepted() {
        assert!(is_plain_address("a.b@example.org"));
        assert!(!is_plain_address("Name <a@example.org>"));
        assert!(!is_plain_address("no-at-sign"));
        assert!(!is_plain_address("a@b@example.org"));
    }
}
