//! The MCP twin of the order read: `tools/call svc.order.get` on `POST /api/mcp`, the same
//! operation as `GET /orders/{id}` behind the JSON-RPC front end. One call is checked before the
//! load (a tool error still answers HTTP 200, which wrk would count as a success).

use crate::seed::Bench;
use crate::tools;
use serde_json::{Value, json};
use std::path::PathBuf;

pub use crate::report::ORDER_GET_LABEL;

/// Checks one `tools/call svc.order.get` of the seeded order and writes the wrk script that
/// repeats it.
pub async fn order_get_script(bench: &Bench) -> anyhow::Result<PathBuf> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": { "name": "svc.order.get", "arguments": { "reference": bench.order_id } },
    })
    .to_string();
    let headers = [("MCP-Protocol-Version", "2025-11-25")];
    let answer: Value = bench
        .http
        .post(format!("{}/api/mcp", bench.base_url))
        .bearer_auth(&bench.key)
        .header("content-type", "application/json")
        .header(headers[0].0, headers[0].1)
        .body(body.clone())
        .send()
        .await?
        .json()
        .await?;
    let order_id = &answer["result"]["structuredContent"]["data"]["order"]["id"];
    anyhow::ensure!(
        answer["result"]["isError"] == false && *order_id == bench.order_id,
        "tools/call svc.order.get did not return the seeded order: {answer}"
    );
    tools::post_script("mcp-order-get", &body, &headers)
}
