//! What users of Solana and Rust CLIs expect beside `--help`: shell
//! completions and man pages generated from the same definition, the
//! systemd units in `deploy/systemd` (checked by `systemd-analyze
//! verify`), and `brainctl doctor` saying what to fix.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use util::Env;

#[test]
fn completions_cover_every_shell_and_parse() {
    let e = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = e.ok(&["completions", shell]).stdout;
        assert!(
            out.contains("brainctl") && out.contains("marketplace"),
            "{shell}: {out:.200}"
        );
    }
    // the bash script is valid bash
    let script = e.path("brainctl.bash");
    std::fs::write(&script, e.ok(&["completions", "bash"]).stdout).unwrap();
    let checked = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let r = e.run(&["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn man_pages_for_the_tool_and_every_command() {
    let e = Env::new();
    let page = e.ok(&["man"]).stdout;
    assert!(
        page.starts_with(".ie") || page.contains(".TH brainctl"),
        "{page:.300}"
    );
    assert!(page.contains("marketplace"), "{page:.300}");
    let dir = e.path("man1");
    let done = e
        .ok(&["--json", "man", "--out-dir", dir.to_str().unwrap()])
        .json();
    let pages: Vec<String> = done["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    for want in [
        "brainctl.1",
        "brainctl-marketplace.1",
        "brainctl-marketplace-buy.1",
        "brainctl-marketplace-listen.1",
        "brainctl-doctor.1",
    ] {
        assert!(pages.contains(&want.to_string()), "{want} in {pages:?}");
        let text = std::fs::read_to_string(dir.join(want)).unwrap();
        assert!(text.contains(".TH"), "{want}");
    }
    let buy = std::fs::read_to_string(dir.join("brainctl-marketplace-buy.1")).unwrap();
    assert!(
        buy.contains("timeout"),
        "the page carries the command's flags"
    );
}

/// The repository's systemd units, with ExecStart pointed at the built
/// binaries, pass `systemd-analyze verify` (the tool systemd itself
/// checks units with: unknown keys, bad values, a missing binary).
#[test]
fn the_systemd_units_verify() {
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_brainctl"))
        .parent()
        .unwrap()
        .to_path_buf();
    let units = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/systemd");
    let work = tempfile::tempdir().unwrap();
    for (unit, binary) in [
        ("brainctl-listen.service", "brainctl"),
        ("brainctl-indexer.service", "brainctl-indexer"),
    ] {
        let exe = bin_dir.join(binary);
        assert!(
            exe.exists(),
            "{} is not built (cargo build -p brainctl-indexer --bins)",
            exe.display()
        );
        let text = std::fs::read_to_string(units.join(unit)).unwrap();
        assert!(text.contains("ExecStart=/usr/local/bin/"), "{unit}");
        let local = text.replace("/usr/local/bin/", &format!("{}/", bin_dir.display()));
        let path = work.path().join(unit);
        std::fs::write(&path, local).unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&path)
            .output()
            .expect("systemd-analyze (package systemd) runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // only this unit's own findings count (the host's other units are not ours)
        let ours: Vec<&str> = stderr.lines().filter(|l| l.contains(unit)).collect();
        assert!(
            out.status.success() && ours.is_empty(),
            "{unit}: {:?}\n{stderr}",
            out.status
        );
    }
}

/// Offline, `doctor` names each failing part and what to do: the RPC that
/// does not answer, the wallet that does not exist (exit 1).
#[test]
fn doctor_says_what_to_fix() {
    let e = Env::new();
    let r = e.run(&[
        "--json",
        "-u",
        "http://127.0.0.1:9",
        "doctor",
        "--indexer",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v = r.json();
    let check = |name: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {v}"))
            .clone()
    };
    assert_eq!(check("rpc")["status"], "fail");
    assert!(check("rpc")["fix"].as_str().unwrap().contains("-u devnet"));
    assert_eq!(check("wallet")["status"], "fail");
    assert!(check("wallet")["fix"]
        .as_str()
        .unwrap()
        .contains("wallet new"));
    assert_eq!(check("store")["status"], "ok");
    assert_eq!(check("indexer")["status"], "warn");
    // the human form: one line per check, each failure with its fix
    let human = e.run(&[
        "-u",
        "http://127.0.0.1:9",
        "doctor",
        "--indexer",
        "http://127.0.0.1:9",
    ]);
    assert!(
        human.stdout.contains("FAIL  rpc") && human.stdout.contains("fix: "),
        "{}",
        human.stdout
    );
}

#[test]
fn the_global_agent_attributes_and_filters_as_the_reference_does() {
    let e = Env::new();
    e.ok(&["-a", "bob", "memory", "add", "bob's lesson", "-c", "lesson"]);
    e.ok(&[
        "memory",
        "add",
        "anyone's note",
        "-c",
        "project",
        "--agent",
        "carol",
    ]);
    e.ok(&["memory", "add", "unattributed", "-c", "project"]);
    let agents = |out: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(out).unwrap();
        let mut v: Vec<String> = v["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["agent_id"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let listed = |args: &[&str]| agents(&e.ok(args).stdout);
    assert_eq!(
        listed(&["--json", "memory", "list"]),
        ["bob", "carol", "default"]
    );
    assert_eq!(listed(&["--json", "-a", "bob", "memory", "list"]), ["bob"]);
    assert_eq!(
        listed(&["--json", "memory", "search", "note", "--agent", "carol"]),
        ["carol"]
    );
    // $AGENT_ID is the default, as in the reference
    let out = e
        .cmd()
        .env("AGENT_ID", "carol")
        .args(["--json", "memory", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(agents(&String::from_utf8_lossy(&out.stdout)), ["carol"]);
}

/// Runs `brainctl args` on a pseudo-terminal (util-linux `script`), in
/// `e`'s home; returns what the terminal showed.
fn on_a_terminal(e: &Env, args: &str) -> String {
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_brainctl"));
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(e.path(""))
        .env("HOME", e.path(""))
        .env_remove("BRAINCTL_DB")
        .env_remove("BRAINCTL_WALLET_PATH")
        .env_remove("AGENT_ID")
        .output()
        .expect("util-linux `script` runs (localnet/install's apt step installs bsdutils)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn long_operations_show_progress_on_a_terminal_only() {
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    for n in 0..20 {
        e.ok(&["memory", "add", &format!("lesson {n}"), "-c", "lesson"]);
    }
    let shown = on_a_terminal(&e, "export --sign -o a.signed.json");
    assert!(
        shown.contains("reading and signing the memories"),
        "{shown}"
    );
    assert!(shown.contains("signed 20 memories"), "{shown}");
    // scripts see none of it: not under --json, not through a pipe
    let json = on_a_terminal(&e, "--json export --sign --force -o b.signed.json");
    assert!(!json.contains("reading and signing"), "{json}");
    let piped = e.ok(&["export", "--sign", "--force", "-o", "c.signed.json"]);
    assert!(
        !piped.stderr.contains("reading and signing"),
        "{}",
        piped.stderr
    );
    let stored = on_a_terminal(&e, "storage put a.signed.json");
    assert!(stored.contains("uploading"), "{stored}");
}
