//! A JSON-RPC proxy in front of anvil standing in for one of the two providers: it records
//! every method the service calls (the "no signing method is ever called" check) and can lie
//! (rewrite block hashes in receipts and blocks), answer another chain id (as a provider pointed
//! at another network would) or be down (answer 503).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// How the proxy answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    Honest,
    /// Receipts and blocks carry a forged block hash.
    Lying,
    /// `eth_chainId` answers this chain id; everything else is forwarded untouched, so only
    /// the chain-id check can tell.
    OtherChain(u64),
    /// Every call answers 503.
    Down,
}

#[derive(Clone)]
struct Shared {
    upstream: String,
    http: reqwest::Client,
    behaviour: Arc<Mutex<Behaviour>>,
    methods: Arc<Mutex<Vec<String>>>,
}

/// A running proxy.
pub struct RpcProxy {
    pub url: String,
    shared: Shared,
}

const FORGED_HASH: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";

impl RpcProxy {
    /// Starts a proxy to `upstream` on a free port.
    pub async fn start(upstream: &str) -> Self {
        let shared = Shared {
            upstream: upstream.to_owned(),
            http: reqwest::Client::new(),
            behaviour: Arc::new(Mutex::new(Behaviour::Honest)),
            methods: Arc::new(Mutex::new(Vec::new())),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().route("/", post(forward)).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, shared }
    }

    /// Switches the behaviour.
    pub fn set(&self, behaviour: Behaviour) {
        *self.shared.behaviour.lock().unwrap() = behaviour;
    }

    /// Every JSON-RPC method called through the proxy so far.
    pub fn methods(&self) -> Vec<String> {
        self.shared.methods.lock().unwrap().clone()
    }
}

fn record(shared: &Shared, body: &Value) {
    let calls: Vec<&Value> = match body {
        Value::Array(calls) => calls.iter().collect(),
        call => vec![call],
    };
    let mut methods = shared.methods.lock().unwrap();
    for call in calls {
        methods.push(call["method"].as_str().unwrap_or_default().to_owned());
    }
}

fn lie(answer: &mut Value) {
    let Some(result) = answer.get_mut("result").filter(|result| result.is_object()) else {
        return;
    };
    for key in ["blockHash", "hash"] {
        if result.get(key).is_some_and(Value::is_string)
            && (key == "blockHash" || result.get("parentHash").is_some())
        {
            result[key] = Value::String(FORGED_HASH.to_owned());
        }
    }
    if let Some(logs) = result.get_mut("logs").and_then(Value::as_array_mut) {
        for log in logs {
            log["blockHash"] = Value::String(FORGED_HASH.to_owned());
        }
    }
}

/// Rewrites the answers to `eth_chainId` calls of `request` to `chain_id`.
fn other_chain(request: &Value, answer: &mut Value, chain_id: u64) {
    let calls: Vec<&Value> = match request {
        Value::Array(calls) => calls.iter().collect(),
        call => vec![call],
    };
    let ids: Vec<&Value> = calls
        .into_iter()
        .filter(|call| call["method"] == "eth_chainId")
        .map(|call| &call["id"])
        .collect();
    let answers: Vec<&mut Value> = match answer {
        Value::Array(answers) => answers.iter_mut().collect(),
        single => vec![single],
    };
    for answer in answers {
        if ids.contains(&&answer["id"]) && answer.get("result").is_some() {
            answer["result"] = Value::String(format!("{chain_id:#x}"));
        }
    }
}

async fn forward(State(shared): State<Shared>, body: axum::body::Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    record(&shared, &request);
    let behaviour = *shared.behaviour.lock().unwrap();
    if behaviour == Behaviour::Down {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let Ok(upstream) = shared.http.post(&shared.upstream).json(&request).send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let Ok(mut answer) = upstream.json::<Value>().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    match behaviour {
        Behaviour::Lying => match &mut answer {
            Value::Array(answers) => answers.iter_mut().for_each(lie),
            single => lie(single),
        },
        Behaviour::OtherChain(chain_id) => other_chain(&request, &mut answer, chain_id),
        Behaviour::Honest | Behaviour::Down => {}
    }
    axum::Json(answer).into_response()
}
