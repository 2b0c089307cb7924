//! Round trip with the reference implementation (Python brainctl 2.8.0):
//! bytes we sign verify in it. Runs where its venv exists
//! (`localnet/install` creates it at ~/.cache/brainctl/ref-venv, or set
//! BRAINCTL_REF_VENV); under CI=true a missing venv is a failure.

mod util;

use std::path::PathBuf;
use util::Env;

fn ref_python() -> Option<PathBuf> {
    let venv = std::env::var_os("BRAINCTL_REF_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/brainctl/ref-venv"))
        })?;
    let py = venv.join("bin/python");
    py.exists().then_some(py)
}

#[test]
fn reference_verifies_what_we_sign() {
    let Some(py) = ref_python() else {
        assert!(
            std::env::var("CI").is_err(),
            "CI=true but the reference venv is missing: run localnet/install"
        );
        eprintln!("skipping: reference venv not installed (run localnet/install)");
        return;
    };
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    e.ok(&[
        "memory",
        "add",
        "ünïcode 😀 \"q\" \\ \u{7f} \u{1}",
        "-c",
        "lesson",
        "-t",
        "x,y",
        "--confidence",
        "0.1",
    ]);
    e.ok(&[
        "memory",
        "add",
        "plain",
        "-c",
        "project",
        "--confidence",
        "1e-7",
    ]);
    let ours = e
        .ok(&["export", "--sign", "-o", "ours.signed.json", "--json"])
        .json();
    let script = r#"
import json, sys
from agentmemory import signing
signed = json.load(open(sys.argv[1]))
print(json.dumps(signing.verify_bundle(signed)))
"#;
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(e.path("ours.signed.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert_eq!(theirs["bundle_hash"], ours["bundle_hash"]);
    assert_eq!(theirs["memories_count"], 2);
}
