//! Every secret value committed to this repository is on the deny-list that processes check
//! outside development mode (`platform::production::COMMITTED_SECRET_SHA256`).
//!
//! The scan reads the places secrets are written down: the development overlay's generated
//! Secrets (`deploy/k8s/overlays/*/kustomization.yaml`), the Redis users' passwords
//! (`*.acl`), the compose file's passwords and URLs, and every Rust constant named like a
//! secret (`…PEPPER`, `…KEY`, `…SECRET`, `…CREDENTIAL`, `…PASSWORD`), string or byte string.
//! A value found here and missing from the list fails the test, which prints the lines to add.

use platform::production::{COMMITTED_SECRET_SHA256, is_committed_secret, secret_parts, sha256_hex};
use std::path::{Path, PathBuf};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("platform sits in the repository root")
        .to_path_buf()
}

/// Files under `dir` (recursively) whose name passes `wanted`, skipping build output and
/// installed packages.
fn files(dir: &Path, wanted: &dyn Fn(&str) -> bool, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "node_modules" | ".git" | ".local" | "venv"
            ) {
                files(&path, wanted, found);
            }
        } else if wanted(&name) {
            found.push(path);
        }
    }
}

fn unquote(text: &str) -> &str {
    let text = text.trim();
    text.strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .or_else(|| text.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')))
        .unwrap_or(text)
}

/// (where, value) of every committed secret.
fn committed_secrets() -> Vec<(String, String)> {
    let root = repository_root();
    let mut secrets = Vec::new();
    let relative = |path: &Path| path.strip_prefix(&root).unwrap_or(path).display().to_string();

    // Generated Secrets: the `literals` of every secretGenerator of every overlay.
    let mut kustomizations = Vec::new();
    files(
        &root.join("deploy"),
        &|name| name == "kustomization.yaml",
        &mut kustomizations,
    );
    for path in kustomizations {
        let text = std::fs::read_to_string(&path).expect("a readable kustomization");
        let (mut in_secrets, mut in_literals) = (false, false);
        for line in text.lines() {
            let trimmed = line.trim();
            if !line.starts_with(' ') && !trimmed.is_empty() && !trimmed.starts_with('#') {
                in_secrets = trimmed.starts_with("secretGenerator:");
                continue;
            }
            if trimmed.ends_with(':') && !trimmed.starts_with("- ") {
                in_literals = trimmed == "literals:";
                continue;
            }
            if in_secrets
                && in_literals
                && let Some(item) = trimmed.strip_prefix("- ")
                && let Some((name, value)) = unquote(item).split_once('=')
            {
                secrets.push((format!("{} {name}", relative(&path)), value.to_owned()));
            }
        }
    }
    // Redis ACL users: `>password`.
    let mut acls = Vec::new();
    files(&root.join("deploy"), &|name| name.ends_with(".acl"), &mut acls);
    for path in acls {
        let text = std::fs::read_to_string(&path).expect("a readable ACL file");
        for word in text.split_whitespace() {
            if let Some(password) = word.strip_prefix('>') {
                secrets.push((relative(&path), password.to_owned()));
            }
        }
    }
    // Compose files: passwords and URLs with a password.
    let mut composes = Vec::new();
    files(
        &root.join("deploy"),
        &|name| name.starts_with("compose") && name.ends_with(".yaml"),
        &mut composes,
    );
    for path in composes {
        let text = std::fs::read_to_string(&path).expect("a readable compose file");
        for line in text.lines() {
            let Some((name, value)) = line.trim().split_once(": ") else {
                continue;
            };
            let value = unquote(value);
            let named_secret = ["PASSWORD", "PEPPER", "SECRET", "_KEY"]
                .iter()
                .any(|word| name.contains(word));
            let url_with_password = value.contains("://") && secret_parts(value).len() > 1;
            if (named_secret && !value.starts_with('$')) || url_with_password {
                secrets.push((format!("{} {name}", relative(&path)), value.to_owned()));
            }
        }
    }
    // Rust constants named like secrets.
    let mut sources = Vec::new();
    files(&root, &|name| name.ends_with(".rs"), &mut sources);
    for path in sources {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for line in text.lines() {
            let Some(rest) = line
                .trim()
                .strip_prefix("pub const ")
                .or_else(|| line.trim().strip_prefix("const "))
            else {
                continue;
            };
            let Some((name, rest)) = rest.split_once(':') else {
                continue;
            };
            let secret_like = ["PEPPER", "KEY", "SECRET", "CREDENTIAL", "PASSWORD"]
                .iter()
                .any(|word| name.contains(word));
            let not_a_value = ["_ID", "_PREFIX", "_VAR", "_PATH", "_HEADER", "_FIELD"]
                .iter()
                .any(|suffix| name.ends_with(suffix));
            if !secret_like || not_a_value || name == "URL_KEY" || name.contains("IDEMPOTENCY") {
                continue;
            }
            let Some((_, literal)) = rest.split_once('=') else {
                continue;
            };
            let literal = literal.trim().trim_end_matches(';');
            let value = if let Some(bytes) = literal
                .strip_prefix("*b\"")
                .and_then(|rest| rest.strip_suffix('"'))
            {
                // A raw key: configured as base64 in a keyring.
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes.as_bytes())
            } else if let Some(text) = literal.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
                text.to_owned()
            } else {
                continue;
            };
            if value.len() >= 8 {
                secrets.push((format!("{} {name}", relative(&path)), value));
            }
        }
    }
    secrets
}

#[test]
fn every_secret_committed_to_the_repository_is_refused_outside_development_mode() {
    let secrets = committed_secrets();
    assert!(
        secrets
            .iter()
            .any(|(place, _)| place.contains("overlays/dev") && place.contains("LAB_API_KEY_PEPPER")),
        "the scan found the development overlay's pepper: {secrets:?}"
    );
    assert!(
        secrets.iter().any(|(place, _)| place.ends_with(".acl")),
        "the scan found the Redis users' passwords"
    );
    let mut missing = Vec::new();
    for (place, value) in &secrets {
        for part in secret_parts(value) {
            let hash = sha256_hex(&part);
            if !COMMITTED_SECRET_SHA256.contains(&hash.as_str())
                && !missing.iter().any(|line: &String| line.contains(&hash))
            {
                missing.push(format!("    \"{hash}\", // {place}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "committed secrets missing from platform::production::COMMITTED_SECRET_SHA256; add:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_committed_secret_is_refused_in_every_form_a_setting_carries_it() {
    let secrets = committed_secrets();
    let (_, password) = secrets
        .iter()
        .find(|(place, _)| place.ends_with(".acl"))
        .expect("a Redis user's password");
    assert!(is_committed_secret(password));
    assert!(is_committed_secret(&format!(
        "redis://someone:{password}@redis.internal:6379"
    )));
    assert!(!is_committed_secret(
        "redis://someone:a-password-nobody-committed@redis.internal:6379"
    ));
}
