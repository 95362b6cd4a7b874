//! The proto contract check (`proto/buf.yaml`, run by deploy/local/proto-check.sh in the suite)
//! catches what breaks callers: each test copies the protos twice, changes one copy the way a
//! careless edit would, and runs `buf breaking` of the changed copy against the untouched one.
//! The binary is npm `@bufbuild/buf` (tests/clients/node); without it the tests skip, unless
//! `LAB_REQUIRE_NODE_TOOLS` is set (as deploy/local/test.sh sets it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn proto_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The buf binary, where deploy/local/proto-check.sh looks for it.
fn buf() -> Option<PathBuf> {
    let root = proto_dir().join("..");
    let state = std::env::var_os("LAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".local"));
    let found = [
        root.join("tests/clients/node/node_modules/.bin/buf"),
        state.join("node/node_modules/.bin/buf"),
    ]
    .into_iter()
    .find(|path| path.is_file())
    .or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("buf"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("LAB_REQUIRE_NODE_TOOLS").is_none(),
            "LAB_REQUIRE_NODE_TOOLS is set but buf is not installed (bash deploy/local/test.sh installs npm @bufbuild/buf)"
        );
        println!("note: buf is not installed; skipping");
    }
    found
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of the module (buf.yaml and lab/) in a fresh directory under the system's temp dir.
struct Module(PathBuf);

impl Module {
    fn copy(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!("proto-contract-{}-{nanos}-{name}", std::process::id()));
        copy_dir(&proto_dir().join("lab"), &dir.join("lab"));
        std::fs::copy(proto_dir().join("buf.yaml"), dir.join("buf.yaml")).unwrap();
        Self(dir)
    }

    /// Replaces `from` (which must occur exactly once) with `to` in the file `path`.
    fn edit(&self, path: &str, from: &str, to: &str) {
        let file = self.0.join(path);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.matches(from).count(), 1, "{from:?} occurs once in {path}");
        std::fs::write(&file, text.replace(from, to)).unwrap();
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `buf breaking` of `changed` against `baseline`.
fn breaking(buf: &Path, changed: &Module, baseline: &Module) -> Output {
    Command::new(buf)
        .arg("breaking")
        .arg(&changed.0)
        .arg("--against")
        .arg(&baseline.0)
        // One JSON object per finding, naming its rule (`"type":"FIELD_NO_DELETE"`).
        .arg("--error-format=json")
        .output()
        .expect("buf runs")
}

/// Asserts that the change `edit` makes to a copy breaks the contract under `rule`.
fn assert_breaks(name: &str, edit: impl FnOnce(&Module), rule: &str) {
    let Some(buf) = buf() else { return };
    let baseline = Module::copy(&format!("{name}-baseline"));
    let changed = Module::copy(name);
    edit(&changed);
    let output = breaking(&buf, &changed, &baseline);
    let report =
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "buf breaking accepted the change:\n{report}"
    );
    assert!(report.contains(rule), "expected {rule} in:\n{report}");
}

const ORDERS: &str = "lab/orders/v1/orders.proto";

#[test]
fn the_protos_pass_lint() {
    let Some(buf) = buf() else { return };
    let output = Command::new(buf)
        .arg("lint")
        .arg(proto_dir())
        .output()
        .expect("buf runs");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn an_unchanged_copy_and_an_added_field_keep_the_contract() {
    let Some(buf) = buf() else { return };
    let baseline = Module::copy("added-baseline");
    let changed = Module::copy("added");
    assert!(breaking(&buf, &changed, &baseline).status.success());
    changed.edit(
        ORDERS,
        "  int64 total_cents = 19;\n",
        "  int64 total_cents = 19;\n  // A new field, on a new number.\n  string added_for_the_test = 999;\n",
    );
    let output = breaking(&buf, &changed, &baseline);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn removing_a_field_breaks_the_contract() {
    assert_breaks(
        "removed",
        |module| module.edit(ORDERS, "  int64 total_cents = 19;\n", ""),
        "FIELD_NO_DELETE",
    );
}

#[test]
fn renumbering_a_tag_breaks_the_contract() {
    assert_breaks(
        "renumbered",
        |module| {
            module.edit(
                ORDERS,
                "  int64 total_cents = 19;\n",
                "  int64 total_cents = 998;\n",
            )
        },
        "FIELD_NO_DELETE",
    );
}

#[test]
fn changing_a_field_type_breaks_the_contract() {
    assert_breaks(
        "retyped",
        |module| {
            module.edit(
                ORDERS,
                "  int64 total_cents = 19;\n",
                "  string total_cents = 19;\n",
            )
        },
        "FIELD_SAME_TYPE",
    );
}

#[test]
fn renaming_a_field_breaks_the_contract() {
    assert_breaks(
        "renamed",
        |module| {
            module.edit(
                ORDERS,
                "  int64 total_cents = 19;\n",
                "  int64 total_amount_cents = 19;\n",
            )
        },
        "FIELD_SAME_NAME",
    );
}

#[test]
fn removing_an_rpc_breaks_the_contract() {
    assert_breaks(
        "rpc",
        |module| {
            let file = module.0.join("lab/gateway/v1/operations.proto");
            let text = std::fs::read_to_string(&file).unwrap();
            let line = text
                .lines()
                .find(|line| line.trim_start().starts_with("rpc CheckPeers("))
                .expect("the CheckPeers rpc")
                .to_owned();
            module.edit("lab/gateway/v1/operations.proto", &format!("{line}\n"), "");
        },
        "RPC_NO_DELETE",
    );
}
