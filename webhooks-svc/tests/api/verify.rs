//! Signature verification exactly as a customer does it: recompute the HMAC over the raw body,
//! check the timestamp tolerance, and also run PyPI stripe's verifier when it is installed.

use hmac::{Hmac, Mac};
use platform::test_receiver::RecordedRequest;
use sha2::Sha256;
use std::sync::OnceLock;

/// Tolerance we recommend to receivers.
pub const TOLERANCE_SECS: i64 = 300;

/// The `t` and every `v1` of a signature header.
pub fn parse_header(header: &str) -> (i64, Vec<String>) {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value.to_owned()),
            _ => {}
        }
    }
    (timestamp.expect("a t= part"), signatures)
}

/// True when `secret` signed `request` (within the tolerance).
pub fn signed_by(request: &RecordedRequest, secret: &str) -> bool {
    let (timestamp, signatures) = parse_header(&request.header("x-svc-signature"));
    if (chrono::Utc::now().timestamp() - timestamp).abs() > TOLERANCE_SECS {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(&request.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    signatures.iter().any(|signature| signature == &expected)
}

/// Asserts that every request verifies with `secret`, by our check and by stripe's.
pub fn assert_verified(requests: &[RecordedRequest], secret: &str) {
    for request in requests {
        assert!(
            signed_by(request, secret),
            "signature {} does not verify",
            request.header("x-svc-signature")
        );
        assert_eq!(request.header("content-type"), "application/json");
        assert_eq!(request.header("user-agent"), "lab-webhooks/1");
        let body: serde_json::Value = serde_json::from_slice(&request.body).expect("JSON body");
        assert_eq!(body["id"], request.header("x-svc-event-id"));
        assert_eq!(body["type"], request.header("x-svc-event-type"));
        assert_eq!(body["apiVersion"], "2026-07-17");
        assert!(!request.header("x-svc-delivery-id").is_empty());
    }
    let cases: Vec<(Vec<u8>, String, String)> = requests
        .iter()
        .map(|request| {
            (
                request.body.clone(),
                request.header("x-svc-signature"),
                secret.to_owned(),
            )
        })
        .collect();
    stripe_verifies(&cases);
}

fn stripe_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let available = std::process::Command::new("python3")
            .args(["-c", "import stripe"])
            .output()
            .is_ok_and(|output| output.status.success());
        // The README's test command installs stripe and sets LAB_REQUIRE_PYTHON_TOOLS, so in CI
        // this check can never be skipped silently.
        if !available && std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_some() {
            panic!("LAB_REQUIRE_PYTHON_TOOLS is set but `python3 -c 'import stripe'` fails");
        }
        if !available {
            println!("note: PyPI stripe is not installed; skipping the stripe verifier sub-check");
        }
        available
    })
}

/// Runs `stripe.WebhookSignature.verify_header(body, header, secret, 300)` on every case.
pub fn stripe_verifies(cases: &[(Vec<u8>, String, String)]) {
    if cases.is_empty() || !stripe_available() {
        return;
    }
    use base64::Engine;
    let lines: Vec<String> = cases
        .iter()
        .map(|(body, header, secret)| {
            serde_json::json!({
                "body": base64::engine::general_purpose::STANDARD.encode(body),
                "header": header,
                "secret": secret,
            })
            .to_string()
        })
        .collect();
    let path = std::env::temp_dir().join(format!("stripe-cases-{}.jsonl", uuid::Uuid::new_v4()));
    std::fs::write(&path, lines.join("\n")).unwrap();
    let script = "import base64, json, sys, stripe\n\
                  n = 0\n\
                  for line in open(sys.argv[1]):\n\
                  \x20   case = json.loads(line)\n\
                  \x20   stripe.WebhookSignature.verify_header(base64.b64decode(case['body']), case['header'], case['secret'], 300)\n\
                  \x20   n += 1\n\
                  print(n)\n";
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("run python3");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "stripe's verifier refused a delivery: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        cases.len().to_string()
    );
}
