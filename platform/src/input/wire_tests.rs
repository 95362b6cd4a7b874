use super::*;
use proto::orders::{CreateOrderRequest, GetOrderRequest, SampleMetadata};

fn schema() -> Schema {
    Schema::from_descriptor_set(proto::FILE_DESCRIPTOR_SET).expect("the mesh's descriptors decode")
}

fn refused_field(schema: &Schema, type_name: &str, bytes: &[u8]) -> Option<(String, Flaw)> {
    match schema.check(type_name, bytes) {
        Ok(()) => None,
        Err(Problem::Refused { field, flaw }) => Some((field, flaw)),
        Err(Problem::Malformed) => panic!("malformed"),
    }
}

#[test]
fn every_unary_method_of_the_mesh_has_its_input_type() {
    let schema = schema();
    assert_eq!(
        schema.unary_input("/lab.orders.v1.OrdersService/GetOrder"),
        Some(".lab.orders.v1.GetOrderRequest")
    );
    assert_eq!(
        schema.unary_input("/lab.payments.v1.PaymentsService/RecordBankPayment"),
        Some(".lab.payments.v1.RecordBankPaymentRequest")
    );
    assert_eq!(schema.unary_input("/grpc.health.v1.Health/Check"), None);
}

#[test]
fn strings_are_checked_at_every_depth_with_the_rule_of_their_field() {
    let schema = schema();
    let get = GetOrderRequest {
        reference: "ORD-\u{0}".into(),
    }
    .encode_to_vec();
    assert_eq!(
        refused_field(&schema, ".lab.orders.v1.GetOrderRequest", &get),
        Some(("reference".into(), Flaw::ControlCharacter))
    );
    let metadata = |lot: &str, notes: &str| SampleMetadata {
        compound_name: "BPC-157".into(),
        lot_number: Some(lot.into()),
        matrix_notes: Some(notes.into()),
    };
    let mut order = CreateOrderRequest {
        quote_id: "q".into(),
        notes: Some("line one\nline two\ttabbed\r\n".into()),
        sample_metadata: vec![metadata("L1", "ok\n"), metadata("L2", "fine")],
        ..Default::default()
    };
    let create = ".lab.orders.v1.CreateOrderRequest";
    assert_eq!(refused_field(&schema, create, &order.encode_to_vec()), None);
    order.sample_metadata[1] = metadata("L\u{85}2", "fine");
    assert_eq!(
        refused_field(&schema, create, &order.encode_to_vec()),
        Some(("sampleMetadata[1].lotNumber".into(), Flaw::ControlCharacter))
    );
    order.sample_metadata[1] = metadata("L2", "nul \u{0}");
    assert_eq!(
        refused_field(&schema, create, &order.encode_to_vec()),
        Some(("sampleMetadata[1].matrixNotes".into(), Flaw::ControlCharacter))
    );
    order.sample_metadata.clear();
    order.notes = Some("bell \u{7}".into());
    assert_eq!(
        refused_field(&schema, create, &order.encode_to_vec()),
        Some(("notes".into(), Flaw::ControlCharacter))
    );
}

#[test]
fn invalid_utf8_is_refused_and_broken_messages_are_left_to_the_decoder() {
    let schema = schema();
    let get = ".lab.orders.v1.GetOrderRequest";
    // Field 1 (reference), length-delimited, two bytes that are not UTF-8.
    assert_eq!(
        refused_field(&schema, get, &[0x0a, 0x02, 0xff, 0xfe]),
        Some(("reference".into(), Flaw::InvalidEncoding))
    );
    assert_eq!(schema.check(get, &[0x0a, 0x05, b'a']), Err(Problem::Malformed));
    assert_eq!(schema.check(get, &[0x0b]), Err(Problem::Malformed));
    // Unknown fields and other wire types are skipped.
    assert_eq!(schema.check(get, &[0x10, 0x96, 0x01, 0x1a, 0x01, 0x00]), Ok(()));
}

#[test]
fn json_names_default_to_camel_case() {
    assert_eq!(camel_case("sample_metadata"), "sampleMetadata");
    assert_eq!(camel_case("reference"), "reference");
}
