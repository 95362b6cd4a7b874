//! Instrument files (issue 27 §2): turns the bytes of a raw instrument file into structured
//! measurements. Pure functions: no I/O, no database, no clock.
//!
//! Three open formats, each in its own module:
//! - **mzML** (`mzml.rs`, through `mzdata`): each SRM/MRM chromatogram is one
//!   [`MeasurementKind::SrmTransition`] (Q1/Q3 from its precursor and product, apex retention time,
//!   trapezoid area of the whole trace over a zero baseline); SIM/SIC chromatograms are
//!   chromatographic peaks at their m/z; TIC, BPC and non-MS traces are skipped.
//! - **ANDI/AIA chromatography netCDF** (`andi.rs`, ASTM E1947, through `netcdf3`): one
//!   [`MeasurementKind::ChromatographicPeak`] per row of the peak table; a file with only the
//!   raw trace and no peak table gives no measurements (no peak picking here).
//! - **Vendor CSV quantitation report** (`csv.rs`): a `Key,Value` header block, then one row per
//!   analyte; the layout is documented on that module and in docs/results.md.
//!
//! Work is bounded: at most [`MAX_MEASUREMENTS`] measurements and [`MAX_TRACE_POINTS`] points per
//! trace; anything larger, malformed or truncated is a [`ParseError`], never a panic.

use chrono::{DateTime, Utc};
use std::fmt;

mod andi;
mod csv;
mod mzml;
#[cfg(test)]
mod tests;

/// Most measurements one file may give: a quantitation batch has hundreds, a large MRM method a
/// few thousand; more is a wrong file or an attempt to make the import do unbounded work.
pub const MAX_MEASUREMENTS: usize = 100_000;
/// Most points one trace (an mzML chromatogram array, ANDI `ordinate_values`) may hold: an hour
/// at 100 Hz is 360,000 points; this bound (40 MB of `f64`) refuses absurd or inflated arrays.
pub const MAX_TRACE_POINTS: usize = 5_000_000;

/// The open formats the lab parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// HUPO-PSI mzML 1.1 (plain or indexed).
    Mzml,
    /// ANDI/AIA chromatography netCDF-3 (ASTM E1947).
    AndiNetcdf,
    /// The vendor quantitation report CSV described in `csv.rs` and docs/results.md.
    VendorCsv,
}

impl Format {
    /// Every format, in a stable order.
    pub const ALL: [Format; 3] = [Format::Mzml, Format::AndiNetcdf, Format::VendorCsv];

    /// Stable name stored with an import: "mzml", "andi-netcdf", "vendor-csv".
    pub fn name(self) -> &'static str {
        match self {
            Format::Mzml => "mzml",
            Format::AndiNetcdf => "andi-netcdf",
            Format::VendorCsv => "vendor-csv",
        }
    }

    /// The format of a stored name, if it is one of [`Format::name`]'s.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == name)
    }

    /// Sniffs the format from the content (netCDF-3 magic bytes, an `mzML`/`indexedmzML` XML root,
    /// a CSV header naming the report's columns), falling back on the filename extension
    /// (`.mzML`, `.cdf`/`.CDF`/`.nc`, `.csv`, any case); None when it is none of them.
    pub fn detect(filename: &str, bytes: &[u8]) -> Option<Format> {
        if andi::looks_like(bytes) {
            return Some(Format::AndiNetcdf);
        }
        if mzml::looks_like(bytes) {
            return Some(Format::Mzml);
        }
        if csv::looks_like(bytes) {
            return Some(Format::VendorCsv);
        }
        let (_, extension) = filename.rsplit_once('.')?;
        match extension.to_ascii_lowercase().as_str() {
            "mzml" => Some(Format::Mzml),
            "cdf" | "nc" => Some(Format::AndiNetcdf),
            "csv" => Some(Format::VendorCsv),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Version string of the parser recorded with each import: our rules' version, then the crate
/// that reads the container (the minor line pinned in Cargo.toml).
pub fn parser_version(format: Format) -> String {
    /// Bumped whenever a rule here changes what a file parses into (integration, units, columns).
    const RULES: &str = "lab-formats/1";
    let reader = match format {
        Format::Mzml => "mzdata/0.68",
        Format::AndiNetcdf => "netcdf3/0.6",
        Format::VendorCsv => "csv/1",
    };
    format!("{RULES} {reader}")
}

/// What one instrument file says: its run metadata and its measurements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// From the file when it says (mzML instrument configuration, else its acquisition software;
    /// ANDI `instrument_name`/`detector_name`; CSV `Instrument`).
    pub instrument_name: Option<String>,
    /// mzML run id; ANDI `injection_id`/`experiment_id`/`source_file_reference`; CSV `Run ID`.
    pub run_identifier: Option<String>,
    /// mzML sample name; ANDI `sample_name` (else `sample_id`); CSV `Sample ID`.
    pub sample_identifier: Option<String>,
    /// mzML run `startTimeStamp`; ANDI `injection_date_time_stamp`; CSV `Acquired`.
    pub acquired_at: Option<DateTime<Utc>>,
    /// In file order.
    pub measurements: Vec<Measurement>,
}

/// One measured analyte: a chromatographic peak or an SRM/MRM transition.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Compound or peak name, or for an unnamed SRM transition "Q1=… Q3=…".
    pub analyte: String,
    pub kind: MeasurementKind,
    /// Apex retention time in minutes.
    pub retention_time_min: Option<f64>,
    /// m/z of a full-scan/SIM measurement.
    pub mz: Option<f64>,
    /// SRM/MRM transition Q1.
    pub precursor_mz: Option<f64>,
    /// SRM/MRM transition Q3.
    pub product_mz: Option<f64>,
    /// Integrated peak area (or the report's response).
    pub response: Option<f64>,
    /// E.g. "counts*min" when known.
    pub response_unit: Option<String>,
    /// Decimal text exactly as reported (never reformatted through f64).
    pub concentration: Option<String>,
    pub concentration_unit: Option<String>,
    /// Decimal text as reported.
    pub loq: Option<String>,
    /// Where in the file it came from, so a reviewer can find it: the mzML chromatogram id,
    /// "peak N" of the ANDI peak table, "line N" of the CSV.
    pub source_ref: Option<String>,
}

impl Measurement {
    /// A measurement of `analyte` with every optional field empty.
    pub fn new(analyte: impl Into<String>, kind: MeasurementKind) -> Self {
        Self {
            analyte: analyte.into(),
            kind,
            retention_time_min: None,
            mz: None,
            precursor_mz: None,
            product_mz: None,
            response: None,
            response_unit: None,
            concentration: None,
            concentration_unit: None,
            loq: None,
            source_ref: None,
        }
    }
}

/// What a measurement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeasurementKind {
    ChromatographicPeak,
    SrmTransition,
}

impl MeasurementKind {
    /// Stable name: "chromatographic_peak", "srm_transition".
    pub fn name(self) -> &'static str {
        match self {
            MeasurementKind::ChromatographicPeak => "chromatographic_peak",
            MeasurementKind::SrmTransition => "srm_transition",
        }
    }

    /// The kind of a stored name, if it is one of [`MeasurementKind::name`]'s.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            MeasurementKind::ChromatographicPeak,
            MeasurementKind::SrmTransition,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }
}

/// A file that does not parse as the format it was given as: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    format: Format,
    message: String,
}

impl ParseError {
    /// An error in a file of `format`.
    pub(crate) fn new(format: Format, message: impl Into<String>) -> Self {
        Self {
            format,
            message: message.into(),
        }
    }

    /// The format the file was parsed as.
    pub fn format(&self) -> Format {
        self.format
    }

    /// What is wrong and where, without the format's name.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} file: {}", self.format, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses `bytes` as a file of `format`.
pub fn parse(format: Format, bytes: &[u8]) -> Result<Parsed, ParseError> {
    let parse_as = || match format {
        Format::Mzml => mzml::parse(bytes),
        Format::AndiNetcdf => andi::parse(bytes),
        Format::VendorCsv => csv::parse(bytes),
    };
    // The checks before each reader (UTF-8, well-formed and closed XML, decodable attributes,
    // named parameters, bounded zlib, declared netCDF sizes) keep inputs off the panicking paths
    // found in mzdata and netcdf3. mzdata still unwraps some well-formed but wrong content (a
    // cvParam value that is not a number, one without an accession: 1 of 300 random mutations of
    // the test file); that panic becomes this error instead of unwinding through the import (the
    // default panic hook still prints it to stderr).
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse_as))
        .unwrap_or_else(|_| Err(ParseError::new(format, "the reader failed on this file")))?;
    // Each parser stops as soon as it passes the bound; this keeps the promise for all of them.
    check_measurement_count(format, parsed.measurements.len())?;
    Ok(parsed)
}

/// Refuses a file with more than [`MAX_MEASUREMENTS`] measurements.
fn check_measurement_count(format: Format, count: usize) -> Result<(), ParseError> {
    if count > MAX_MEASUREMENTS {
        return Err(ParseError::new(
            format,
            format!("more than {MAX_MEASUREMENTS} measurements"),
        ));
    }
    Ok(())
}

/// The trimmed text, or None when it is empty.
fn non_empty(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Whether `text` is a plain decimal number as reports print them: optional sign, digits,
/// optional fraction (`12`, `-0.50`, `.5`); no exponent, no thousands separator.
fn is_plain_decimal(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    !(whole.is_empty() && fraction.is_empty()) && digits(whole) && digits(fraction)
}
