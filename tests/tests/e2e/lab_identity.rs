//! One laboratory identity (`platform::lab`, issue 32 §1): the label's ship-to, the hosted pay
//! page and the COA document name the same laboratory, at the same address, in the demo
//! configuration every local run uses. (Production refuses to start without `LAB_*`:
//! `production_config.rs` reads them from `deploy/k8s/production-settings.json`.)

use crate::card_checkout::{SUCCESS_CARD, card_order, open_page, pay_with};
use crate::sandbox_simulation::simulate;
use platform::lab::LabIdentity;
use platform::testing::wait_for;
use std::process::Command;
use std::time::Duration;
use tests::Sandbox;

/// The text of a PDF, as a customer's software reads it.
fn pdf_text(pdf: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("lab-identity-{}.pdf", uuid::Uuid::new_v4()));
    std::fs::write(&path, pdf).unwrap();
    let output = Command::new("pdftotext")
        .args(["-layout", path.to_str().unwrap(), "-"])
        .output()
        .expect("pdftotext runs (deploy/local/test.sh installs it)");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

async fn download(sandbox: &Sandbox, url: &str) -> Vec<u8> {
    // Label links name the configured site (the local default); this sandbox listens elsewhere.
    let url = url.replace("http://127.0.0.1:8080", &sandbox.base_url);
    let response = sandbox.http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn the_label_the_pay_page_and_the_coa_name_the_same_laboratory_at_the_same_address() {
    let lab = LabIdentity::demo();
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Identity Ines", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    let order = card_order(&sandbox, &agent, "lab-identity-0001").await;
    let order_id = order["id"].as_str().unwrap().to_owned();

    // The label: shipped to the laboratory.
    let label = sandbox
        .get(&agent.key, &format!("/shipments/{order_id}/label"))
        .await;
    assert_eq!(label.status, 200, "{:?}", label.body);
    let ship_to = &label.body["data"]["label"]["shipTo"];
    assert_eq!(ship_to["company"], lab.name.as_str());
    assert_eq!(ship_to["street1"], lab.street1.as_str());
    let label_text = pdf_text(
        &download(
            &sandbox,
            label.body["data"]["label"]["labelUrl"].as_str().unwrap(),
        )
        .await,
    );
    for expected in [lab.name.to_uppercase(), lab.street1.to_uppercase()] {
        assert!(
            label_text.to_uppercase().contains(&expected),
            "the label names {expected:?}:\n{label_text}"
        );
    }

    // The pay page: signed by the laboratory.
    let url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let page = open_page(&sandbox, &url).await;
    assert!(page.html.contains(&lab.name), "{}", page.html);
    assert!(page.html.contains(&lab.street1), "{}", page.html);
    assert_eq!(pay_with(&sandbox, &url, SUCCESS_CARD).await.outcome(), "paid");

    // The COA: the same name, address and accreditation on its letterhead.
    for scenario in ["received", "testing"] {
        let answer = simulate(&sandbox, &agent.key, &order_id, scenario).await;
        assert_eq!(answer.status, 200, "{scenario}: {:?}", answer.body);
    }
    wait_for("the COA published", Duration::from_secs(30), || async {
        let answer = simulate(&sandbox, &agent.key, &order_id, "coa_published").await;
        (answer.status == 200).then_some(())
    })
    .await;
    let coa = wait_for("the COA readable", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/results/{order_id}")).await;
        (answer.status == 200).then_some(answer.body["data"]["result"].clone())
    })
    .await;
    let coa_text = pdf_text(&download(&sandbox, coa["documentUrl"].as_str().unwrap()).await);
    for expected in [lab.name.clone(), lab.street1.clone(), lab.accreditation()] {
        assert!(
            coa_text.contains(&expected),
            "the COA names {expected:?}:\n{coa_text}"
        );
    }
    sandbox.stop().await;
}
