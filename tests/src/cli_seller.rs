//! A seller's home driven through the real `brainctl` binary, as the
//! benchmarks set it up: wallet, memories, a signed bundle, listings, and
//! `marketplace listen` as a service. Never reaches into the node's
//! library for what the binary does.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The seller: its home directory, the binary, the RPC it talks to.
pub struct Seller {
    /// `HOME` of every run.
    pub home: tempfile::TempDir,
    /// The `brainctl` binary.
    pub bin: PathBuf,
    /// RPC URL.
    pub rpc: String,
}

impl Seller {
    /// A fresh home for `bin` on `rpc`.
    pub fn new(bin: PathBuf, rpc: &str) -> Seller {
        Seller {
            home: tempfile::tempdir().expect("home"),
            bin,
            rpc: rpc.into(),
        }
    }

    /// Runs `brainctl args` (at `confirmed`); panics unless it succeeds;
    /// its `--json` output, if any.
    pub fn run(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.bin)
            .env("HOME", self.home.path())
            .current_dir(self.home.path())
            .args(["-u", &self.rpc, "--commitment", "confirmed"])
            .args(args)
            .output()
            .expect("brainctl runs");
        assert!(
            out.status.success(),
            "brainctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// The storage directory (the local Arweave stand-in).
    pub fn items(&self) -> String {
        self.home.path().join("items").display().to_string()
    }

    /// `marketplace listen` as a service (its stdout dropped; its log
    /// dropped too unless `BRAINCTL_LISTEN_LOG` names a file, where it
    /// goes at `RUST_LOG`, default `info`), killed when the guard drops (a
    /// panicking benchmark leaves nothing running).
    pub fn listen(&self) -> Listening {
        self.listen_with(&[])
    }

    /// [`Seller::listen`] with `extra` flags (e.g. `--receipt none`).
    pub fn listen_with(&self, extra: &[&str]) -> Listening {
        let log = std::env::var_os("BRAINCTL_LISTEN_LOG");
        let stderr = match &log {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("BRAINCTL_LISTEN_LOG")),
            None => Stdio::null(),
        };
        let level = match &log {
            Some(_) => std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            None => "warn".into(),
        };
        Listening(
            Command::new(&self.bin)
                .env("HOME", self.home.path())
                .env("RUST_LOG", level)
                .args(["-u", &self.rpc, "--commitment", "confirmed"])
                .args(["marketplace", "listen", "--interval", "2", "--storage-dir"])
                .arg(self.items())
                .args(extra)
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .expect("listen starts"),
        )
    }

    /// The daemon's state database.
    pub fn db(&self) -> PathBuf {
        self.home.path().join(".brainctl/listen.db")
    }

    /// `memory` added, exported, signed and listed at 1 USD (100 USD/SOL)
    /// with `extra` `list` flags; `list`'s JSON.
    pub fn list_memory(&self, memory: &str, extra: &[&str]) -> Value {
        self.run(&["memory", "add", memory, "-c", "lesson"]);
        self.run(&["export", "--sign", "-o", "b.signed.json"]);
        let items = self.items();
        let mut args = vec![
            "marketplace",
            "list",
            "b.signed.json",
            "--price-usd",
            "1",
            "--sol-usd",
            "100",
            "--storage-dir",
            &items,
            "--json",
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// A new wallet; its address.
    pub fn new_wallet(&self) -> node::chain::Pubkey {
        self.run(&["wallet", "new", "--json"])["address"]
            .as_str()
            .expect("address")
            .parse()
            .expect("pubkey")
    }
}

/// Funds `wallets` from `whale`, 20 transfers a transaction.
pub fn fund_all(
    rt: &tokio::runtime::Runtime,
    chain: &node::chain::Chain,
    whale: &node::chain::Keypair,
    wallets: &[node::wallet::Wallet],
    lamports: u64,
) {
    use node::chain::Signer;
    for chunk in wallets.chunks(20) {
        let ixs: Vec<_> = chunk
            .iter()
            .map(|w| {
                node::chain::instructions::transfer(
                    &whale.pubkey(),
                    &w.solana_keypair().pubkey(),
                    lamports,
                )
            })
            .collect();
        rt.block_on(chain.send(&ixs, &[whale])).expect("funding");
    }
}

/// The `listen` service of [`Seller::listen`].
pub struct Listening(Child);

impl Listening {
    /// Its process id.
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        self.0.try_wait().expect("wait").is_some()
    }

    /// SIGTERM to the process itself, then its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        self.0.wait().expect("listen")
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
