//! The input discipline through REST: a sweep of NUL and other control characters over every
//! path parameter, query parameter, request-body string and read header of every operation of
//! the served OpenAPI document (so that operations added later are swept too) never answers 5xx,
//! and every refused input answers 400 in the error envelope naming where the flaw is.

use reqwest::Method;
use serde_json::{Value, json};
use tests::Sandbox;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod openapi;

use openapi::{example, example_text, percent_encode, set_pointer, string_leaves};

/// Characters put into decoded values (query values, body strings).
const CHARACTERS: [char; 5] = ['\u{0}', '\u{1}', '\u{1f}', '\u{7f}', '\u{85}'];
/// Raw encodings put into paths and queries (the last one is not UTF-8).
const ENCODINGS: [&str; 5] = ["%00", "%01", "%7F", "%C2%85", "%FF"];

struct Sweep<'a> {
    sandbox: &'a Sandbox,
    key: String,
    requests: usize,
}

impl Sweep<'_> {
    /// Sends one variant and asserts a 400 envelope naming `field` with `code`.
    async fn refused(
        &mut self,
        method: &Method,
        target: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
        code: &str,
        field: &str,
    ) {
        let answer = self
            .sandbox
            .call(method.clone(), target, Some(&self.key), body, headers)
            .await;
        self.requests += 1;
        let context = format!("{method} {target} {body:?} {headers:?}");
        assert!(
            answer.status < 500,
            "{context} answered {} {:?}",
            answer.status,
            answer.body
        );
        assert_eq!(
            (answer.status, answer.error_code()),
            (400, code),
            "{context}: {:?}",
            answer.body
        );
        assert_eq!(answer.body["error"]["details"]["field"], field, "{context}");
        assert!(answer.header("x-request-id").is_some());
    }
}

#[tokio::test]
async fn control_characters_anywhere_in_any_operation_answer_400_never_5xx() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Control Sweeper", "all").await;
    // A sandbox customer reaches every operation, the sandbox-only simulation included (a live
    // key meets that route's 404 before any input rule: docs/sandbox.md).
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    let document = sandbox
        .call(Method::GET, "/api/v1/openapi.json", None, None, &[])
        .await
        .body;
    let mut sweep = Sweep {
        sandbox: &sandbox,
        key: agent.key.clone(),
        requests: 0,
    };
    let mut operations = 0;
    for (template, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().unwrap() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            sweep_operation(&mut sweep, &document, &method, template, operation).await;
            operations += 1;
        }
    }
    assert!(operations >= 15, "the document lists every operation");
    assert!(sweep.requests > 250, "the sweep sent {} requests", sweep.requests);
    sandbox.stop().await;
}

async fn sweep_operation(
    sweep: &mut Sweep<'_>,
    document: &Value,
    method: &Method,
    template: &str,
    operation: &Value,
) {
    let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
    let base_path = parameters
        .iter()
        .filter(|parameter| parameter["in"] == "path")
        .fold(template.to_owned(), |path, parameter| {
            let name = parameter["name"].as_str().unwrap();
            path.replace(&format!("{{{name}}}"), &example_text(&parameter["schema"]))
        });
    let idempotent = parameters
        .iter()
        .any(|parameter| parameter["name"] == "Idempotency-Key");
    let fresh_key = || format!("sweep-{}", uuid::Uuid::new_v4());
    for parameter in &parameters {
        let name = parameter["name"].as_str().unwrap();
        match parameter["in"].as_str().unwrap() {
            "path" => {
                let valid = example_text(&parameter["schema"]);
                for encoding in ENCODINGS {
                    let target = template.replace(&format!("{{{name}}}"), &format!("{valid}{encoding}"));
                    let key = fresh_key();
                    let headers: Vec<(&str, &str)> = if idempotent {
                        vec![("Idempotency-Key", &key)]
                    } else {
                        vec![]
                    };
                    sweep
                        .refused(
                            method,
                            &target,
                            None,
                            &headers,
                            "invalid_request",
                            &format!("path.{name}"),
                        )
                        .await;
                }
            }
            "query" => {
                let raw = CHARACTERS
                    .iter()
                    .map(|c| percent_encode(&format!("a{c}b")))
                    .chain(ENCODINGS.iter().map(|e| format!("a{e}b")));
                for value in raw.collect::<Vec<_>>() {
                    let target = format!("{base_path}?{name}={value}");
                    sweep
                        .refused(
                            method,
                            &target,
                            None,
                            &[],
                            "invalid_request",
                            &format!("query.{name}"),
                        )
                        .await;
                }
            }
            "header" => {
                assert_eq!(name, "Idempotency-Key", "a header this sweep does not know");
                for value in ["sweep-key\twith-tab", "sweep-key-\u{85}-next-line"] {
                    let headers = [(name, value)];
                    sweep
                        .refused(
                            method,
                            &base_path,
                            None,
                            &headers,
                            "idempotency_key_invalid",
                            "header.idempotency-key",
                        )
                        .await;
                }
                for character in ['\u{0}', '\u{1}', '\u{1f}', '\u{7f}'] {
                    let value = format!("sweep-key-{character}-raw");
                    let authorization = format!("Bearer {}", sweep.key);
                    let headers = [("Authorization", authorization.as_str()), (name, &value)];
                    let status = raw_status(sweep.sandbox, method, &base_path, &headers).await;
                    assert_eq!(
                        status, 400,
                        "{method} {base_path} with a raw control character in {name}"
                    );
                }
            }
            other => panic!("parameter location {other} is not swept"),
        }
    }
    let Some(schema) = operation["requestBody"]["content"]["application/json"].get("schema") else {
        return;
    };
    let mut body = example(document, schema, 0);
    if !body.is_object() {
        body = json!({});
    }
    let mut leaves = Vec::new();
    string_leaves(&body, String::new(), String::new(), &mut leaves);
    // A property the schema does not know is checked too (before the shape is).
    leaves.push(("/unknownProperty".to_owned(), "unknownProperty".to_owned()));
    for (pointer, field) in leaves {
        for character in CHARACTERS {
            let mut variant = body.clone();
            set_pointer(&mut variant, &pointer, Value::String(format!("a{character}b")));
            let key = fresh_key();
            let headers: Vec<(&str, &str)> = if idempotent {
                vec![("Idempotency-Key", &key)]
            } else {
                vec![]
            };
            sweep
                .refused(
                    method,
                    &base_path,
                    Some(&variant),
                    &headers,
                    "invalid_request",
                    &format!("body.{field}"),
                )
                .await;
        }
    }
}

/// Sends a request with raw header bytes (reqwest refuses control characters in headers) and
/// returns the answer's status.
async fn raw_status(sandbox: &Sandbox, method: &Method, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(sandbox.in_process().http_addr)
        .await
        .unwrap();
    let mut request = format!("{method} /api/v1/agent{path} HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Content-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

#[tokio::test]
async fn a_control_character_in_the_api_key_is_a_malformed_key_never_5xx() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Key Mangler", "all").await;
    for authorization in [
        // (a trailing tab would be optional whitespace, which HTTP strips)
        format!("Bearer {}\tx", agent.key),
        format!("Bearer {}\u{85}", agent.key),
        format!("Bearer \u{85}{}", agent.key),
    ] {
        let headers = [("Authorization", authorization.as_str())];
        let answer = sandbox.call(Method::GET, "/orders", None, None, &headers).await;
        assert_eq!(
            (answer.status, answer.error_code()),
            (401, "unauthenticated"),
            "{authorization:?}: {:?}",
            answer.body
        );
    }
    // Bytes that HTTP/1.1 forbids in a header never become a request: the server answers 400.
    for character in ['\u{0}', '\u{1}', '\u{1f}', '\u{7f}'] {
        let authorization = format!("Bearer {}{character}", agent.key);
        let headers = [("Authorization", authorization.as_str())];
        let status = raw_status(&sandbox, &Method::GET, "/orders", &headers).await;
        assert!((400..500).contains(&status), "{character:?} answered {status}");
    }
    assert_eq!(sandbox.get(&agent.key, "/orders").await.status, 200);
    sandbox.stop().await;
}
