//! ANDI/AIA chromatography netCDF (ASTM E1947) peak tables as measurements, read with `netcdf3`.
//!
//! - Metadata from global attributes: `instrument_name` (else `detector_name`),
//!   `injection_id` / `experiment_id` (else `source_file_reference`, the vendor's raw file),
//!   `sample_name` (else `sample_id`), `injection_date_time_stamp` in ANDI's
//!   `YYYYMMDDhhmmss±hhmm` form (another form is an error, not a silent None).
//! - One [`MeasurementKind::ChromatographicPeak`] per row of the peak table (`peak_number`):
//!   `peak_name` (else "peak N"), `peak_retention_time` in `retention_unit` (seconds by default)
//!   converted to minutes, `peak_area` as the response (no unit: the file does not state the area
//!   unit), `peak_amount` with the global `peak_amount_unit`. netCDF stores the amount as a binary
//!   float, so its text is the shortest decimal that reads back as the stored value (an `f32`
//!   `110.1111` stays "110.1111"). netCDF fill values and NaN read as absent.
//! - A file with the raw trace (`ordinate_values`) and no peak table gives no measurements: peak
//!   picking needs integration parameters the lab validates in its data system, not here.
//! - ANDI-MS files (`ms_template_revision`) and netCDF files that are not ANDI chromatography are
//!   refused.

use super::{Format, MAX_MEASUREMENTS, Measurement, MeasurementKind, ParseError, Parsed, non_empty};
use chrono::{DateTime, Utc};
use netcdf3::{DataSet, DataVector, FileReader};
use std::io::Cursor;

/// The netCDF-3 default fill value of floats (`NC_FILL_FLOAT`, 9.9692099683868690e+36): larger
/// magnitudes are "no value".
const FILL_THRESHOLD: f64 = 9.9e36;

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(Format::AndiNetcdf, message)
}

/// Whether `bytes` start with the netCDF-3 classic or 64-bit-offset magic.
pub(super) fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(b"CDF\x01") || bytes.starts_with(b"CDF\x02")
}

/// Parses an ANDI chromatography file.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    if !looks_like(bytes) {
        return Err(error("not a netCDF-3 file (no CDF\\x01 or CDF\\x02 magic)"));
    }
    let mut reader = FileReader::open_seek_read("andi.cdf", Box::new(Cursor::new(bytes.to_vec())))
        .map_err(|cause| error(format!("unreadable netCDF header: {cause}")))?;
    let data_set = reader.data_set();
    if data_set.has_global_attr("ms_template_revision") {
        return Err(error(
            "an ANDI-MS (mass spectrometry) file: export ANDI chromatography instead",
        ));
    }
    let is_chromatography = data_set.has_global_attr("aia_template_revision")
        || data_set.has_var("ordinate_values")
        || data_set.has_var("peak_retention_time");
    if !is_chromatography {
        return Err(error(
            "not ANDI chromatography (no aia_template_revision, trace or peak table)",
        ));
    }
    let attribute = |name: &str| global_text(data_set, name);
    let first_of = |names: &[&str]| names.iter().find_map(|name| attribute(name));
    let acquired_at = attribute("injection_date_time_stamp")
        .map(|stamp| andi_time(&stamp))
        .transpose()?;
    let mut parsed = Parsed {
        instrument_name: first_of(&["instrument_name", "detector_name"]),
        run_identifier: first_of(&["injection_id", "experiment_id", "source_file_reference"]),
        sample_identifier: first_of(&["sample_name", "sample_id"]),
        acquired_at,
        measurements: Vec::new(),
    };
    let peaks = data_set.dim_size("peak_number").unwrap_or(0);
    if peaks == 0 || !data_set.has_var("peak_retention_time") {
        return Ok(parsed);
    }
    if peaks > MAX_MEASUREMENTS {
        return Err(error(format!("{peaks} peaks: more than {MAX_MEASUREMENTS}")));
    }
    let to_minutes = match attribute("retention_unit")
        .as_deref()
        .map(str::to_ascii_lowercase)
    {
        None => 1.0 / 60.0,
        Some(unit) if unit.starts_with("second") => 1.0 / 60.0,
        Some(unit) if unit.starts_with("minute") => 1.0,
        Some(unit) => {
            return Err(error(format!(
                "retention_unit {unit:?} is neither seconds nor minutes"
            )));
        }
    };
    let amount_unit = attribute("peak_amount_unit");
    let mut read = |name: &str| read_var(&mut reader, name, bytes.len());
    let retention_times = numbers(read("peak_retention_time")?, "peak_retention_time", peaks)?;
    let areas = numbers(read("peak_area")?, "peak_area", peaks)?;
    let amounts = read("peak_amount")?
        .map(|values| amount_texts(values, peaks))
        .transpose()?;
    let names = read("peak_name")?
        .map(|values| row_texts(values, peaks))
        .transpose()?;
    for peak in 0..peaks {
        let name = names.as_ref().and_then(|names| names[peak].clone());
        let mut measurement = Measurement::new(
            name.unwrap_or_else(|| format!("peak {}", peak + 1)),
            MeasurementKind::ChromatographicPeak,
        );
        measurement.retention_time_min = retention_times
            .as_ref()
            .and_then(|times| times[peak])
            .map(|rt| rt * to_minutes);
        measurement.response = areas.as_ref().and_then(|areas| areas[peak]);
        measurement.concentration = amounts.as_ref().and_then(|amounts| amounts[peak].clone());
        measurement.concentration_unit = measurement.concentration.as_ref().and(amount_unit.clone());
        measurement.source_ref = Some(format!("peak {}", peak + 1));
        parsed.measurements.push(measurement);
    }
    Ok(parsed)
}

/// A global text attribute, NUL padding and blanks trimmed, bytes that are not UTF-8 replaced.
fn global_text(data_set: &DataSet, name: &str) -> Option<String> {
    let bytes = data_set.get_global_attr_u8(name)?;
    non_empty(String::from_utf8_lossy(bytes).trim_matches('\0'))
}

/// An ANDI `YYYYMMDDhhmmss±hhmm` time stamp.
fn andi_time(stamp: &str) -> Result<DateTime<Utc>, ParseError> {
    DateTime::parse_from_str(stamp, "%Y%m%d%H%M%S%z")
        .map(|time| time.to_utc())
        .map_err(|_| {
            error(format!(
                "injection_date_time_stamp {stamp:?} is not YYYYMMDDhhmmss±hhmm"
            ))
        })
}

/// Reads a variable when it exists, after checking that the file can hold what it declares.
fn read_var(reader: &mut FileReader, name: &str, file_size: usize) -> Result<Option<DataVector>, ParseError> {
    let Some(variable) = reader.data_set().get_var(name) else {
        return Ok(None);
    };
    let declared = variable
        .get_dims()
        .iter()
        .try_fold(variable.data_type().size_of(), |size, dim| {
            size.checked_mul(dim.size())
        });
    if declared.is_none_or(|size| size > file_size) {
        return Err(error(format!(
            "variable {name} declares more data than the file holds"
        )));
    }
    reader
        .read_var(name)
        .map(Some)
        .map_err(|cause| error(format!("variable {name} is unreadable: {cause}")))
}

/// The values of a numeric per-peak variable, fill values and NaN as None.
fn numbers(
    values: Option<DataVector>,
    name: &str,
    peaks: usize,
) -> Result<Option<Vec<Option<f64>>>, ParseError> {
    let Some(values) = values else {
        return Ok(None);
    };
    let numbers: Vec<f64> = match values {
        DataVector::F32(values) => values.into_iter().map(f64::from).collect(),
        DataVector::F64(values) => values,
        DataVector::I32(values) => values.into_iter().map(f64::from).collect(),
        DataVector::I16(values) => values.into_iter().map(f64::from).collect(),
        DataVector::I8(_) | DataVector::U8(_) => {
            return Err(error(format!("variable {name} is not numeric")));
        }
    };
    if numbers.len() != peaks {
        return Err(error(format!(
            "variable {name} has {} values for {peaks} peaks",
            numbers.len()
        )));
    }
    Ok(Some(numbers.into_iter().map(present).collect()))
}

fn present(value: f64) -> Option<f64> {
    (value.is_finite() && value.abs() < FILL_THRESHOLD).then_some(value)
}

/// `peak_amount` as decimal text: the shortest text that reads back as the stored float.
fn amount_texts(values: DataVector, peaks: usize) -> Result<Vec<Option<String>>, ParseError> {
    let texts: Vec<Option<String>> = match values {
        DataVector::F32(values) => values
            .into_iter()
            .map(|value| present(f64::from(value)).map(|_| value.to_string()))
            .collect(),
        DataVector::F64(values) => values
            .into_iter()
            .map(|value| present(value).map(|_| value.to_string()))
            .collect(),
        DataVector::I32(values) => values.into_iter().map(|value| Some(value.to_string())).collect(),
        _ => return Err(error("variable peak_amount is not a float or an integer")),
    };
    if texts.len() != peaks {
        return Err(error(format!(
            "variable peak_amount has {} values for {peaks} peaks",
            texts.len()
        )));
    }
    Ok(texts)
}

/// The rows of a `char (peak_number, _N_byte_string)` variable as trimmed texts.
fn row_texts(values: DataVector, peaks: usize) -> Result<Vec<Option<String>>, ParseError> {
    let DataVector::U8(bytes) = values else {
        return Err(error("variable peak_name is not text"));
    };
    if bytes.is_empty() || bytes.len() % peaks != 0 {
        return Err(error(format!(
            "variable peak_name has {} bytes for {peaks} peaks",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks(bytes.len() / peaks)
        .map(|row| non_empty(String::from_utf8_lossy(row).trim_matches('\0')))
        .collect())
}
