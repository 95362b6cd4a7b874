//! The text of a COA email: plain text only (the customer's note is quoted as written, never
//! rendered as HTML), the COA's public verify link, why the recipient gets it (the consent on
//! record) and the unsubscribe link, which also travels in `List-Unsubscribe` (RFC 8058).

use super::consent::Consent;
use crate::document::Letterhead;
use crate::domain::coa::Coa;
use platform::mail::{MailAttachment, OutgoingEmail};

/// What one COA email says and carries.
pub struct CoaEmailContent<'a> {
    pub coa: &'a Coa,
    pub consent: &'a Consent,
    pub letterhead: &'a Letterhead,
    pub message_id: &'a str,
    pub verify_url: &'a str,
    pub unsubscribe_url: &'a str,
    pub note: Option<&'a str>,
    pub pdf: Vec<u8>,
}

impl CoaEmailContent<'_> {
    /// The message as the mailer sends it.
    pub fn into_email(self) -> OutgoingEmail {
        let coa = self.coa;
        let lot = coa
            .lot_number
            .as_deref()
            .map(|lot| format!("Lot: {lot}\n"))
            .unwrap_or_default();
        let published = coa
            .published_at
            .map(|at| at.format("%Y-%m-%d").to_string())
            .unwrap_or_default();
        let note = self
            .note
            .map(|note| {
                let quoted: Vec<String> = note.lines().map(|line| format!("> {line}")).collect();
                format!("A note from the sender:\n\n{}\n\n", quoted.join("\n"))
            })
            .unwrap_or_default();
        let text = format!(
            "Hello,\n\n\
             {lab} has published a certificate of analysis for a sample tested on behalf of the sender of \
             this email. The certificate is attached as a PDF.\n\n\
             Certificate: {accession} (version {version})\n\
             Compound: {compound}\n\
             {lot}\
             Published: {published}\n\n\
             Check that the certificate is authentic at:\n{verify}\n\n\
             {note}\
             You receive this email because your consent to receive certificates of analysis at this \
             address was recorded (given {consented}, consent text version {version_text}).\n\
             To stop receiving them, open:\n{unsubscribe}\n\n\
             --\n{lab}\n{address}\n{contact}\n",
            lab = self.letterhead.lab.name,
            address = self.letterhead.lab.address_line(),
            contact = self.letterhead.lab.contact(),
            accession = coa.accession_number,
            version = coa.version,
            compound = coa.compound,
            verify = self.verify_url,
            consented = self.consent.consented_at.format("%Y-%m-%d"),
            version_text = self.consent.text_version,
            unsubscribe = self.unsubscribe_url,
        );
        OutgoingEmail {
            message_id: self.message_id.to_owned(),
            to: self.consent.recipient_email.clone(),
            subject: format!(
                "Certificate of analysis {} from {}",
                coa.accession_number, self.letterhead.lab.name
            ),
            text,
            attachments: vec![MailAttachment {
                filename: format!("COA-{}-v{}.pdf", coa.accession_number, coa.version),
                content_type: "application/pdf".to_owned(),
                bytes: self.pdf,
            }],
            headers: vec![
                (
                    "List-Unsubscribe".to_owned(),
                    format!("<{}>", self.unsubscribe_url),
                ),
                (
                    "List-Unsubscribe-Post".to_owned(),
                    "List-Unsubscribe=One-Click".to_owned(),
                ),
                ("Auto-Submitted".to_owned(), "auto-generated".to_owned()),
            ],
        }
    }
}
