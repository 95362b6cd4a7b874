//! Vendor quantitation report CSV, as LIMS connectors receive batch exports (modelled on Agilent
//! MassHunter Quant and Waters TargetLynx "export to CSV"). UTF-8 (a BOM is allowed), RFC 4180
//! quoting (`"Benz[a]anthracene, total"`, `""` for a quote), cells trimmed:
//!
//! ```text
//! Report,Quantitation Report                      <- header block: Key,Value lines, any order;
//! Instrument,Agilent 6470 Triple Quad LC/MS          unknown keys are ignored
//! Run ID,B2024-0514-03
//! Sample ID,LAB-24-001234
//! Acquired,2024-05-14T09:32:11+02:00              <- RFC 3339, a UTC offset is required
//!                                                 <- blank lines anywhere are skipped
//! Analyte,RT (min),Area,Calc. Conc.,Units,LOQ,Q1,Q3   <- the table header: the first row with an
//! Caffeine,3.412,1532201.5,12.50,ng/mL,0.50,195.1,138.1  "Analyte" (or "Compound") cell
//! ```
//!
//! Table columns, matched case-insensitively, in any order; other columns are ignored:
//!
//! | column | also accepted | required | becomes |
//! |---|---|---|---|
//! | `Analyte` | `Compound` | yes | analyte (a row without one is an error) |
//! | `RT (min)` | `Retention Time (min)`, `RT` | yes | retention time, minutes |
//! | `Area` | `Response` | yes | response (unit not stated by these reports) |
//! | `Calc. Conc.` | `Final Conc.`, `Concentration`, `Conc.` | yes | concentration, exact decimal text |
//! | `Units` | `Unit`, `Conc. Units` | yes | concentration unit |
//! | `LOQ` | | no | LOQ, exact decimal text |
//! | `Q1`, `Q3` | `Precursor m/z`, `Product m/z` | no | both set: an SRM transition |
//! | `m/z` | | no | m/z of a SIM/full-scan peak |
//!
//! An empty cell is absent. A concentration of `ND`, `N/D`, `n.d.`, `<LOQ`, `<LOD` or `BLQ` (not
//! detected, below the limit) is absent; any other text that is not a plain decimal (`12`, `0.050`,
//! `-1.5`; no exponent, no thousands separator) is an error naming its line and column, as is a
//! number cell that is not a number.

use super::{Format, MAX_MEASUREMENTS, Measurement, MeasurementKind, ParseError, Parsed};
use super::{is_plain_decimal, non_empty};
use chrono::{DateTime, Utc};

/// Markers of "not detected / below the limit" that leave the concentration absent.
const NOT_DETECTED: [&str; 6] = ["nd", "n/d", "n.d.", "<loq", "<lod", "blq"];

/// A table column: its report name (used in errors), accepted headers, and whether it is required.
struct Column {
    name: &'static str,
    headers: &'static [&'static str],
    required: bool,
}

const ANALYTE: Column = Column {
    name: "Analyte",
    headers: &["analyte", "compound"],
    required: true,
};
const RT: Column = Column {
    name: "RT (min)",
    headers: &["rt (min)", "retention time (min)", "rt"],
    required: true,
};
const AREA: Column = Column {
    name: "Area",
    headers: &["area", "response"],
    required: true,
};
const CONC: Column = Column {
    name: "Calc. Conc.",
    headers: &["calc. conc.", "final conc.", "concentration", "conc."],
    required: true,
};
const UNITS: Column = Column {
    name: "Units",
    headers: &["units", "unit", "conc. units"],
    required: true,
};
const LOQ: Column = Column {
    name: "LOQ",
    headers: &["loq"],
    required: false,
};
const Q1: Column = Column {
    name: "Q1",
    headers: &["q1", "precursor m/z"],
    required: false,
};
const Q3: Column = Column {
    name: "Q3",
    headers: &["q3", "product m/z"],
    required: false,
};
const MZ: Column = Column {
    name: "m/z",
    headers: &["m/z"],
    required: false,
};
const COLUMNS: [&Column; 9] = [&ANALYTE, &RT, &AREA, &CONC, &UNITS, &LOQ, &Q1, &Q3, &MZ];

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(Format::VendorCsv, message)
}

/// Lower case with inner blanks collapsed, so `Calc.  Conc.` matches `calc. conc.`.
fn normalised(cell: &str) -> String {
    cell.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn is_table_header(record: &::csv::StringRecord) -> bool {
    record
        .iter()
        .any(|cell| ["analyte", "compound"].contains(&normalised(cell).as_str()))
}

fn reader(text: &str) -> ::csv::Reader<&[u8]> {
    ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(text.as_bytes())
}

fn text_of(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)).ok()
}

/// Whether the first 50 records of `bytes` hold a table header with an area column.
pub(super) fn looks_like(bytes: &[u8]) -> bool {
    // A cut in the middle of a UTF-8 sequence only loses the tail of the sample.
    let sample = &bytes[..bytes.len().min(16 * 1024)];
    let text = match std::str::from_utf8(sample) {
        Ok(text) => text,
        Err(cut) => std::str::from_utf8(&sample[..cut.valid_up_to()]).unwrap_or_default(),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    reader(text)
        .records()
        .take(50)
        .map_while(Result::ok)
        .any(|record| {
            is_table_header(&record)
                && record
                    .iter()
                    .any(|cell| AREA.headers.contains(&normalised(cell).as_str()))
        })
}

/// Parses a quantitation report.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    let text = text_of(bytes).ok_or_else(|| error("not UTF-8 text (export the report as UTF-8)"))?;
    let mut parsed = Parsed::default();
    let mut columns: Option<Vec<Option<usize>>> = None;
    for record in reader(text).records() {
        let record = record.map_err(|cause| error(format!("malformed CSV: {cause}")))?;
        let line = record
            .position()
            .map_or(0, |position| line_of(text, position.byte() as usize));
        if record.iter().all(str::is_empty) {
            continue;
        }
        let Some(positions) = &columns else {
            if is_table_header(&record) {
                columns = Some(locate_columns(&record, line)?);
            } else {
                header_entry(&mut parsed, &record, line)?;
            }
            continue;
        };
        if parsed.measurements.len() == MAX_MEASUREMENTS {
            return Err(error(format!("more than {MAX_MEASUREMENTS} analyte rows")));
        }
        parsed.measurements.push(row(&record, positions, line)?);
    }
    if columns.is_none() {
        return Err(error("no table header row (a row with an \"Analyte\" column)"));
    }
    Ok(parsed)
}

/// The 1-based line of the record the csv reader places at `byte`. Counted here: the reader's
/// own count passes over blank lines, and with CRLF its position can be the previous `\n`.
fn line_of(text: &str, byte: usize) -> u64 {
    let before = &text.as_bytes()[..byte.min(text.len())];
    let skipped = text.as_bytes()[before.len()..]
        .iter()
        .take_while(|byte| matches!(byte, b'\r' | b'\n'));
    let newlines = before
        .iter()
        .chain(skipped)
        .filter(|byte| **byte == b'\n')
        .count();
    1 + newlines as u64
}

/// The position of each of [`COLUMNS`] in the table header; a missing required one is an error.
fn locate_columns(record: &::csv::StringRecord, line: u64) -> Result<Vec<Option<usize>>, ParseError> {
    let cells: Vec<String> = record.iter().map(normalised).collect();
    COLUMNS
        .iter()
        .map(|column| {
            let position = cells
                .iter()
                .position(|cell| column.headers.contains(&cell.as_str()));
            if position.is_none() && column.required {
                return Err(error(format!(
                    "the table header on line {line} has no \"{}\" column",
                    column.name
                )));
            }
            Ok(position)
        })
        .collect()
}

/// One `Key,Value` line of the header block.
fn header_entry(parsed: &mut Parsed, record: &::csv::StringRecord, line: u64) -> Result<(), ParseError> {
    let key = normalised(record.get(0).unwrap_or_default());
    let value = record.get(1).and_then(non_empty);
    match key.trim_end_matches(':') {
        "instrument" | "instrument name" => parsed.instrument_name = value,
        "run id" | "run" => parsed.run_identifier = value,
        "sample id" | "sample" => parsed.sample_identifier = value,
        "acquired" | "acquired at" | "acquisition time" => {
            parsed.acquired_at = value.map(|text| acquired_at(&text, line)).transpose()?;
        }
        _ => {}
    }
    Ok(())
}

/// An RFC 3339 time (a space may stand for the `T`); a time without UTC offset is refused.
fn acquired_at(text: &str, line: u64) -> Result<DateTime<Utc>, ParseError> {
    DateTime::parse_from_rfc3339(text)
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z"))
        .map(|time| time.to_utc())
        .map_err(|_| {
            error(format!(
                "line {line}: Acquired {text:?} is not an RFC 3339 time with a UTC offset"
            ))
        })
}

/// One analyte row of the table.
fn row(
    record: &::csv::StringRecord,
    positions: &[Option<usize>],
    line: u64,
) -> Result<Measurement, ParseError> {
    let cell = |column: &Column| {
        let index = COLUMNS
            .iter()
            .position(|known| known.name == column.name)
            .and_then(|at| positions[at]);
        index.and_then(|index| record.get(index)).and_then(non_empty)
    };
    let number = |column: &Column| {
        cell(column)
            .map(|text| match text.parse::<f64>() {
                Ok(value) if value.is_finite() => Ok(value),
                _ => Err(error(format!(
                    "line {line}, column \"{}\": {text:?} is not a number",
                    column.name
                ))),
            })
            .transpose()
    };
    let decimal = |column: &Column, not_detected: bool| {
        cell(column)
            .filter(|text| !(not_detected && NOT_DETECTED.contains(&text.to_lowercase().as_str())))
            .map(|text| match is_plain_decimal(&text) {
                true => Ok(text),
                false => Err(error(format!(
                    "line {line}, column \"{}\": {text:?} is not a decimal",
                    column.name
                ))),
            })
            .transpose()
    };
    let analyte = cell(&ANALYTE).ok_or_else(|| error(format!("line {line}: the row has no analyte")))?;
    let precursor_mz = number(&Q1)?;
    let product_mz = number(&Q3)?;
    let kind = match (precursor_mz, product_mz) {
        (Some(_), Some(_)) => MeasurementKind::SrmTransition,
        _ => MeasurementKind::ChromatographicPeak,
    };
    let mut measurement = Measurement::new(analyte, kind);
    if kind == MeasurementKind::SrmTransition {
        measurement.precursor_mz = precursor_mz;
        measurement.product_mz = product_mz;
    }
    measurement.mz = number(&MZ)?;
    measurement.retention_time_min = number(&RT)?;
    measurement.response = number(&AREA)?;
    measurement.concentration = decimal(&CONC, true)?;
    measurement.concentration_unit = cell(&UNITS);
    measurement.loq = decimal(&LOQ, false)?;
    measurement.source_ref = Some(format!("line {line}"));
    Ok(measurement)
}
