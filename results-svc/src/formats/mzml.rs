//! mzML chromatograms as measurements, read with `mzdata`.
//!
//! 1. quick-xml walks the whole document once: it must be UTF-8, well-formed and closed, its root
//!    `mzML` or `indexedmzML`, every attribute decodable; the byte offset of every
//!    `<chromatogram>` becomes the offset index that mzdata reads chromatograms by (a file's own
//!    `indexList` is not trusted, and plain mzML has none).
//! 2. mzdata reads the metadata and each chromatogram without decoding arrays
//!    ([`DetailLevel::Lazy`]); every zlib array is inflated once with a bound before mzdata decodes
//!    it, because mzdata panics on a corrupt stream and would inflate a bomb without limit.
//! 3. Each SRM chromatogram becomes one [`MeasurementKind::SrmTransition`]: Q1 from the
//!    precursor's selected ion (else its isolation window target), Q3 from the product's isolation
//!    window target, both as written (the scan of step 1 reads the window targets: mzdata 0.68
//!    skips `<product>` and rounds window targets to `f32`); SIM/SIC chromatograms are
//!    chromatographic peaks at their m/z; TIC, BPC and other traces are skipped.
//! 4. Apex = time of the first maximum intensity. Response = trapezoid integral of the whole trace
//!    over time in minutes with a zero baseline (no peak boundaries, no baseline subtraction), so
//!    counts × minutes when the intensity unit is "number of counts".

use super::{Format, MAX_MEASUREMENTS, MAX_TRACE_POINTS, Measurement, MeasurementKind, ParseError};
use super::{Parsed, non_empty};
use base64::Engine as _;
use mzdata::io::mzml::MzMLReader;
use mzdata::io::{DetailLevel, OffsetIndex};
use mzdata::meta::MSDataFileMetadata;
use mzdata::params::{ParamDescribed, Unit};
use mzdata::prelude::{ByteArrayView, ChromatogramLike};
use mzdata::spectrum::bindata::BinaryCompressionType;
use mzdata::spectrum::{ArrayType, Chromatogram, ChromatogramType, DataArray};
use quick_xml::events::Event;
use std::io::{Cursor, Read};

/// Chromatogram parameters (case-insensitive names) that name the analyte when a file has one.
const ANALYTE_PARAMS: [&str; 5] = ["compound name", "compound", "analyte", "analyte name", "name"];

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(Format::Mzml, message)
}

/// Whether the first element of `bytes` is `mzML` or `indexedmzML`.
pub(super) fn looks_like(bytes: &[u8]) -> bool {
    let mut reader = quick_xml::Reader::from_reader(bytes);
    // Declarations, comments and a doctype may come first; the root is the first element.
    for _ in 0..64 {
        match reader.read_event() {
            Ok(Event::Start(element) | Event::Empty(element)) => {
                let name = element.local_name();
                return name.as_ref() == b"mzML" || name.as_ref() == b"indexedmzML";
            }
            Ok(Event::Eof) | Err(_) => return false,
            Ok(_) => {}
        }
    }
    false
}

/// Parses an mzML document.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    if !looks_like(bytes) {
        return Err(error("the root element is not <mzML> or <indexedmzML>"));
    }
    if std::str::from_utf8(bytes).is_err() {
        // mzdata decodes names and values as UTF-8 and panics on anything else.
        return Err(error("not UTF-8 text"));
    }
    read_with_mzdata(bytes, scan(bytes)?)
}

/// What the scan finds: mzdata's offset index, and each chromatogram's isolation window
/// targets (mzdata 0.68 does not read a chromatogram's `<product>`, and keeps window targets as
/// `f32`; the scan reads both as written, in `f64`).
struct Scan {
    index: OffsetIndex,
    windows: Vec<Windows>,
}

/// The isolation window targets (MS:1000827) of one chromatogram.
#[derive(Default)]
struct Windows {
    precursor: Option<f64>,
    product: Option<f64>,
}

/// Which isolation window the scan is in.
#[derive(Clone, Copy, PartialEq)]
enum Within {
    Elsewhere,
    Precursor,
    Product,
}

/// Walks the whole document: well-formed, closed, every attribute decodable (mzdata panics on an
/// undecodable one), and notes where each chromatogram starts and its window targets.
fn scan(bytes: &[u8]) -> Result<Scan, ParseError> {
    let mut found = Scan {
        index: OffsetIndex::new("chromatogram".to_owned()),
        windows: Vec::new(),
    };
    let mut reader = quick_xml::Reader::from_reader(bytes);
    let mut open_elements = 0_usize;
    let mut within = Within::Elsewhere;
    loop {
        let event = reader.read_event().map_err(|cause| {
            error(format!(
                "malformed XML near byte {}: {cause}",
                reader.error_position()
            ))
        })?;
        let position = reader.buffer_position();
        let element = match &event {
            Event::Start(element) | Event::Empty(element) => element,
            Event::End(end) => {
                open_elements = open_elements.saturating_sub(1);
                if matches!(end.local_name().as_ref(), b"precursor" | b"product") {
                    within = Within::Elsewhere;
                }
                continue;
            }
            Event::Eof if open_elements > 0 => {
                return Err(error(format!(
                    "truncated: {open_elements} elements are not closed"
                )));
            }
            Event::Eof => break,
            _ => continue,
        };
        let mut target = None;
        for attribute in element.attributes() {
            let attribute = attribute
                .map_err(|cause| error(format!("malformed attribute near byte {position}: {cause}")))?;
            let value = attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|cause| error(format!("undecodable attribute near byte {position}: {cause}")))?;
            if attribute.key.local_name().as_ref() == b"value" {
                target = Some(value.into_owned());
            }
        }
        let is_param = matches!(element.local_name().as_ref(), b"cvParam" | b"userParam");
        if is_param && !matches!(element.try_get_attribute("name"), Ok(Some(_))) {
            // Required by the schema; mzdata unwraps it.
            return Err(error(format!("a parameter near byte {position} has no name")));
        }
        let is_start = matches!(event, Event::Start(_));
        open_elements += usize::from(is_start);
        match element.local_name().as_ref() {
            b"chromatogram" if is_start => {
                // The reader stands just after the tag's '>'; the tag is its content plus '<' '>'.
                let start = position.saturating_sub(element.len() as u64 + 2);
                if bytes.get(start as usize) != Some(&b'<') {
                    return Err(error(format!(
                        "cannot locate the chromatogram at byte {position}"
                    )));
                }
                if found.index.len() == MAX_MEASUREMENTS {
                    return Err(error(format!("more than {MAX_MEASUREMENTS} chromatograms")));
                }
                // Keys are ordinals: ids are not trusted to be unique.
                found.index.insert(found.index.len().to_string(), start);
                found.windows.push(Windows::default());
            }
            b"precursor" if is_start => within = Within::Precursor,
            b"product" if is_start => within = Within::Product,
            b"cvParam" if within != Within::Elsewhere => {
                let is_target = element
                    .try_get_attribute("accession")
                    .ok()
                    .flatten()
                    .is_some_and(|accession| accession.value.as_ref() == b"MS:1000827");
                let (Some(windows), true) = (found.windows.last_mut(), is_target) else {
                    continue;
                };
                let text = target.unwrap_or_default();
                let mz = text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|mz| mz.is_finite())
                    .ok_or_else(|| {
                        error(format!(
                            "isolation window target {text:?} near byte {position} is not a number"
                        ))
                    })?;
                let slot = if within == Within::Product {
                    &mut windows.product
                } else {
                    &mut windows.precursor
                };
                slot.get_or_insert(mz);
            }
            _ => {}
        }
    }
    found.index.init = true;
    Ok(found)
}

fn read_with_mzdata(bytes: &[u8], scan: Scan) -> Result<Parsed, ParseError> {
    let mut reader =
        MzMLReader::with_buffer_capacity_and_detail_level(Cursor::new(bytes), 1 << 16, DetailLevel::Lazy);
    *reader.chromatogram_index = scan.index;
    let mut parsed = metadata(&reader);
    for ordinal in 0..reader.chromatogram_index.len() {
        let chromatogram = reader
            .get_chromatogram_by_index(ordinal)
            .ok_or_else(|| error(format!("chromatogram {} cannot be read", ordinal + 1)))?;
        if let Some(measurement) = measurement(&chromatogram, &scan.windows[ordinal])? {
            parsed.measurements.push(measurement);
        }
    }
    Ok(parsed)
}

/// Run id, start time, sample name and instrument of the document.
fn metadata<R: std::io::Read>(reader: &MzMLReader<R>) -> Parsed {
    let run = reader.run_description();
    let sample_identifier = reader
        .samples()
        .iter()
        .find_map(|sample| sample.name.as_deref().and_then(non_empty));
    Parsed {
        instrument_name: instrument_name(reader),
        run_identifier: run.and_then(|run| run.id.as_deref().and_then(non_empty)),
        sample_identifier,
        acquired_at: run.and_then(|run| run.start_time).map(|time| time.to_utc()),
        measurements: Vec::new(),
    }
}

/// The instrument model of the run's configuration (the value of "instrument model", else a
/// specific model term), else the acquisition software that configuration names.
fn instrument_name<R: std::io::Read>(reader: &MzMLReader<R>) -> Option<String> {
    let configurations = reader.instrument_configurations();
    let default_id = reader.run_description().and_then(|run| run.default_instrument_id);
    let configuration = default_id
        .and_then(|id| configurations.get(&id))
        .or_else(|| configurations.keys().min().and_then(|id| configurations.get(id)))?;
    let model = configuration
        .params
        .iter()
        .find_map(|param| match param.name.as_str() {
            "instrument model" => non_empty(&param.value.to_string()),
            "instrument serial number" | "customization" => None,
            name if param.accession.is_some() => non_empty(name),
            _ => None,
        });
    model.or_else(|| {
        let software = reader
            .softwares()
            .iter()
            .find(|software| software.id == configuration.software_reference)?;
        let name = software.params.first().and_then(|param| non_empty(&param.name))?;
        match software.version.trim() {
            "" | "unknown" => Some(name),
            version => Some(format!("{name} {version}")),
        }
    })
}

/// The measurement of one chromatogram, or None for a trace that is not one (TIC, BPC, ...).
fn measurement(chromatogram: &Chromatogram, windows: &Windows) -> Result<Option<Measurement>, ParseError> {
    let description = chromatogram.description();
    let selected_ion = description
        .precursor
        .first()
        .and_then(|precursor| precursor.ions.first());
    let positive = |mz: &f64| *mz > 0.0;
    let precursor_mz = selected_ion
        .map(|ion| ion.mz)
        .filter(positive)
        .or(windows.precursor.filter(positive));
    let product_mz = windows.product.filter(positive);
    let kind = match description.chromatogram_type {
        ChromatogramType::SelectedReactionMonitoringChromatogram => MeasurementKind::SrmTransition,
        ChromatogramType::Unknown if precursor_mz.is_some() && product_mz.is_some() => {
            MeasurementKind::SrmTransition
        }
        ChromatogramType::SelectedIonMonitoringChromatogram
        | ChromatogramType::SelectedIonCurrentChromatogram => MeasurementKind::ChromatographicPeak,
        _ => return Ok(None),
    };
    let id = &description.id;
    let named = chromatogram.params().iter().find_map(|param| {
        let name = param.name.to_ascii_lowercase();
        ANALYTE_PARAMS
            .contains(&name.as_str())
            .then(|| non_empty(&param.value.to_string()))
            .flatten()
    });
    let analyte = match (named, kind, precursor_mz, product_mz) {
        (Some(name), _, _, _) => name,
        (None, MeasurementKind::SrmTransition, Some(q1), Some(q3)) => format!("Q1={q1} Q3={q3}"),
        (None, MeasurementKind::ChromatographicPeak, Some(mz), _) => format!("m/z={mz}"),
        (None, _, _, _) => id.clone(),
    };
    let (retention_time_min, response, response_unit) = integrate(chromatogram)?;
    let mut measurement = Measurement::new(analyte, kind);
    match kind {
        MeasurementKind::SrmTransition => {
            measurement.precursor_mz = precursor_mz;
            measurement.product_mz = product_mz;
        }
        MeasurementKind::ChromatographicPeak => measurement.mz = precursor_mz,
    }
    measurement.retention_time_min = retention_time_min;
    measurement.response = response;
    measurement.response_unit = response_unit;
    measurement.source_ref = non_empty(id);
    Ok(Some(measurement))
}

/// Apex time (minutes), trapezoid area over minutes, and the area's unit when known.
type Integrated = (Option<f64>, Option<f64>, Option<String>);

fn integrate(chromatogram: &Chromatogram) -> Result<Integrated, ParseError> {
    let id = &chromatogram.description().id;
    let time_array = array(chromatogram, &ArrayType::TimeArray)?;
    let intensity_array = array(chromatogram, &ArrayType::IntensityArray)?;
    let to_minutes = match time_array.unit {
        Unit::Second => 1.0 / 60.0,
        Unit::Minute => 1.0,
        other => {
            return Err(error(format!(
                "chromatogram {id}: time unit {other:?} is neither seconds nor minutes"
            )));
        }
    };
    let decode = |array: &DataArray| {
        array.to_f64().map(|values| values.into_owned()).map_err(|cause| {
            error(format!(
                "chromatogram {id}: {:?} cannot be decoded: {cause}",
                array.name
            ))
        })
    };
    let times: Vec<f64> = decode(time_array)?
        .into_iter()
        .map(|time| time * to_minutes)
        .collect();
    let intensities = decode(intensity_array)?;
    if times.len() != intensities.len() {
        return Err(error(format!(
            "chromatogram {id}: {} times but {} intensities",
            times.len(),
            intensities.len()
        )));
    }
    if times.iter().chain(&intensities).any(|value| !value.is_finite()) {
        return Err(error(format!(
            "chromatogram {id}: a time or intensity is not a finite number"
        )));
    }
    if times.windows(2).any(|pair| pair[1] < pair[0]) {
        return Err(error(format!(
            "chromatogram {id}: times are not in increasing order"
        )));
    }
    let apex = intensities
        .iter()
        .enumerate()
        .fold(None, |best: Option<(usize, f64)>, (at, &value)| match best {
            Some((_, top)) if top >= value => best,
            _ => Some((at, value)),
        })
        .map(|(at, _)| times[at]);
    let area = (!times.is_empty()).then(|| {
        times
            .windows(2)
            .zip(intensities.windows(2))
            .map(|(time, intensity)| (time[1] - time[0]) * (intensity[0] + intensity[1]) / 2.0)
            .sum::<f64>()
    });
    let unit = matches!(intensity_array.unit, Unit::DetectorCounts).then(|| "counts*min".to_owned());
    Ok((apex, area, unit))
}

/// The chromatogram's array of `kind`, after its size has been checked.
fn array<'a>(chromatogram: &'a Chromatogram, kind: &ArrayType) -> Result<&'a DataArray, ParseError> {
    let id = &chromatogram.description().id;
    let array = chromatogram
        .arrays
        .get(kind)
        .ok_or_else(|| error(format!("chromatogram {id} has no {kind:?}")))?;
    let limit = MAX_TRACE_POINTS * array.dtype.size_of().max(1);
    let size = match array.compression {
        BinaryCompressionType::Zlib => inflated_size(&array.data, limit),
        BinaryCompressionType::Decoded => Ok(array.data.len()),
        _ => Ok(array.data.len() / 4 * 3),
    }
    .map_err(|cause| error(format!("chromatogram {id}: {kind:?}: {cause}")))?;
    if size > limit {
        return Err(error(format!(
            "chromatogram {id}: {kind:?} has more than {MAX_TRACE_POINTS} points"
        )));
    }
    Ok(array)
}

/// The size of a base64 zlib stream once inflated, reading at most `limit + 1` bytes of it.
fn inflated_size(base64_text: &[u8], limit: usize) -> Result<usize, String> {
    let text: Vec<u8> = base64_text
        .iter()
        .copied()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect();
    let compressed = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|cause| format!("malformed base64: {cause}"))?;
    let mut inflater = flate2::read::ZlibDecoder::new(compressed.as_slice()).take(limit as u64 + 1);
    std::io::copy(&mut inflater, &mut std::io::sink())
        .map(|size| size as usize)
        .map_err(|cause| format!("corrupt zlib stream: {cause}"))
}
