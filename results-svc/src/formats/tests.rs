//! Tests of the instrument-file parsers on real files (results-svc/tests/data/instruments, sources
//! and licences in its LICENSES.md), on small documents built here, and on truncated and mutated
//! copies of the real files.
//!
//! Expected values were computed independently of these parsers by
//! `tests/data/instruments/crosscheck.py` (ElementTree + base64 + numpy for mzML, scipy's netCDF
//! reader for ANDI) and by hand for the built documents.

use super::*;
use base64::Engine as _;
use chrono::TimeZone as _;
use std::io::Write as _;

const MINI_CHROM_MZML: &[u8] = include_bytes!("../../tests/data/instruments/mini.chrom.mzML");
const ANDI_CHROM_VALID: &[u8] = include_bytes!("../../tests/data/instruments/andi_chrom_valid.cdf");
const NON_ANDI_CDF: &[u8] = include_bytes!("../../tests/data/instruments/non_andi.cdf");
const QUANT_REPORT_CSV: &[u8] = include_bytes!("../../tests/data/instruments/quant_report.csv");

/// Areas are sums of about 175 products of `f32` intensities and `f64` times: numpy and the parser
/// add in the same order in `f64`, so they agree to rounding (1e-9 relative); the tolerance only
/// absorbs a different summation order.
fn assert_close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("a value");
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0),
        "{actual} != {expected}"
    );
}

#[test]
fn the_pymzml_srm_file_gives_three_transitions_with_apex_and_trapezoid_area() {
    let parsed = parse(Format::Mzml, MINI_CHROM_MZML).unwrap();
    assert_eq!(parsed.run_identifier.as_deref(), Some("ru_0"));
    // The sample's name is empty and the run has no startTimeStamp.
    assert_eq!(parsed.sample_identifier, None);
    assert_eq!(parsed.acquired_at, None);
    // "instrument model" has no value, so the configuration's acquisition software (version
    // "unknown") names it.
    assert_eq!(parsed.instrument_name.as_deref(), Some("Analyst"));
    // crosscheck.py: id, Q1 (selected ion), Q3 (product window target), apex (min), area (counts*min).
    let expected = [
        (
            "DECOY_24891_FLEQHGVNFQEINIDEHPEK/3_y6",
            808.4924,
            689.347785870371,
            61.707,
            799.8790833333339,
        ),
        (
            "4092_IEVLDYQAGDEAGIK/2_y7",
            810.9094,
            689.3548,
            61.877833333333335,
            756.1168333333346,
        ),
        (
            "54036_LEKELEEKKEALELAIDQASR/3_y6",
            814.7744,
            689.3626,
            68.1365,
            964.2415000000067,
        ),
    ];
    assert_eq!(parsed.measurements.len(), expected.len());
    for (measurement, (id, q1, q3, apex, area)) in parsed.measurements.iter().zip(expected) {
        assert_eq!(measurement.kind, MeasurementKind::SrmTransition);
        assert_eq!(measurement.source_ref.as_deref(), Some(id));
        assert_eq!(measurement.precursor_mz, Some(q1));
        assert_eq!(measurement.product_mz, Some(q3));
        assert_eq!(measurement.analyte, format!("Q1={q1} Q3={q3}"));
        assert_close(measurement.retention_time_min, apex);
        assert_close(measurement.response, area);
        // The intensity unit is written unitAccession="MS:1000131" unitName="number of counts":
        // mzdata resolves the name last, an older PSI-MS label it does not know, so the unit is
        // unknown and the response has no unit (the built document below has "counts*min").
        assert_eq!(measurement.response_unit, None);
        assert_eq!((measurement.mz, measurement.concentration.as_ref()), (None, None));
    }
    assert_eq!(parsed.measurements[0].analyte, "Q1=808.4924 Q3=689.347785870371");
}

#[test]
fn the_sciformats_andi_file_gives_its_three_peaks_and_metadata() {
    let parsed = parse(Format::AndiNetcdf, ANDI_CHROM_VALID).unwrap();
    assert_eq!(parsed.instrument_name.as_deref(), Some("dummy detector name"));
    assert_eq!(
        parsed.run_identifier.as_deref(),
        Some("dummy source file reference")
    );
    assert_eq!(parsed.sample_identifier.as_deref(), Some("dummy sample name"));
    // 20230908200501+0200
    assert_eq!(
        parsed.acquired_at,
        Some(Utc.with_ymd_and_hms(2023, 9, 8, 18, 5, 1).unwrap())
    );
    // crosscheck.py (scipy): names, retention times (f32 seconds / 60), areas, amounts as f32 text.
    let expected = [
        ("ref", 0.16851666768391926, 111.0, "110.1111"),
        ("peak name 1", 0.5037000020345052, 222.0, "220.2222"),
        ("peak name 2", 0.8388833363850912, 333.0, "330.333"),
    ];
    assert_eq!(parsed.measurements.len(), expected.len());
    for (number, (measurement, (name, rt, area, amount))) in
        parsed.measurements.iter().zip(expected).enumerate()
    {
        assert_eq!(measurement.kind, MeasurementKind::ChromatographicPeak);
        assert_eq!(measurement.analyte, name);
        assert_close(measurement.retention_time_min, rt);
        assert_eq!(measurement.response, Some(area));
        assert_eq!(measurement.concentration.as_deref(), Some(amount));
        assert_eq!(measurement.concentration_unit.as_deref(), Some("ppm"));
        assert_eq!(measurement.source_ref, Some(format!("peak {}", number + 1)));
        assert_eq!(
            (measurement.precursor_mz, measurement.product_mz, measurement.mz),
            (None, None, None)
        );
    }
}

#[test]
fn a_netcdf_file_that_is_not_andi_chromatography_is_refused() {
    let error = parse(Format::AndiNetcdf, NON_ANDI_CDF).unwrap_err();
    assert!(error.message().contains("not ANDI chromatography"), "{error}");
}

#[test]
fn the_quantitation_report_gives_every_analyte_row_with_exact_decimal_text() {
    let parsed = parse(Format::VendorCsv, QUANT_REPORT_CSV).unwrap();
    assert_eq!(
        parsed.instrument_name.as_deref(),
        Some("Agilent 6470 Triple Quad LC/MS, SN SG2204A112")
    );
    assert_eq!(parsed.run_identifier.as_deref(), Some("B240514-03"));
    assert_eq!(parsed.sample_identifier.as_deref(), Some("LAB-24-001234"));
    assert_eq!(
        parsed.acquired_at,
        Some(Utc.with_ymd_and_hms(2024, 5, 14, 7, 32, 11).unwrap())
    );
    let rows: Vec<_> = parsed
        .measurements
        .iter()
        .map(|m| {
            (
                m.analyte.as_str(),
                m.retention_time_min,
                m.response,
                m.concentration.as_deref(),
                m.concentration_unit.as_deref(),
                m.loq.as_deref(),
                m.precursor_mz,
                m.product_mz,
            )
        })
        .collect();
    let ug = Some("µg/kg");
    assert_eq!(
        rows,
        [
            (
                "Benzo[a]pyrene",
                Some(12.384),
                Some(48211.7),
                Some("1.250"),
                ug,
                Some("0.50"),
                Some(253.1),
                Some(250.1)
            ),
            (
                "Benz[a]anthracene, total",
                Some(11.902),
                Some(37654.2),
                Some("0.980"),
                ug,
                Some("0.50"),
                Some(229.1),
                Some(226.1)
            ),
            (
                "Chrysene",
                Some(11.975),
                Some(29876.0),
                Some("0.7500"),
                ug,
                Some("0.50"),
                Some(229.1),
                Some(228.1)
            ),
            (
                "Benzo[b]fluoranthene \"BbF\"",
                Some(13.511),
                None,
                None,
                ug,
                Some("0.50"),
                Some(253.1),
                Some(250.1)
            ),
            (
                "Caffeine-d9 (ISTD)",
                Some(3.412),
                Some(1532201.5),
                None,
                Some("ng/mL"),
                None,
                Some(204.1),
                Some(144.1)
            ),
        ]
    );
    assert!(
        parsed
            .measurements
            .iter()
            .all(|m| m.kind == MeasurementKind::SrmTransition)
    );
    assert_eq!(parsed.measurements[0].source_ref.as_deref(), Some("line 12"));
}

#[test]
fn a_report_without_a_required_column_names_the_missing_column() {
    let report = "Analyte,RT (min),Area,Units\nCaffeine,3.4,100,ng/mL\n";
    let error = parse(Format::VendorCsv, report.as_bytes()).unwrap_err();
    assert_eq!(
        error.message(),
        "the table header on line 1 has no \"Calc. Conc.\" column"
    );
}

#[test]
fn report_cells_that_are_not_numbers_or_decimals_are_errors_naming_line_and_column() {
    let header = "Instrument,X\nAnalyte,RT (min),Area,Calc. Conc.,Units\n";
    for (row, expected) in [
        (
            "Caffeine,3.4,1e3x,1.0,ng/mL",
            "line 3, column \"Area\": \"1e3x\" is not a number",
        ),
        (
            "Caffeine,3.4,100,\"1,000\",ng/mL",
            "line 3, column \"Calc. Conc.\": \"1,000\" is not a decimal",
        ),
        (",3.4,100,1.0,ng/mL", "line 3: the row has no analyte"),
    ] {
        let error = parse(Format::VendorCsv, format!("{header}{row}\n").as_bytes()).unwrap_err();
        assert_eq!(error.message(), expected);
    }
    let no_offset = "Acquired,2024-05-14 09:32:11\nAnalyte,RT (min),Area,Calc. Conc.,Units\n";
    assert!(
        parse(Format::VendorCsv, no_offset.as_bytes())
            .unwrap_err()
            .message()
            .contains("UTC offset")
    );
    assert!(
        parse(Format::VendorCsv, b"Key,Value\n")
            .unwrap_err()
            .message()
            .contains("no table header")
    );
    assert!(
        parse(Format::VendorCsv, b"Analyte,Area\n\xff\xfe")
            .unwrap_err()
            .message()
            .contains("UTF-8")
    );
}

#[test]
fn formats_are_detected_by_content_whatever_the_filename_says() {
    assert_eq!(Format::detect("upload.bin", MINI_CHROM_MZML), Some(Format::Mzml));
    assert_eq!(
        Format::detect("upload.csv", ANDI_CHROM_VALID),
        Some(Format::AndiNetcdf)
    );
    assert_eq!(
        Format::detect("upload.cdf", QUANT_REPORT_CSV),
        Some(Format::VendorCsv)
    );
    assert_eq!(Format::detect("notes.txt", b"<html><body>no</body></html>"), None);
    let indexed = b"<?xml version=\"1.0\"?>\n<!-- x --><indexedmzML xmlns=\"http://psi.hupo.org/ms/mzml\">";
    assert_eq!(Format::detect("x", indexed), Some(Format::Mzml));
}

/// A one-chromatogram mzML document with zlib-compressed arrays (times in minutes).
fn built_mzml(chromatogram_type: &str, times: &[f64], intensities: &[f64]) -> String {
    let zlib_base64 = |values: &[f64]| {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        for value in values {
            encoder.write_all(&value.to_le_bytes()).unwrap();
        }
        base64::engine::general_purpose::STANDARD.encode(encoder.finish().unwrap())
    };
    built_mzml_with_binaries(
        chromatogram_type,
        &zlib_base64(times),
        &zlib_base64(intensities),
        times.len(),
    )
}

fn built_mzml_with_binaries(
    chromatogram_type: &str,
    times: &str,
    intensities: &str,
    length: usize,
) -> String {
    let window = |mz: &str| {
        format!(
            r#"<isolationWindow><cvParam cvRef="MS" accession="MS:1000827" name="isolation window target m/z" value="{mz}" unitAccession="MS:1000040" unitName="m/z" unitCvRef="MS"/></isolationWindow>"#
        )
    };
    let array = |accession: &str, name: &str, unit: &str, binary: &str| {
        format!(
            r#"<binaryDataArray encodedLength="{}"><cvParam cvRef="MS" accession="{accession}" name="{name}" {unit}/><cvParam cvRef="MS" accession="MS:1000523" name="64-bit float"/><cvParam cvRef="MS" accession="MS:1000574" name="zlib compression"/><binary>{binary}</binary></binaryDataArray>"#,
            binary.len()
        )
    };
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
<cvList count="2"><cv id="MS" fullName="PSI-MS" URI="x"/><cv id="UO" fullName="Unit Ontology" URI="y"/></cvList>
<fileDescription><fileContent><cvParam cvRef="MS" accession="MS:1001473" name="selected reaction monitoring chromatogram"/></fileContent></fileDescription>
<sampleList count="1"><sample id="s1" name="LAB-24-000042"><cvParam cvRef="MS" accession="MS:1000004" name="sample mass" value="0"/></sample></sampleList>
<softwareList count="1"><software id="xcalibur" version="4.5"><cvParam cvRef="MS" accession="MS:1000532" name="Xcalibur"/></software></softwareList>
<instrumentConfigurationList count="1"><instrumentConfiguration id="ic1"><cvParam cvRef="MS" accession="MS:1001911" name="Q Exactive"/><softwareRef ref="xcalibur"/></instrumentConfiguration></instrumentConfigurationList>
<dataProcessingList count="1"><dataProcessing id="dp"><processingMethod order="0" softwareRef="xcalibur"><cvParam cvRef="MS" accession="MS:1000544" name="Conversion to mzML"/></processingMethod></dataProcessing></dataProcessingList>
<run id="run-7" defaultInstrumentConfigurationRef="ic1" startTimeStamp="2024-05-14T09:32:11+02:00">
<chromatogramList count="1" defaultDataProcessingRef="dp">
<chromatogram id="caffeine 195>138" index="0" defaultArrayLength="{length}">
{chromatogram_type}
<userParam name="compound name" type="xsd:string" value="Caffeine"/>
<precursor>{}</precursor><product>{}</product>
<binaryDataArrayList count="2">{}{}</binaryDataArrayList>
</chromatogram>
</chromatogramList>
</run>
</mzML>
"#,
        window("195.0877"),
        window("138.0662"),
        array(
            "MS:1000595",
            "time array",
            r#"unitAccession="UO:0000031" unitName="minute" unitCvRef="UO""#,
            times
        ),
        array(
            "MS:1000515",
            "intensity array",
            r#"unitAccession="MS:1000131" unitName="number of detector counts" unitCvRef="MS""#,
            intensities
        ),
    )
}

const SRM: &str =
    r#"<cvParam cvRef="MS" accession="MS:1001473" name="selected reaction monitoring chromatogram"/>"#;
const TIC: &str = r#"<cvParam cvRef="MS" accession="MS:1000235" name="total ion current chromatogram"/>"#;

#[test]
fn a_named_srm_chromatogram_with_zlib_arrays_in_minutes_is_integrated_by_trapezoids() {
    // By hand: apex at 2.0 min; area = (0+10)/2 + (10+30)/2 + (30+10)/2 + (10+0)/2 = 50.
    let document = built_mzml(SRM, &[0.0, 1.0, 2.0, 3.0, 4.0], &[0.0, 10.0, 30.0, 10.0, 0.0]);
    let parsed = parse(Format::Mzml, document.as_bytes()).unwrap();
    assert_eq!(parsed.run_identifier.as_deref(), Some("run-7"));
    assert_eq!(parsed.sample_identifier.as_deref(), Some("LAB-24-000042"));
    assert_eq!(parsed.instrument_name.as_deref(), Some("Q Exactive"));
    assert_eq!(
        parsed.acquired_at,
        Some(Utc.with_ymd_and_hms(2024, 5, 14, 7, 32, 11).unwrap())
    );
    let mut expected = Measurement::new("Caffeine", MeasurementKind::SrmTransition);
    expected.retention_time_min = Some(2.0);
    expected.precursor_mz = Some(195.0877);
    expected.product_mz = Some(138.0662);
    expected.response = Some(50.0);
    expected.response_unit = Some("counts*min".to_owned());
    expected.source_ref = Some("caffeine 195>138".to_owned());
    assert_eq!(parsed.measurements, [expected]);
}

#[test]
fn total_ion_current_chromatograms_are_skipped() {
    let document = built_mzml(TIC, &[0.0, 1.0], &[5.0, 5.0]);
    assert_eq!(parse(Format::Mzml, document.as_bytes()).unwrap().measurements, []);
}

#[test]
fn corrupt_zlib_and_inflation_bombs_are_errors_not_panics() {
    let garbage = base64::engine::general_purpose::STANDARD.encode(b"this is not a zlib stream at all");
    let document = built_mzml_with_binaries(SRM, &garbage, &garbage, 4);
    let error = parse(Format::Mzml, document.as_bytes()).unwrap_err();
    assert!(error.message().contains("corrupt zlib stream"), "{error}");

    // 48 MB of zeros inflate past MAX_TRACE_POINTS (5 M points × 8 bytes).
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&vec![0_u8; 48 << 20]).unwrap();
    let bomb = base64::engine::general_purpose::STANDARD.encode(encoder.finish().unwrap());
    let document = built_mzml_with_binaries(SRM, &bomb, &bomb, 4);
    let error = parse(Format::Mzml, document.as_bytes()).unwrap_err();
    assert!(error.message().contains("more than 5000000 points"), "{error}");
}

/// Deterministic xorshift, so a failing mutation can be replayed.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The message of the panic backstop in [`parse`].
const BACKSTOP: &str = "the reader failed on this file";

/// Parses every `cut_step`-th cut of `file` and 300 mutations of 1 to 4 bytes: each must return
/// (Ok or a ParseError) rather than unwind. Cuts must never reach the panic backstop; mutations
/// may only where `mutations_may_reach_backstop` (mzdata unwraps well-formed but wrong content,
/// e.g. a cvParam value that is not a number, a cvParam without an accession); returns how many
/// did.
fn assert_survives_damage(
    format: Format,
    file: &[u8],
    cut_step: usize,
    mutations_may_reach_backstop: bool,
) -> usize {
    for length in (0..file.len()).step_by(cut_step) {
        if let Err(error) = parse(format, &file[..length]) {
            assert_ne!(
                error.message(),
                BACKSTOP,
                "{format} cut at {length} reached a panic"
            );
        }
    }
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut backstopped = 0;
    for round in 0..300 {
        let mut damaged = file.to_vec();
        for _ in 0..1 + round % 4 {
            let at = next(&mut state) as usize % damaged.len();
            damaged[at] = next(&mut state) as u8;
        }
        if parse(format, &damaged).is_err_and(|error| error.message() == BACKSTOP) {
            assert!(
                mutations_may_reach_backstop,
                "{format} mutation round {round} reached a panic"
            );
            backstopped += 1;
        }
    }
    backstopped
}

#[test]
fn truncated_and_mutated_files_give_parse_errors_without_panicking() {
    assert_survives_damage(Format::AndiNetcdf, ANDI_CHROM_VALID, 1, false);
    assert_survives_damage(Format::VendorCsv, QUANT_REPORT_CSV, 1, false);
    let backstopped = assert_survives_damage(Format::Mzml, MINI_CHROM_MZML, 53, true);
    // Most mutations are caught by the scan's checks or by mzdata's own errors.
    assert!(
        backstopped < 30,
        "{backstopped} of 300 mzML mutations reached the backstop"
    );
    for format in Format::ALL {
        assert!(parse(format, b"").is_err());
        assert!(parse(format, b"\x00\x01garbage\xff").is_err());
    }
    let half = parse(Format::Mzml, &MINI_CHROM_MZML[..MINI_CHROM_MZML.len() / 2]).unwrap_err();
    assert!(
        half.message().starts_with("malformed XML near byte 12402"),
        "{half}"
    );
    let text = std::str::from_utf8(MINI_CHROM_MZML).unwrap();
    let before_run_end = &text[..text.find("</run>").unwrap()];
    let error = parse(Format::Mzml, before_run_end.as_bytes()).unwrap_err();
    assert_eq!(error.message(), "truncated: 2 elements are not closed");
}

#[test]
fn format_names_round_trip_and_unknown_names_are_none() {
    for format in Format::ALL {
        assert_eq!(Format::from_name(format.name()), Some(format));
    }
    assert_eq!(Format::from_name("mzML"), None);
    for kind in [
        MeasurementKind::ChromatographicPeak,
        MeasurementKind::SrmTransition,
    ] {
        assert_eq!(MeasurementKind::from_name(kind.name()), Some(kind));
    }
    assert_eq!(MeasurementKind::from_name("peak"), None);
}

#[test]
fn detection_falls_back_on_the_extension_when_the_content_says_nothing() {
    assert_eq!(Format::detect("run.mzML", b""), Some(Format::Mzml));
    assert_eq!(Format::detect("RUN.CDF", b"????"), Some(Format::AndiNetcdf));
    assert_eq!(Format::detect("run.nc", b""), Some(Format::AndiNetcdf));
    assert_eq!(Format::detect("batch.CSV", b"\x00\x01"), Some(Format::VendorCsv));
    assert_eq!(Format::detect("notes.txt", b"hello"), None);
    assert_eq!(Format::detect("no-extension", b""), None);
}

#[test]
fn plain_decimals_are_recognised_and_other_text_is_not() {
    for text in ["12", "-0.50", "+3.0", ".5", "0.0050", "12."] {
        assert!(is_plain_decimal(text), "{text}");
    }
    for text in ["", ".", "-", "1e3", "1,000", "ND", "<0.5", "1.2.3", " 1"] {
        assert!(!is_plain_decimal(text), "{text}");
    }
}

#[test]
fn parser_versions_name_the_rules_and_the_reader() {
    assert_eq!(parser_version(Format::Mzml), "lab-formats/1 mzdata/0.68");
    assert_eq!(parser_version(Format::AndiNetcdf), "lab-formats/1 netcdf3/0.6");
    assert_eq!(parser_version(Format::VendorCsv), "lab-formats/1 csv/1");
}
