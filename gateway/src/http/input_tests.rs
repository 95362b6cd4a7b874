use super::*;

fn field(result: Result<(), ApiError>) -> String {
    let error = result.unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    error.details.unwrap()["field"].as_str().unwrap().to_owned()
}

#[test]
fn path_parameters_are_strictly_decoded_and_named() {
    let template = "/api/v1/agent/orders/{reference}";
    assert!(check_path(template, "/orders/ORD-2026-000001").is_ok());
    assert!(check_path(template, "/orders/caf%C3%A9%20%2F").is_ok());
    for raw in ["ORD-%00", "%01", "%7F", "%7f", "%C2%85", "%FF", "%zz", "%4", "%"] {
        assert_eq!(
            field(check_path(template, &format!("/orders/{raw}"))),
            "path.reference",
            "{raw}"
        );
    }
    let deliveries = "/api/v1/agent/webhooks/{endpointId}/deliveries";
    assert_eq!(
        field(check_path(deliveries, "/webhooks/%09/deliveries")),
        "path.endpointId"
    );
}

#[test]
fn query_values_and_names_are_strictly_decoded_and_named() {
    assert!(check_query("").is_ok());
    assert!(check_query("query=pep+tide&limit=5&&include=all").is_ok());
    assert!(check_query("query=%C3%A9t%C3%A9").is_ok());
    for raw in ["%00", "a%1Fb", "%7F", "%C2%85", "%FF", "%g0", "tab%09"] {
        assert_eq!(
            field(check_query(&format!("limit=5&query={raw}"))),
            "query.query",
            "{raw}"
        );
    }
    assert_eq!(field(check_query("stat%00us=paid")), "query");
    assert_eq!(field(check_query("%FF=1")), "query");
}

#[test]
fn json_bodies_are_walked_and_unparsable_ones_left_to_the_extractor() {
    let body = |text: &str| Bytes::from(text.to_owned());
    assert!(check_body(&body("")).is_ok());
    assert!(check_body(&body("{not json")).is_ok());
    assert!(check_body(&body(r#"{"notes":"a\nb\tc"}"#)).is_ok());
    assert_eq!(field(check_body(&body(r#"{"notes":"a\u0000"}"#))), "body.notes");
    assert_eq!(
        field(check_body(&body(r#"{"sampleMetadata":[{"lotNumber":"L\t1"}]}"#))),
        "body.sampleMetadata[0].lotNumber"
    );
}

#[test]
fn percent_decoding_turns_plus_into_space_only_in_queries() {
    assert_eq!(percent_decode("a+b%2B", true).unwrap(), b"a b+");
    assert_eq!(percent_decode("a+b", false).unwrap(), b"a+b");
    assert_eq!(percent_decode("%e2%82%AC", false).unwrap(), "€".as_bytes());
}

#[test]
fn a_percent_sign_without_two_hex_digits_is_refused_wherever_it_stands() {
    for raw in ["%", "a%", "%4", "%4g", "%%41", "a%2", "%41%"] {
        assert_eq!(percent_decode(raw, true), Err(Flaw::InvalidEncoding), "{raw}");
    }
    assert_eq!(percent_decode("%25%41", false).unwrap(), b"%A");
    assert_eq!(percent_decode("%2b+", true).unwrap(), b"+ ");
}
