//! The instrument and method registries over gRPC: the seeded lab is listed with its linked
//! equipment, filters and pages, QA's upserts (with the method version rule), calibration and
//! status steps, who may call what, and the refusal of invalid input naming the field.

use crate::helpers::*;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::outgoing;
use platform::principal::roles;
use proto::results as pb;
use proto::scopes::{CATALOG_READ, RESULTS_READ};
use uuid::Uuid;

fn answer<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Result<T, ApiError> {
    result
        .map(tonic::Response::into_inner)
        .map_err(|status| ApiError::from_status(&status))
}

fn field(error: &ApiError) -> String {
    error.details.as_ref().unwrap()["field"]
        .as_str()
        .unwrap()
        .to_owned()
}

impl TestApp {
    fn reader(&self) -> String {
        self.keys.customer(Uuid::new_v4(), &[CATALOG_READ])
    }

    async fn instruments(
        &self,
        token: &str,
        request: pb::ListInstrumentsRequest,
    ) -> Result<pb::ListInstrumentsResponse, ApiError> {
        answer(
            self.registry
                .clone()
                .list_instruments(outgoing(request, token))
                .await,
        )
    }

    async fn methods(
        &self,
        token: &str,
        request: pb::ListMethodsRequest,
    ) -> Result<pb::ListMethodsResponse, ApiError> {
        answer(self.registry.clone().list_methods(outgoing(request, token)).await)
    }

    async fn upsert_method(
        &self,
        token: &str,
        request: pb::UpsertMethodRequest,
    ) -> Result<pb::MethodResponse, ApiError> {
        answer(
            self.registry
                .clone()
                .upsert_method(outgoing(request, token))
                .await,
        )
    }

    async fn upsert_instrument(
        &self,
        token: &str,
        request: pb::UpsertInstrumentRequest,
    ) -> Result<pb::InstrumentResponse, ApiError> {
        answer(
            self.registry
                .clone()
                .upsert_instrument(outgoing(request, token))
                .await,
        )
    }

    async fn calibrate(
        &self,
        token: &str,
        request: pb::RecordCalibrationRequest,
    ) -> Result<pb::InstrumentResponse, ApiError> {
        answer(
            self.registry
                .clone()
                .record_calibration(outgoing(request, token))
                .await,
        )
    }
}

fn analyte(name: &str, unit: &str, loq: &str, lod: &str) -> pb::MethodAnalyte {
    pb::MethodAnalyte {
        name: name.into(),
        unit: unit.into(),
        loq: Some(loq.into()),
        lod: Some(lod.into()),
    }
}

fn new_method() -> pb::UpsertMethodRequest {
    pb::UpsertMethodRequest {
        id: "icpms-botanical-metals".into(),
        name: "Heavy metals in botanicals by ICP-MS".into(),
        technique: "icp-ms".into(),
        instrument_kinds: vec!["icp-ms".into()],
        matrices: vec!["dried-plant-material".into()],
        test_ids: vec!["heavy-metals-icpms".into()],
        analytes: vec![
            analyte("Lead (Pb)", "ppm", "0.05", "0.015"),
            analyte("Arsenic (As)", "ppm", "0.05", "0.015"),
        ],
        validation_status: "in_validation".into(),
        validated_at: None,
        reference: "USP <233>".into(),
        description: None,
    }
}

fn new_instrument() -> pb::UpsertInstrumentRequest {
    pb::UpsertInstrumentRequest {
        id: "hplc-uv-03".into(),
        name: "HPLC-UV 03".into(),
        kind: "hplc-uv".into(),
        manufacturer: "Agilent Technologies".into(),
        model: "1290 Infinity II".into(),
        serial_number: Some("DEAEX09911".into()),
        location: "Chromatography lab, bench 3".into(),
        equipment: vec![pb::Equipment {
            id: "hplc-uv-03-col-c18".into(),
            kind: "column".into(),
            description: "Waters XBridge Peptide BEH C18, 4.6 x 150 mm".into(),
            serial_number: None,
        }],
    }
}

#[tokio::test]
async fn the_seeded_lab_is_listed_with_linked_equipment_and_published_limits() {
    let app = spawn_app().await;
    let all = pb::ListInstrumentsRequest {
        limit: Some(200),
        ..Default::default()
    };
    let listed = app.instruments(&app.reader(), all).await.unwrap();
    let ids: Vec<&str> = listed.instruments.iter().map(|i| i.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "pages are in id order");
    for kind in [
        "hplc-uv",
        "lc-ms-ms",
        "gc-ms-headspace",
        "icp-ms",
        "nmr",
        "karl-fischer",
        "lal-kinetic-reader",
        "incubator",
    ] {
        assert!(listed.instruments.iter().any(|i| i.kind == kind), "{kind}");
    }
    assert!(
        listed.instruments.iter().all(|i| !i.equipment.is_empty()),
        "every instrument lists equipment"
    );
    let hplc = listed.instruments.iter().find(|i| i.id == "hplc-uv-01").unwrap();
    assert_eq!(hplc.status, "in_service");
    assert!(
        hplc.equipment
            .iter()
            .any(|e| e.kind == "column" && e.description.contains("C18"))
    );
    assert_eq!(
        hplc.equipment[0].id, "hplc-uv-01-pump",
        "equipment keeps QA's order"
    );
    // Past its due date and out of service: read as overdue without anyone recording it.
    let backup = listed.instruments.iter().find(|i| i.id == "gcms-hs-02").unwrap();
    assert_eq!(
        (backup.status.as_str(), backup.calibration_status.as_str()),
        ("out_of_service", "overdue")
    );
    assert!(backup.status_reason.is_some());

    let metals = answer(
        app.registry
            .clone()
            .get_method(outgoing(
                pb::GetMethodRequest {
                    id: "icpms-elemental-impurities".into(),
                },
                &app.reader(),
            ))
            .await,
    )
    .unwrap()
    .method
    .unwrap();
    let names: Vec<&str> = metals.analytes.iter().map(|a| a.name.as_str()).collect();
    // The names COA rows print.
    assert_eq!(
        names,
        ["Lead (Pb)", "Arsenic (As)", "Cadmium (Cd)", "Mercury (Hg)"]
    );
    assert_eq!(
        (
            metals.analytes[0].loq.as_deref(),
            metals.analytes[0].unit.as_str()
        ),
        (Some("0.05"), "ppm")
    );
    assert_eq!(
        (metals.version, metals.validation_status.as_str()),
        (4, "validated")
    );
    assert!(metals.reference.contains("USP <232>/<233>"));
}

#[tokio::test]
async fn instrument_and_method_filters_narrow_the_listing() {
    let app = spawn_app().await;
    let reader = app.reader();
    let instrument_ids = |response: pb::ListInstrumentsResponse| -> Vec<String> {
        response.instruments.into_iter().map(|i| i.id).collect()
    };
    let icp = pb::ListInstrumentsRequest {
        kind: Some("icp-ms".into()),
        ..Default::default()
    };
    assert_eq!(
        instrument_ids(app.instruments(&reader, icp).await.unwrap()),
        ["icpms-01"]
    );
    let retired = pb::ListInstrumentsRequest {
        status: Some("retired".into()),
        ..Default::default()
    };
    assert_eq!(
        instrument_ids(app.instruments(&reader, retired).await.unwrap()),
        ["hplc-uv-00"]
    );

    let method_ids = |response: pb::ListMethodsResponse| -> Vec<String> {
        response.methods.into_iter().map(|m| m.id).collect()
    };
    let lead = pb::ListMethodsRequest {
        analyte: Some("lead".into()),
        ..Default::default()
    };
    assert_eq!(
        method_ids(app.methods(&reader, lead).await.unwrap()),
        ["icpms-elemental-impurities"]
    );
    let softgel_micro = pb::ListMethodsRequest {
        matrix: Some("softgel".into()),
        technique: Some("microbiology-plate-count".into()),
        ..Default::default()
    };
    assert_eq!(
        method_ids(app.methods(&reader, softgel_micro).await.unwrap()),
        ["micro-enumeration"]
    );
    let withdrawn = pb::ListMethodsRequest {
        validation_status: Some("withdrawn".into()),
        ..Default::default()
    };
    let withdrawn = app.methods(&reader, withdrawn).await.unwrap();
    assert_eq!(withdrawn.methods[0].id, "hplc-uv-purity-legacy");
    assert_eq!(withdrawn.methods[0].validation_status, "withdrawn");
    let purity = pb::ListMethodsRequest {
        analyte: Some("Purity".into()),
        ..Default::default()
    };
    assert_eq!(
        method_ids(app.methods(&reader, purity).await.unwrap()),
        ["hplc-uv-purity", "hplc-uv-purity-legacy"],
        "a withdrawn method stays listed"
    );
}

#[tokio::test]
async fn pages_follow_the_cursor_through_the_whole_registry() {
    let app = spawn_app().await;
    let reader = app.reader();
    let everything = app
        .methods(
            &reader,
            pb::ListMethodsRequest {
                limit: Some(200),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(everything.next_cursor, None);
    let mut walked = Vec::new();
    let mut cursor = None;
    loop {
        let page = pb::ListMethodsRequest {
            limit: Some(5),
            cursor: cursor.clone(),
            ..Default::default()
        };
        let page = app.methods(&reader, page).await.unwrap();
        assert!(page.methods.len() <= 5);
        walked.extend(page.methods.into_iter().map(|m| m.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let all: Vec<String> = everything.methods.into_iter().map(|m| m.id).collect();
    assert!(all.len() > 10, "{all:?}");
    assert_eq!(walked, all);
    // A methods cursor is not an instruments cursor.
    let first = app
        .methods(
            &reader,
            pb::ListMethodsRequest {
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let foreign = pb::ListInstrumentsRequest {
        limit: Some(5),
        cursor: first.next_cursor,
        ..Default::default()
    };
    assert_eq!(
        app.instruments(&reader, foreign).await.unwrap_err().code,
        ErrorCode::InvalidCursor
    );
}

#[tokio::test]
async fn an_upserted_method_is_created_at_version_one_and_bumped_when_its_analytes_or_matrices_change() {
    let app = spawn_app().await;
    let qa = app.qa();
    let created = app.upsert_method(&qa, new_method()).await.unwrap();
    let method = created.method.unwrap();
    assert!(created.created);
    assert_eq!(
        (
            method.version,
            method.validation_status.as_str(),
            method.validated_at
        ),
        (1, "in_validation", None)
    );

    // Wording and status only: same version; validated now.
    let validated = pb::UpsertMethodRequest {
        name: "Heavy metals (Pb, As) in botanicals by ICP-MS".into(),
        validation_status: "validated".into(),
        ..new_method()
    };
    let updated = app.upsert_method(&qa, validated.clone()).await.unwrap();
    let method = updated.method.unwrap();
    assert!(!updated.created);
    assert_eq!(
        (method.version, method.validation_status.as_str()),
        (1, "validated")
    );
    assert!(method.validated_at.is_some());

    let mut tighter = validated.clone();
    tighter.analytes[0].loq = Some("0.02".into());
    tighter.analytes[0].lod = Some("0.006".into());
    let method = app
        .upsert_method(&qa, tighter.clone())
        .await
        .unwrap()
        .method
        .unwrap();
    assert_eq!(method.version, 2);
    assert_eq!(method.analytes[0].loq.as_deref(), Some("0.02"));

    let wider = pb::UpsertMethodRequest {
        matrices: vec!["dried-plant-material".into(), "extract-tincture".into()],
        ..tighter.clone()
    };
    assert_eq!(
        app.upsert_method(&qa, wider.clone())
            .await
            .unwrap()
            .method
            .unwrap()
            .version,
        3
    );

    // Withdrawn: listed with its status, the version unchanged.
    let withdrawn = pb::UpsertMethodRequest {
        validation_status: "withdrawn".into(),
        ..wider
    };
    assert_eq!(
        app.upsert_method(&qa, withdrawn)
            .await
            .unwrap()
            .method
            .unwrap()
            .version,
        3
    );
    let listed = app
        .methods(
            &app.reader(),
            pb::ListMethodsRequest {
                technique: Some("icp-ms".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let ours = listed
        .methods
        .iter()
        .find(|m| m.id == "icpms-botanical-metals")
        .unwrap();
    assert_eq!((ours.validation_status.as_str(), ours.version), ("withdrawn", 3));
}

#[tokio::test]
async fn recording_a_calibration_changes_the_derived_calibration_status() {
    let app = spawn_app().await;
    let qa = app.qa();
    let created = app.upsert_instrument(&qa, new_instrument()).await.unwrap();
    let instrument = created.instrument.unwrap();
    assert!(created.created);
    assert_eq!(
        (instrument.status.as_str(), instrument.calibration_status.as_str()),
        ("in_service", "due")
    );
    assert_eq!(instrument.equipment.len(), 1);

    let now = platform::time::now();
    let calibration = pb::RecordCalibrationRequest {
        id: "hplc-uv-03".into(),
        calibrated_at: None,
        due_at: Some(platform::time::to_timestamp(now + chrono::Duration::days(180))),
        status: None,
        certificate: Some("PQ-2026-1128-HPLC03".into()),
    };
    let instrument = app
        .calibrate(&qa, calibration.clone())
        .await
        .unwrap()
        .instrument
        .unwrap();
    assert_eq!(instrument.calibration_status, "calibrated");
    assert!(instrument.last_calibrated_at.is_some());
    assert_eq!(
        instrument.calibration_certificate.as_deref(),
        Some("PQ-2026-1128-HPLC03")
    );

    // Calibrated half a year ago, due in ten days: due.
    let nearly_due = pb::RecordCalibrationRequest {
        calibrated_at: Some(platform::time::to_timestamp(now - chrono::Duration::days(170))),
        due_at: Some(platform::time::to_timestamp(now + chrono::Duration::days(10))),
        ..calibration.clone()
    };
    let instrument = app.calibrate(&qa, nearly_due).await.unwrap().instrument.unwrap();
    assert_eq!(instrument.calibration_status, "due");

    // A recorded failed check stays visible despite a future due date.
    let drift = pb::RecordCalibrationRequest {
        status: Some("overdue".into()),
        ..calibration.clone()
    };
    assert_eq!(
        app.calibrate(&qa, drift)
            .await
            .unwrap()
            .instrument
            .unwrap()
            .calibration_status,
        "overdue"
    );

    let status = pb::SetInstrumentStatusRequest {
        id: "hplc-uv-03".into(),
        status: "out_of_service".into(),
        reason: Some("detector lamp replacement".into()),
    };
    let instrument = answer(
        app.registry
            .clone()
            .set_instrument_status(outgoing(status, &qa))
            .await,
    )
    .unwrap()
    .instrument
    .unwrap();
    assert_eq!(
        (instrument.status.as_str(), instrument.status_reason.as_deref()),
        ("out_of_service", Some("detector lamp replacement"))
    );

    // The equipment list is replaced by the next upsert.
    let mut moved = new_instrument();
    moved.equipment[0].id = "hplc-uv-03-col-biphenyl".into();
    let instrument = app
        .upsert_instrument(&qa, moved)
        .await
        .unwrap()
        .instrument
        .unwrap();
    let equipment: Vec<&str> = instrument.equipment.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(equipment, ["hplc-uv-03-col-biphenyl"]);
    assert_eq!(instrument.status, "out_of_service", "an upsert keeps the status");

    let missing = pb::RecordCalibrationRequest {
        id: "no-such-instrument".into(),
        ..calibration
    };
    assert_eq!(
        app.calibrate(&qa, missing).await.unwrap_err().code,
        ErrorCode::NotFound
    );
}

#[tokio::test]
async fn maintenance_is_for_qa_and_reading_needs_catalog_read_or_an_operator() {
    let app = spawn_app().await;
    let customer = app.reader();
    let refused = app.upsert_method(&customer, new_method()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    let analyst = app.analyst();
    let refused = app
        .upsert_instrument(&analyst, new_instrument())
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(refused.message.contains("lab.qa"), "{}", refused.message);

    let results_only = app.keys.customer(Uuid::new_v4(), &[RESULTS_READ]);
    let refused = app
        .instruments(&results_only, Default::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InsufficientScope);
    let operator = app.operator("olga", roles::LAB_TECHNICIAN);
    assert!(
        !app.methods(&operator, Default::default())
            .await
            .unwrap()
            .methods
            .is_empty()
    );
}

#[tokio::test]
async fn invalid_input_is_refused_naming_the_field() {
    let app = spawn_app().await;
    let (qa, reader) = (app.qa(), app.reader());
    let bad_status = pb::ListInstrumentsRequest {
        status: Some("broken".into()),
        ..Default::default()
    };
    let error = app.instruments(&reader, bad_status).await.unwrap_err();
    assert_eq!(
        (error.code, field(&error)),
        (ErrorCode::InvalidRequest, "status".to_owned())
    );
    assert_eq!(error.details.unwrap()["allowed"][0], "in_service");
    let bad_limit = pb::ListMethodsRequest {
        limit: Some(0),
        ..Default::default()
    };
    assert_eq!(
        field(&app.methods(&reader, bad_limit).await.unwrap_err()),
        "limit"
    );
    let bad_validation = pb::ListMethodsRequest {
        validation_status: Some("approved".into()),
        ..Default::default()
    };
    assert_eq!(
        field(&app.methods(&reader, bad_validation).await.unwrap_err()),
        "validationStatus"
    );

    let bad_id = pb::UpsertMethodRequest {
        id: "ICP MS".into(),
        ..new_method()
    };
    assert_eq!(field(&app.upsert_method(&qa, bad_id).await.unwrap_err()), "id");
    let mut inverted = new_method();
    inverted.analytes[1].lod = Some("0.5".into());
    let error = app.upsert_method(&qa, inverted).await.unwrap_err();
    assert_eq!(
        (error.code, field(&error)),
        (ErrorCode::InvalidRequest, "analytes[1].lod".to_owned())
    );
    let no_due = pb::RecordCalibrationRequest {
        id: "icpms-01".into(),
        ..Default::default()
    };
    assert_eq!(field(&app.calibrate(&qa, no_due).await.unwrap_err()), "dueAt");
    let mut twice = new_instrument();
    twice.equipment.push(twice.equipment[0].clone());
    assert_eq!(
        field(&app.upsert_instrument(&qa, twice).await.unwrap_err()),
        "equipment[1].id"
    );
}
