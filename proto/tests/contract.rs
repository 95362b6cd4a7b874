//! The proto contract (docs/internal-api.md, "The proto contract") with a fixture: the protos
//! pass `buf lint`, and `buf breaking` with proto/buf.yaml fails a deliberately breaking change
//! and passes a compatible one.
//!
//! Each breaking test copies `lab/` and `buf.yaml` twice into a scratch directory, edits one
//! real field, rpc or enum value of the second copy by exact text replacement, and compares the
//! two directories (no git needed); the violation must name the expected buf rule.
//!
//! buf is npm `@bufbuild/buf`, found where deploy/local/proto-check.sh looks:
//! `tests/clients/node/node_modules/.bin/buf` (`npm ci` there, as deploy/local/test.sh does),
//! `<LAB_STATE_DIR or .local>/node/node_modules/.bin/buf`, then `PATH`. Without it the tests
//! print why and pass, unless `LAB_REQUIRE_NODE_TOOLS=1` (test.sh sets it): then they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `proto` crate's directory: the buf module (`buf.yaml` and `lab/`).
fn module_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The buf to run, if one is installed.
fn buf_binary() -> Option<PathBuf> {
    let root = module_dir().join("..");
    let state = std::env::var_os("LAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".local"));
    let candidates = [
        root.join("tests/clients/node/node_modules/.bin/buf"),
        state.join("node/node_modules/.bin/buf"),
    ];
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("buf"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates.into_iter().chain(on_path).find(|path| path.is_file())
}

/// buf, or `None` (with a printed reason) when it is missing and not required.
fn buf() -> Option<PathBuf> {
    let binary = buf_binary();
    if binary.is_none() {
        assert!(
            std::env::var("LAB_REQUIRE_NODE_TOOLS").as_deref() != Ok("1"),
            "LAB_REQUIRE_NODE_TOOLS=1 but buf is missing (npm ci in tests/clients/node, as bash \
             deploy/local/test.sh does)"
        );
        println!(
            "skipped: buf is not installed (npm ci in tests/clients/node); the proto contract was \
             not checked"
        );
    }
    binary
}

/// A scratch directory of one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("proto-contract-{}-{test}", std::process::id()));
        // A leftover of an earlier run with the same process id.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        Self(dir)
    }

    /// A fresh copy of the module (`buf.yaml` and `lab/`) named `name` in the scratch directory.
    fn copy_of_module(&self, name: &str) -> PathBuf {
        let copy = self.0.join(name);
        std::fs::create_dir_all(&copy).expect("create the copy");
        std::fs::copy(module_dir().join("buf.yaml"), copy.join("buf.yaml")).expect("copy buf.yaml");
        copy_tree(&module_dir().join("lab"), &copy.join("lab"));
        copy
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory of the copy");
    for entry in std::fs::read_dir(from).expect("read a directory of the module") {
        let path = entry.expect("a directory entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy a file of the module");
        }
    }
}

/// Replaces the one occurrence of `from` in `module/file` by `to`.
fn edit(module: &Path, file: &str, from: &str, to: &str) {
    let path = module.join(file);
    let text = std::fs::read_to_string(&path).expect("read the proto file");
    assert_eq!(
        text.matches(from).count(),
        1,
        "{file} should contain {from:?} exactly once (the fixture edits a real declaration)"
    );
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write the proto file");
}

/// `buf breaking <changed> --against <baseline>`, violations as `path(line,col) : error RULE : …`.
fn breaking(buf: &Path, changed: &Path, baseline: &Path) -> Output {
    Command::new(buf)
        .arg("breaking")
        .arg(changed)
        .arg("--against")
        .arg(baseline)
        .arg("--error-format=msvs")
        .output()
        .unwrap_or_else(|error| panic!("{} does not run (is node installed?): {error}", buf.display()))
}

fn text(output: &Output) -> String {
    format!(
        "exit status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Copies the module twice, edits the second copy (`file`: `from` → `to`) and runs buf breaking.
fn compare_after_edit(test: &str, file: &str, from: &str, to: &str) -> Option<Output> {
    let buf = buf()?;
    let scratch = Scratch::new(test);
    let baseline = scratch.copy_of_module("baseline");
    let changed = scratch.copy_of_module("changed");
    edit(&changed, file, from, to);
    Some(breaking(&buf, &changed, &baseline))
}

/// Asserts that buf reported violations (exit status 100) naming every rule of `rules` (a copy
/// that does not compile also exits with 100, under the rule COMPILE).
fn assert_breaks(output: &Output, rules: &[&str]) {
    assert_eq!(
        output.status.code(),
        Some(100),
        "buf breaking should report breaking changes:\n{}",
        text(output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    for rule in rules {
        assert!(
            stdout.contains(&format!(" : error {rule} : ")),
            "buf breaking should name the rule {rule}:\n{}",
            text(output)
        );
    }
}

fn assert_keeps(output: &Output) {
    assert!(
        output.status.success(),
        "buf breaking should accept the change:\n{}",
        text(output)
    );
}

#[test]
fn the_protos_pass_lint() {
    let Some(buf) = buf() else { return };
    let output = Command::new(&buf)
        .arg("lint")
        .arg(module_dir())
        .arg("--error-format=msvs")
        .output()
        .expect("buf lint runs");
    assert!(output.status.success(), "buf lint:\n{}", text(&output));
}

#[test]
fn removing_a_field_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "remove-field",
        "lab/orders/v1/events.proto",
        "  string quote_id = 5;\n",
        "",
    ) else {
        return;
    };
    assert_breaks(
        &output,
        &[
            "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
            "FIELD_NO_DELETE_UNLESS_NAME_RESERVED",
        ],
    );
}

#[test]
fn removing_a_field_with_its_number_and_name_reserved_keeps_the_contract() {
    // What the release after next does with the legacy_* twins (docs/architecture.md).
    let Some(output) = compare_after_edit(
        "remove-reserved-field",
        "lab/orders/v1/events.proto",
        "  string legacy_status = 3;\n",
        "  reserved 3;\n  reserved \"legacy_status\";\n",
    ) else {
        return;
    };
    assert_keeps(&output);
}

#[test]
fn removing_a_field_with_only_its_number_reserved_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "remove-number-reserved-field",
        "lab/orders/v1/events.proto",
        "  string legacy_status = 3;\n",
        "  reserved 3;\n",
    ) else {
        return;
    };
    assert_breaks(&output, &["FIELD_NO_DELETE_UNLESS_NAME_RESERVED"]);
}

#[test]
fn renumbering_a_tag_breaks_the_contract() {
    // The old number disappears without a reservation (the name cannot be reserved: it is in use).
    let Some(output) = compare_after_edit(
        "renumber-field",
        "lab/orders/v1/events.proto",
        "  string quote_id = 5;\n",
        "  string quote_id = 25;\n",
    ) else {
        return;
    };
    assert_breaks(&output, &["FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED"]);
}

#[test]
fn changing_a_field_type_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "change-field-type",
        "lab/orders/v1/events.proto",
        "  // Order total in USD cents.\n  int64 total_cents = 10;\n",
        "  // Order total in USD cents.\n  string total_cents = 10;\n",
    ) else {
        return;
    };
    assert_breaks(&output, &["FIELD_SAME_TYPE"]);
}

#[test]
fn renaming_a_field_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "rename-field",
        "lab/orders/v1/events.proto",
        "  string quote_id = 5;\n",
        "  string quote_reference = 5;\n",
    ) else {
        return;
    };
    assert_breaks(&output, &["FIELD_SAME_NAME", "FIELD_SAME_JSON_NAME"]);
}

#[test]
fn removing_an_rpc_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "remove-rpc",
        "lab/orders/v1/orders.proto",
        "  rpc GetEta(GetOrderRequest) returns (GetEtaResponse);\n",
        "",
    ) else {
        return;
    };
    assert_breaks(&output, &["RPC_NO_DELETE"]);
}

#[test]
fn removing_an_enum_value_breaks_the_contract() {
    let Some(output) = compare_after_edit(
        "remove-enum-value",
        "lab/common/v1/common.proto",
        "  ORDER_STATUS_REPORTING = 8;\n",
        "",
    ) else {
        return;
    };
    assert_breaks(
        &output,
        &[
            "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
            "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED",
        ],
    );
}

#[test]
fn adding_a_field_keeps_the_contract() {
    let Some(output) = compare_after_edit(
        "add-field",
        "lab/orders/v1/events.proto",
        "  string quote_id = 5;\n",
        "  string quote_id = 5;\n  // A note on the order.\n  string note = 900;\n",
    ) else {
        return;
    };
    assert_keeps(&output);
}

#[test]
fn adding_an_enum_value_last_keeps_the_contract() {
    let Some(output) = compare_after_edit(
        "add-enum-value",
        "lab/common/v1/common.proto",
        "  ORDER_STATUS_CANCELLED = 10;\n",
        "  ORDER_STATUS_CANCELLED = 10;\n  ORDER_STATUS_ON_HOLD = 11;\n",
    ) else {
        return;
    };
    assert_keeps(&output);
}
