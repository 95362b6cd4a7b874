//! The 4×6 in label PDF: ship-from, ship-to (the lab), service, the tracking number as text and
//! as a Code128 barcode (1 pt modules, set B, scannable from a 300 dpi rendering), the order and
//! sample references and the first packing steps. Built-in Helvetica only, so no font is
//! embedded and a label renders in a few milliseconds.

use crate::domain::Address;
use crate::domain::packing::PackingStep;
use barcoders::sym::code128::Code128;
use printpdf::{
    BuiltinFont, Color, Mm, Op, PaintMode, PdfDocument, PdfFontHandle, PdfPage, PdfSaveOptions, Point, Pt,
    Rect, Rgb, TextItem,
};

/// Page width: 4 in.
const WIDTH: f32 = 288.0;
/// Page height: 6 in.
const HEIGHT: f32 = 432.0;
/// Left and right margin.
const MARGIN: f32 = 14.0;
/// Width of one barcode module.
const MODULE: f32 = 1.0;
/// Height of the barcode's bars.
const BAR_HEIGHT: f32 = 64.0;

/// What the label shows.
#[derive(Clone, Debug)]
pub struct LabelContent<'a> {
    pub carrier_name: &'a str,
    pub service_name: &'a str,
    pub tracking_number: &'a str,
    pub ship_from: &'a Address,
    pub ship_to: &'a Address,
    pub order_number: &'a str,
    /// (sample reference, compound) per sample line.
    pub samples: Vec<(String, String)>,
    pub packing_steps: &'a [PackingStep],
}

/// Keeps the characters Helvetica's standard encoding prints (printable ASCII).
fn printable(text: &str) -> String {
    text.chars()
        .map(|character| {
            if (' '..='~').contains(&character) {
                character
            } else {
                '?'
            }
        })
        .collect()
}

/// Groups a UPS tracking number for reading: `1Z LAB001 03 0000001 5`.
pub fn grouped(tracking_number: &str) -> String {
    if tracking_number.len() == 18 && tracking_number.starts_with("1Z") {
        let number = tracking_number;
        format!(
            "{} {} {} {} {}",
            &number[0..2],
            &number[2..8],
            &number[8..10],
            &number[10..17],
            &number[17..]
        )
    } else {
        tracking_number.to_owned()
    }
}

struct Canvas {
    ops: Vec<Op>,
}

impl Canvas {
    fn text(&mut self, x: f32, y_from_top: f32, size: f32, bold: bool, text: &str) {
        let font = if bold {
            BuiltinFont::HelveticaBold
        } else {
            BuiltinFont::Helvetica
        };
        self.ops.extend([
            Op::StartTextSection,
            Op::SetTextCursor {
                pos: Point {
                    x: Pt(x),
                    y: Pt(HEIGHT - y_from_top),
                },
            },
            Op::SetFont {
                font: PdfFontHandle::Builtin(font),
                size: Pt(size),
            },
            Op::ShowText {
                items: vec![TextItem::Text(printable(text))],
            },
            Op::EndTextSection,
        ]);
    }

    fn rect(&mut self, x: f32, y_from_top: f32, width: f32, height: f32) {
        self.ops.push(Op::DrawRectangle {
            rectangle: Rect {
                mode: Some(PaintMode::Fill),
                ..Rect::from_xywh(Pt(x), Pt(HEIGHT - y_from_top - height), Pt(width), Pt(height))
            },
        });
    }

    fn rule(&mut self, y_from_top: f32) {
        self.rect(MARGIN, y_from_top, WIDTH - 2.0 * MARGIN, 1.0);
    }
}

/// Draws the Code128 modules of `data` with their left edge at `x`; returns the drawn width.
fn barcode(canvas: &mut Canvas, x: f32, y_from_top: f32, data: &str) -> Result<f32, String> {
    // 'Ɓ' selects character set B (upper and lower case letters and digits).
    let code = Code128::new(format!("\u{181}{data}")).map_err(|error| error.to_string())?;
    let modules = code.encode();
    let mut index = 0;
    while index < modules.len() {
        if modules[index] == 1 {
            let start = index;
            while index < modules.len() && modules[index] == 1 {
                index += 1;
            }
            let run = (index - start) as f32;
            canvas.rect(x + start as f32 * MODULE, y_from_top, run * MODULE, BAR_HEIGHT);
        } else {
            index += 1;
        }
    }
    Ok(modules.len() as f32 * MODULE)
}

/// Renders the label as PDF bytes.
pub fn render(content: &LabelContent<'_>) -> Result<Vec<u8>, String> {
    let mut canvas = Canvas {
        ops: Vec::with_capacity(512),
    };
    canvas.ops.push(Op::SetFillColor {
        col: Color::Rgb(Rgb {
            r: 0.0,
            g: 0.0,
            b: 0.0,
            icc_profile: None,
        }),
    });
    let mut y = 22.0;
    canvas.text(MARGIN, y, 7.0, true, "FROM (SHIPPER)");
    for line in content.ship_from.lines().iter().take(5) {
        y += 9.0;
        canvas.text(MARGIN, y, 8.0, false, line);
    }
    y += 8.0;
    canvas.rule(y);
    y += 16.0;
    canvas.text(MARGIN, y, 8.0, true, "SHIP TO");
    for line in content.ship_to.lines().iter().take(6) {
        y += 14.0;
        canvas.text(MARGIN + 12.0, y, 12.0, true, line);
    }
    y += 10.0;
    canvas.rule(y);
    y += 22.0;
    let service = format!("{} {}", content.carrier_name, content.service_name).to_uppercase();
    canvas.text(MARGIN, y, 16.0, true, &service);
    y += 12.0;
    canvas.text(
        MARGIN,
        y,
        8.0,
        false,
        "PREPAID INBOUND RETURN LABEL - BILL SHIPPING TO RECEIVER",
    );
    y += 14.0;
    canvas.text(
        MARGIN,
        y,
        10.0,
        true,
        &format!("TRACKING #: {}", grouped(content.tracking_number)),
    );
    y += 8.0;
    let width = {
        // Measure first so the barcode is centred.
        let probe =
            Code128::new(format!("\u{181}{}", content.tracking_number)).map_err(|error| error.to_string())?;
        probe.encode().len() as f32 * MODULE
    };
    if width > WIDTH - 2.0 * 6.0 {
        return Err(format!(
            "the barcode of {} is wider than the label",
            content.tracking_number
        ));
    }
    barcode(&mut canvas, (WIDTH - width) / 2.0, y, content.tracking_number)?;
    y += BAR_HEIGHT + 12.0;
    canvas.text(MARGIN + 40.0, y, 9.0, false, content.tracking_number);
    y += 8.0;
    canvas.rule(y);
    y += 14.0;
    canvas.text(MARGIN, y, 9.0, true, &format!("ORDER {}", content.order_number));
    for (reference, compound) in content.samples.iter().take(4) {
        y += 10.0;
        canvas.text(MARGIN, y, 8.0, false, &format!("SAMPLE {reference}  {compound}"));
    }
    if content.samples.len() > 4 {
        y += 10.0;
        canvas.text(
            MARGIN,
            y,
            8.0,
            false,
            &format!("... and {} more sample lines", content.samples.len() - 4),
        );
    }
    y += 8.0;
    canvas.rule(y);
    y += 12.0;
    canvas.text(
        MARGIN,
        y,
        7.0,
        true,
        "PACKING (full steps in the API and the email)",
    );
    for step in content.packing_steps.iter() {
        if y > HEIGHT - 20.0 {
            break;
        }
        y += 9.0;
        let mut line = format!("{}. {}", step.step, step.instruction);
        if line.len() > 78 {
            line.truncate(75);
            line.push_str("...");
        }
        canvas.text(MARGIN, y, 6.5, false, &line);
    }
    let page = PdfPage::new(Mm::from(Pt(WIDTH)), Mm::from(Pt(HEIGHT)), canvas.ops);
    let mut document = PdfDocument::new(&format!("Label {}", content.tracking_number));
    let mut warnings = Vec::new();
    Ok(document
        .with_pages(vec![page])
        .save(&PdfSaveOptions::default(), &mut warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_renders_as_a_pdf_of_four_by_six_inches() {
        let address = Address {
            name: "Meridian Analytical Laboratories".to_owned(),
            street1: "100 Assay Way".to_owned(),
            city: "Madison".to_owned(),
            state: "WI".to_owned(),
            postal_code: "53703".to_owned(),
            country: "US".to_owned(),
            ..Address::default()
        };
        let content = LabelContent {
            carrier_name: "UPS",
            service_name: "Ground",
            tracking_number: "1Z999AA10123456784",
            ship_from: &address,
            ship_to: &address,
            order_number: "ORD-1",
            samples: vec![("ORD-1-L1".to_owned(), "BPC-157".to_owned())],
            packing_steps: &[],
        };
        let pdf = render(&content).unwrap();
        assert!(pdf.starts_with(b"%PDF"));
        let text = String::from_utf8_lossy(&pdf);
        assert!(text.contains("288") && text.contains("432"), "MediaBox of 4x6 in");
        assert_eq!(grouped("1Z999AA10123456784"), "1Z 999AA1 01 2345678 4");
        if let Ok(path) = std::env::var("SHIPPING_LABEL_SAMPLE") {
            std::fs::write(path, &pdf).unwrap();
        }
    }
}
