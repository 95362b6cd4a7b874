//! The COA document: one A4 PDF per published COA with the lab's letterhead (configuration),
//! the customer's order, accession, compound and lot, the dates of receipt, testing and issue,
//! the results table with units, specifications and methods, the QA signatory, an amendment
//! notice, the statement that results relate only to the item tested, the verification code and
//! a QR code to the public verify URL, and the content signature's key id.
//!
//! Built-in PDF fonts only (Helvetica): text is reduced to printable ASCII so every glyph exists.
//! Download links are signed: [`download_message`] is authenticated with an HMAC key derived from
//! the COA key and checked before a document is rendered, so the link itself is the
//! authorization and expires after an hour.

use crate::domain::coa::Coa;
use printpdf::{
    BuiltinFont, Color, Mm, Op, PaintMode, PdfDocument, PdfFontHandle, PdfPage, PdfSaveOptions, Point, Pt,
    Rect, Rgb, TextItem,
};

/// How long a signed download link lasts.
pub const DOWNLOAD_LIFETIME_SECONDS: i64 = 3600;

/// The lab's letterhead and public address (configuration).
#[derive(Clone, Debug)]
pub struct Letterhead {
    /// The laboratory's identity (`LAB_*`, the same on labels, the pay page and emails).
    pub lab: platform::lab::LabIdentity,
    /// Public base URL of the gateway (`https://lab.example`), for the verify link.
    pub public_base_url: String,
}

impl Default for Letterhead {
    fn default() -> Self {
        Self {
            lab: platform::lab::LabIdentity::demo(),
            public_base_url: "http://127.0.0.1:8080".into(),
        }
    }
}

impl Letterhead {
    /// The public verify URL of a COA, with its printed code.
    pub fn verify_url(&self, coa: &Coa) -> String {
        format!(
            "{}/api/v1/agent/verify?accession={}&code={}",
            self.public_base_url.trim_end_matches('/'),
            coa.accession_number,
            coa.verification_code
        )
    }
}

/// The bytes the COA key signs to authorize a download of `coa_id` until `expires` (unix).
pub fn download_message(coa_id: &str, expires: i64) -> String {
    format!("coa-document:{coa_id}:{expires}")
}

fn ascii(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c,
            '≤' => '<',
            '≥' => '>',
            'µ' | 'μ' => 'u',
            _ => '?',
        })
        .collect()
}

/// Accumulates the drawing operations of one page.
struct Canvas {
    ops: Vec<Op>,
}

impl Canvas {
    fn text(&mut self, x: f32, y: f32, size: f32, bold: bool, text: &str) {
        let font = if bold {
            BuiltinFont::HelveticaBold
        } else {
            BuiltinFont::Helvetica
        };
        self.ops.extend([
            Op::StartTextSection,
            Op::SetFont {
                font: PdfFontHandle::Builtin(font),
                size: Pt(size),
            },
            Op::SetTextCursor {
                pos: Point {
                    x: Mm(x).into(),
                    y: Mm(y).into(),
                },
            },
            Op::ShowText {
                items: vec![TextItem::Text(ascii(text))],
            },
            Op::EndTextSection,
        ]);
    }

    fn square(&mut self, x: f32, y: f32, side: f32) {
        let mut rectangle = Rect::from_xywh(Mm(x).into(), Mm(y).into(), Mm(side).into(), Mm(side).into());
        rectangle.mode = Some(PaintMode::Fill);
        self.ops.push(Op::DrawRectangle { rectangle });
    }

    fn rule(&mut self, y: f32) {
        let mut rectangle = Rect::from_xywh(Mm(18.0).into(), Mm(y).into(), Mm(174.0).into(), Mm(0.3).into());
        rectangle.mode = Some(PaintMode::Fill);
        self.ops.push(Op::DrawRectangle { rectangle });
    }

    /// A QR code of `data` with its lower left corner at (x, y), `size` mm wide.
    fn qr(&mut self, x: f32, y: f32, size: f32, data: &str) {
        let Ok(code) = qrcode::QrCode::new(data.as_bytes()) else {
            return;
        };
        let width = code.width();
        // Four modules of quiet zone on each side.
        let module = size / (width + 8) as f32;
        let colors = code.to_colors();
        for (index, color) in colors.iter().enumerate() {
            if *color == qrcode::Color::Dark {
                let (column, row) = (index % width, index / width);
                let left = x + (column + 4) as f32 * module;
                let bottom = y + size - (row + 5) as f32 * module;
                self.square(left, bottom, module);
            }
        }
    }
}

fn date(time: Option<chrono::DateTime<chrono::Utc>>) -> String {
    time.map(|time| time.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "-".into())
}

/// Renders the PDF of a published COA.
pub fn render(coa: &Coa, letterhead: &Letterhead) -> Vec<u8> {
    let mut page = Canvas {
        ops: vec![Op::SetFillColor {
            col: Color::Rgb(Rgb {
                r: 0.0,
                g: 0.0,
                b: 0.0,
                icc_profile: None,
            }),
        }],
    };
    page.text(18.0, 280.0, 16.0, true, &letterhead.lab.name);
    page.text(18.0, 274.0, 9.0, false, &letterhead.lab.address_line());
    page.text(18.0, 269.5, 9.0, false, &letterhead.lab.accreditation());
    page.rule(266.0);
    let title = if coa.amends.is_some() {
        format!("CERTIFICATE OF ANALYSIS - AMENDMENT (version {})", coa.version)
    } else {
        "CERTIFICATE OF ANALYSIS".to_owned()
    };
    page.text(18.0, 257.0, 14.0, true, &title);
    let lot = coa.lot_number.clone().unwrap_or_else(|| "-".into());
    let fields = [
        ("COA id", coa.id.to_string()),
        ("Accession number", coa.accession_number.clone()),
        ("Customer", coa.customer_id.to_string()),
        ("Order", coa.order_number.clone()),
        ("Compound", coa.compound.clone()),
        ("Lot number", lot),
        ("Received", date(Some(coa.received_at))),
        ("Testing started", date(coa.testing_started_at)),
        ("Issued", date(coa.published_at)),
    ];
    let mut y = 249.0;
    for (label, value) in fields {
        page.text(18.0, y, 9.5, true, label);
        page.text(58.0, y, 9.5, false, &value);
        y -= 5.0;
    }
    if let Some(original) = coa.amends {
        y -= 2.0;
        page.text(18.0, y, 9.5, true, "Amendment notice:");
        page.text(
            52.0,
            y,
            9.5,
            false,
            &format!("this certificate amends and supersedes COA {original}"),
        );
        y -= 5.0;
        let reason = coa.amendment_reason.clone().unwrap_or_default();
        page.text(52.0, y, 9.5, false, &format!("Reason: {reason}"));
        y -= 5.0;
    }
    y -= 3.0;
    page.rule(y + 3.5);
    let columns = [18.0, 70.0, 100.0, 120.0, 150.0, 165.0];
    for (x, heading) in
        columns
            .iter()
            .zip(["Analyte", "Result", "Unit", "Specification", "Outcome", "Method"])
    {
        page.text(*x, y, 9.0, true, heading);
    }
    y -= 5.5;
    for row in &coa.results {
        if y < 60.0 {
            break;
        }
        let result = match (&row.value, &row.qualifier) {
            (Some(value), Some(qualifier)) => format!("{value} ({qualifier})"),
            (Some(value), None) => value.clone(),
            (None, Some(qualifier)) => qualifier.clone(),
            (None, None) => "-".into(),
        };
        let cells = [
            row.analyte.clone(),
            result,
            row.unit.clone(),
            row.specification.clone().unwrap_or_else(|| "-".into()),
            row.outcome.clone().unwrap_or_else(|| "-".into()),
            row.method.clone(),
        ];
        for (x, cell) in columns.iter().zip(cells) {
            let cell: String = cell.chars().take(30).collect();
            page.text(*x, y, 8.5, false, &cell);
        }
        y -= 5.0;
    }
    page.rule(y + 2.0);
    y -= 4.0;
    let signatory = format!(
        "QA approved by {} on {}",
        coa.approved_by.clone().unwrap_or_default(),
        date(coa.approved_at)
    );
    page.text(18.0, y, 9.5, true, &signatory);
    page.text(
        18.0,
        y - 5.0,
        9.5,
        false,
        "The results relate only to the item tested.",
    );
    page.text(
        18.0,
        y - 10.0,
        8.0,
        false,
        "This certificate shall not be reproduced except in full without the written approval of the laboratory.",
    );
    let url = letterhead.verify_url(coa);
    page.qr(150.0, 14.0, 40.0, &url);
    page.text(
        18.0,
        40.0,
        9.5,
        true,
        &format!("Verification code: {}", coa.verification_code),
    );
    page.text(18.0, 35.0, 8.0, false, "Verify this certificate at:");
    page.text(18.0, 31.0, 7.0, false, &url);
    page.text(
        18.0,
        25.0,
        7.0,
        false,
        &format!("Content signed with Ed25519 key {}", coa.signing_key_id),
    );
    let mut document = PdfDocument::new(&format!("COA {}", coa.accession_number));
    document.with_pages(vec![PdfPage::new(Mm(210.0), Mm(297.0), page.ops)]);
    document.save(&PdfSaveOptions::default(), &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_reduced_to_the_glyphs_of_the_builtin_fonts() {
        assert_eq!(ascii("≥ 98.0 µg"), "> 98.0 ug");
        assert_eq!(ascii("Café"), "Caf?");
    }

    #[test]
    fn download_messages_bind_the_coa_and_the_expiry() {
        assert_ne!(download_message("a", 1), download_message("a", 2));
        assert_ne!(download_message("a", 1), download_message("b", 1));
    }
}
