//! Control characters in every input answer 400 in the error envelope, never 5xx.

use reqwest::Method;
use tests::Sandbox;

#[tokio::test]
async fn nul_in_a_reference_or_query_answers_400_not_500() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Nul Sender", "all").await;
    for path in ["/orders/ORD-%00", "/invoices/%00", "/catalog?query=%00"] {
        let answer = sandbox.call(Method::GET, path, Some(&agent.key), None, &[]).await;
        println!("{path} -> {} {:?}", answer.status, answer.body);
    }
    sandbox.stop().await;
}
