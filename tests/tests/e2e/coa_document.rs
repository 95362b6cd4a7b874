//! The COA document: a real PDF per published COA behind a signed, expiring link, whose text
//! (pdftotext) carries what ISO/IEC 17025 §7.8 asks of a report and whose QR code (pdftoppm +
//! zbarimg) decodes to the public verify URL with the printed code.

use crate::lab_support::{approve_and_publish, lab_staff, pay, receive_and_start, record_and_submit};
use crate::support::bank_order;
use std::process::Command;
use tests::Sandbox;

fn tool(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("{program} runs (deploy/local/test.sh installs it): {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn a_published_coa_downloads_as_a_pdf_whose_text_and_qr_code_read_back() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Document Reader", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "doc-order-0001").await;
    pay(&sandbox, &invoice, &total, "DOC-PAY-1").await;
    let samples = receive_and_start(&sandbox, &staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    approve_and_publish(&sandbox, &staff, &accession).await;

    let result = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    let coa = &result.body["data"]["result"];
    let url = coa["documentUrl"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://") && url.contains("signature="), "{url}");
    // The link is built from the configured site, never from what the request claims.
    assert!(url.starts_with(sandbox.base_url.as_str()), "{url}");
    let spoofed = sandbox
        .http
        .get(format!("{}/api/v1/agent/results/{accession}", sandbox.base_url))
        .bearer_auth(&agent.key)
        .header("Host", "attacker.example")
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(spoofed.status(), 200);
    let spoofed: serde_json::Value = spoofed.json().await.unwrap();
    let spoofed_url = spoofed["data"]["result"]["documentUrl"].as_str().unwrap();
    assert!(!spoofed_url.contains("attacker.example"), "{spoofed_url}");
    assert!(
        spoofed_url.starts_with(sandbox.base_url.as_str()),
        "{spoofed_url}"
    );
    assert!(coa["documentExpiresAt"].is_string());
    let response = sandbox.http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200, "the signed link needs no key");
    assert_eq!(response.headers()["content-type"], "application/pdf");
    let pdf = response.bytes().await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    let forged = url.replace("signature=", "signature=A");
    assert_eq!(sandbox.http.get(&forged).send().await.unwrap().status(), 404);
    let expired = url.replace("expires=", "expires=1");
    assert_eq!(sandbox.http.get(&expired).send().await.unwrap().status(), 404);

    let dir = std::env::temp_dir().join(format!("coa-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("coa.pdf");
    std::fs::write(&path, &pdf).unwrap();
    let text = tool("pdftotext", &["-layout", path.to_str().unwrap(), "-"]);
    for expected in [
        "CERTIFICATE OF ANALYSIS",
        accession.as_str(),
        "BPC-157",
        coa["orderNumber"].as_str().unwrap(),
        "QA approved by quinn",
        "The results relate only to the item tested.",
        coa["verificationCode"].as_str().unwrap(),
        ">= 98.0",
        "99.2",
    ] {
        assert!(
            text.contains(expected),
            "the PDF text holds {expected:?}:\n{text}"
        );
    }
    let png = dir.join("page");
    tool(
        "pdftoppm",
        &[
            "-r",
            "200",
            "-png",
            "-singlefile",
            path.to_str().unwrap(),
            png.to_str().unwrap(),
        ],
    );
    let decoded = tool(
        "zbarimg",
        &["--raw", "-q", dir.join("page.png").to_str().unwrap()],
    );
    let decoded = decoded.trim();
    assert!(
        decoded.ends_with(&format!(
            "/api/v1/agent/verify?accession={accession}&code={}",
            coa["verificationCode"].as_str().unwrap()
        )),
        "the QR code is the verify URL: {decoded}"
    );
    std::fs::remove_dir_all(&dir).ok();
    sandbox.stop().await;
}
