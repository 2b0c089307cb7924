//! Test harness: runs the real `brainctl` binary in a fresh temp home.
#![allow(dead_code)] // each test binary uses a different subset

pub mod escrow;
pub mod mcp;
pub mod services;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[derive(Default)]
pub struct Env {
    pub dir: TempHome,
    /// Environment variables every command of this home gets.
    pub vars: Vec<(String, String)>,
}

/// A temp dir that is the test's $HOME.
pub struct TempHome(tempfile::TempDir);

impl Default for TempHome {
    fn default() -> Self {
        TempHome(tempfile::tempdir().expect("temp dir"))
    }
}

impl TempHome {
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// This home, its commands run with `vars` set.
    pub fn with_vars(mut self, vars: &[(&str, &str)]) -> Env {
        self.vars
            .extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_brainctl"));
        c.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("BRAINCTL_DB")
            .env_remove("BRAIN_DB")
            .env_remove("BRAINCTL_WALLET_PATH")
            .env_remove("RUST_LOG")
            .env_remove("AGENT_ID")
            .envs(self.vars.iter().map(|(k, v)| (k, v)));
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let out: Output = self.cmd().args(args).output().expect("brainctl runs");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs against the chain at `rpc` (confirmed), asserts exit 0 and
    /// returns stdout as JSON (`args` should carry `--json`).
    pub fn ok_on(&self, rpc: &str, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["-u", rpc, "--commitment", "confirmed"];
        full.extend_from_slice(args);
        self.ok(&full).json()
    }

    /// Runs and asserts exit 0.
    pub fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(
            r.code, 0,
            "brainctl {args:?} failed:\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r
    }
}

/// A seller and a buyer, each with a new wallet funded with 2 SOL on
/// `rpc`, and a work dir whose `items` dir is the item store they share.
pub fn funded_pair(rpc: &str) -> (Env, Env, tempfile::TempDir, String) {
    let (seller, buyer) = (Env::new(), Env::new());
    let work = tempfile::tempdir().unwrap();
    let items = work.path().join("items").display().to_string();
    for e in [&seller, &buyer] {
        e.ok(&["wallet", "new"]);
        e.ok_on(rpc, &["wallet", "airdrop", "2", "--json"]);
    }
    (seller, buyer, work, items)
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/interop")
        .join(name)
}
