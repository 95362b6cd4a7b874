//! Email of the label on the bank rail, through the platform's mailer ([`platform::mail`]: real
//! SMTP through lettre, or `.eml` files in a directory, the local run's default). The use case
//! (`service::email`) records every message and attempt in `shipping.label_emails`, so a label is
//! emailed once per shipment.

use platform::mail::{MailAttachment, OutgoingEmail};
pub use platform::mail::{MailTransport, Mailer};

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

impl From<LabelEmail> for OutgoingEmail {
    /// The plain-text message with the label PDF attached.
    fn from(email: LabelEmail) -> Self {
        Self {
            message_id: email.message_id,
            to: email.to,
            subject: email.subject,
            text: email.text,
            attachments: vec![MailAttachment {
                filename: email.filename,
                content_type: "application/pdf".to_owned(),
                bytes: email.pdf,
            }],
            headers: Vec::new(),
        }
    }
}
