//! Test harness: a real `solana-test-validator` per test binary, on free
//! loopback ports with a temp ledger, healthy before tests run, and killed
//! when the test process ends (also on panic: `PR_SET_PDEATHSIG`).
//!
//! The binary comes from `localnet/install` (`$BRAINCTL_VALIDATOR_BIN`, or
//! the cache path). A missing binary fails the test with the fix; it is
//! never a skip.

pub mod browser;
pub mod cli_seller;
pub mod fake_gateway;
pub mod hostile;
pub mod indexer_api;
pub mod postgres;
pub mod proxy;
pub mod shop;
pub mod x402;

pub use shop::{fixed_price, Buyer, Shop, TestCatalog};

use node::chain::{parse_commitment, Chain, Endpoint, Keypair, Pubkey, Signer};
use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The agave version `localnet/install` builds.
pub const AGAVE_VERSION: &str = "4.2.2";

/// A running validator.
pub struct TestValidator {
    /// JSON-RPC URL.
    pub rpc_url: String,
    /// Websocket URL.
    pub ws_url: String,
    /// Ledger dir (kept for the process lifetime).
    pub ledger: PathBuf,
    /// The validator's pid.
    pub pid: u32,
    /// Its command line (a restart reuses it, without `--reset`).
    args: Vec<String>,
    /// Its binary.
    bin: PathBuf,
}

/// Where `localnet/install` puts the validator.
pub fn validator_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("BRAINCTL_VALIDATOR_BIN") {
        return p.into();
    }
    let cache = std::env::var_os("BRAINCTL_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/brainctl")
        });
    cache.join(format!(
        "validator-{AGAVE_VERSION}/bin/solana-test-validator"
    ))
}

fn port_free(p: u16) -> bool {
    TcpListener::bind(("127.0.0.1", p)).is_ok() && UdpSocket::bind(("127.0.0.1", p)).is_ok()
}

/// A base port with `span` consecutive free TCP+UDP ports after it.
fn free_port_block(span: u16) -> u16 {
    // blocks handed out by this process are never handed out again (two
    // validators started at once would otherwise both find the same block
    // free before either binds it); other processes start elsewhere (pid)
    static NEXT: std::sync::Mutex<Option<u16>> = std::sync::Mutex::new(None);
    let mut next = NEXT.lock().unwrap_or_else(|p| p.into_inner());
    let seed = std::process::id() as u64;
    let mut base = next.unwrap_or(20_000 + (seed.wrapping_mul(2_654_435_761) % 35_000) as u16);
    for _ in 0..200 {
        if base.checked_add(span).is_some_and(|end| end < 60_000)
            && (base..base + span).all(port_free)
        {
            *next = Some(base + span + 7);
            return base;
        }
        base = 20_000 + (base.saturating_sub(20_000) + span + 7) % 39_000;
    }
    panic!("no block of {span} free ports on 127.0.0.1");
}

static VALIDATOR: OnceLock<TestValidator> = OnceLock::new();

/// The validator of this test binary, started on first use, with the
/// Light programs and tree accounts loaded (as `localnet/up` does).
pub fn validator() -> &'static TestValidator {
    VALIDATOR.get_or_init(|| start(&[light_args(), test_dollar_args(), sol_usd_args()].concat()))
}

/// The test dollar's mint authority in the harness's validators (a fixed
/// key: the mint exists only on these throwaway validators).
pub fn test_dollar_authority() -> node::chain::Keypair {
    node::chain::Keypair::new_from_array([0xD0; 32])
}

/// `--account` flags loading the localnet's test dollar
/// (`node::chain::test_dollar`) with [`test_dollar_authority`] as its
/// mint authority, as `localnet/up` does with its own.
pub fn test_dollar_args() -> Vec<String> {
    use node::chain::{test_dollar, Signer};
    let file = scratch_dir("brainctl-test-dollar-").join("mint.json");
    let json = test_dollar::genesis_account_json(&test_dollar_authority().pubkey());
    std::fs::write(&file, json.to_string()).expect("test dollar genesis file");
    vec![
        "--account".into(),
        test_dollar::ADDRESS.to_string(),
        file.to_string_lossy().into_owned(),
    ]
}

/// USD per SOL in the harness's SOL/USD price account.
pub const SOL_USD: f64 = 150.0;

/// `--account` flags loading the localnet's SOL/USD price account
/// (`node::chain::test_price`, [`SOL_USD`], published now), as
/// `localnet/up` does.
pub fn sol_usd_args() -> Vec<String> {
    use node::chain::test_price;
    let file = scratch_dir("brainctl-sol-usd-").join("price.json");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let json = test_price::genesis_account_json(SOL_USD, now);
    std::fs::write(&file, json.to_string()).expect("SOL/USD genesis file");
    vec![
        "--account".into(),
        test_price::ADDRESS.to_string(),
        file.to_string_lossy().into_owned(),
    ]
}

/// `$env`, else `rel` in the cache dir `localnet/install` fills (the one
/// the validator is in).
fn cached(env: &str, rel: &str) -> PathBuf {
    std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        validator_bin()
            .ancestors()
            .nth(3)
            .expect("cache dir")
            .join(rel)
    })
}

/// Where `localnet/install` puts the npm tools (`BRAINCTL_NPM_DIR`, else
/// `<cache>/npm`).
fn npm_dir() -> PathBuf {
    cached("BRAINCTL_NPM_DIR", "npm")
}

/// `--bpf-program`/`--account-dir` flags loading the Light programs and
/// accounts from the npm `@lightprotocol/zk-compression-cli` that
/// `localnet/install` caches (program ids: DESIGN.md §Local network).
pub fn light_args() -> Vec<String> {
    let cli = npm_dir().join("node_modules/@lightprotocol/zk-compression-cli");
    assert!(
        cli.exists(),
        "{} missing: run ./localnet/install",
        cli.display()
    );
    let mut args = Vec::new();
    for (id, so) in [
        ("noopb9bkMVfRPU8AsbpTUg8AQkHtKwMYZiFUjNRtMmV", "spl_noop.so"),
        (
            "SySTEM1eSU2p4BGQfQpimFEWWSC1XDFeun3Nqzz3rT7",
            "light_system_program_pinocchio.so",
        ),
        (
            "cTokenmWW8bLPjZEBAUgYy3zKxQZW6VKi7bqNFEVv3m",
            "light_compressed_token.so",
        ),
        (
            "compr6CUsB5m2jS4Y3831ztGSTnDpnKJTKS95d64XVq",
            "account_compression.so",
        ),
        (
            "Lighton6oQpVkeewmo2mcPTQQp7kYHr4fWpAgJyEmDX",
            "light_registry.so",
        ),
    ] {
        args.push("--bpf-program".into());
        args.push(id.into());
        args.push(cli.join("bin").join(so).to_string_lossy().into_owned());
    }
    args.push("--account-dir".into());
    args.push(cli.join("accounts").to_string_lossy().into_owned());
    args
}

/// The escrow program's SBF build that `localnet/install` makes
/// (`$BRAINCTL_ESCROW_SO`, else `<cache>/sbf/escrow.so`); missing fails
/// the test and names the install step.
pub fn escrow_so() -> PathBuf {
    let so = cached("BRAINCTL_ESCROW_SO", "sbf/escrow.so");
    assert!(
        so.is_file(),
        "{} missing: run ./localnet/install (its step localnet/install-sbf builds the escrow program)",
        so.display()
    );
    so
}

/// `--upgradeable-program` flags deploying the escrow program's SBF build
/// at genesis with `authority` as its upgrade authority (who alone may
/// configure it), as `localnet/up` does.
pub fn escrow_args(authority: &Pubkey) -> Vec<String> {
    vec![
        "--upgradeable-program".into(),
        node::escrow::PROGRAM_ID.into(),
        escrow_so().to_string_lossy().into_owned(),
        authority.to_string(),
    ]
}

/// A directory for a service this test process starts (a ledger, a
/// gateway's database, a PostgreSQL cluster), kept until the process ends:
/// the services die with it (no destructor runs), so each directory names
/// its owner (`owner.pid`) and every new one first removes the directories
/// of owners that are gone. Without this each run leaves gigabytes of
/// ledgers in the temp dir.
pub fn scratch_dir(prefix: &str) -> std::path::PathBuf {
    sweep_scratch();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("temp dir")
        .keep();
    std::fs::write(dir.join("owner.pid"), std::process::id().to_string()).expect("owner.pid");
    dir
}

/// Removes scratch dirs whose owning process has exited.
fn sweep_scratch() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !["brainctl-ledger-", "brainctl-arlocal-", "brainctl-pg-"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                continue;
            }
            let owner = std::fs::read_to_string(e.path().join("owner.pid"))
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok());
            // directories from before owner.pid existed count as orphans
            let alive = owner.is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0);
            if !alive {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
}

/// Spawns `cmd` (output to `log`) so that it dies exactly when this test
/// process does: spawned, with PR_SET_PDEATHSIG armed, from a thread that
/// lives as long as the process. Returns the pid.
fn spawn_owned(mut cmd: Command, log: &std::path::Path, what: &'static str) -> u32 {
    let (tx, rx) = std::sync::mpsc::channel();
    let out = std::fs::File::create(log).expect("log file");
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone().expect("dup"))
        .stderr(out);
    std::thread::spawn(move || {
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        tx.send(child.id()).expect("report pid");
        let status = child.wait();
        eprintln!("{what} exited: {status:?}");
        loop {
            std::thread::park();
        }
    });
    rx.recv().expect("child pid")
}

/// A running local Arweave gateway (`arlocal`).
pub struct TestGateway {
    /// Base URL.
    pub url: String,
}

static GATEWAY: OnceLock<TestGateway> = OnceLock::new();

/// The arlocal of this test binary (from `localnet/install`'s npm dir),
/// started on a free port with a temp database on first use.
pub fn gateway() -> &'static TestGateway {
    GATEWAY.get_or_init(|| {
        let script = npm_dir().join("node_modules/arlocal/bin/index.js");
        assert!(
            script.exists(),
            "arlocal not found at {}: run ./localnet/install",
            script.display()
        );
        let port = free_port_block(1);
        let dir = scratch_dir("brainctl-arlocal-");
        let mut cmd = Command::new("node");
        cmd.arg(&script)
            .arg(port.to_string())
            .arg("--hidelogs")
            .args(["--dbpath", "db"])
            .current_dir(&dir);
        spawn_owned(cmd, &dir.join("arlocal.log"), "arlocal");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "arlocal did not start; see {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        TestGateway { url }
    })
}

/// Starts a validator with extra arguments (e.g. `--bpf-program`).
pub fn start(extra: &[String]) -> TestValidator {
    start_with(&validator_bin(), extra)
}

/// [`start`] with another `solana-test-validator` binary.
pub fn start_with(bin: &std::path::Path, extra: &[String]) -> TestValidator {
    let bin = bin.to_path_buf();
    assert!(
        bin.exists(),
        "solana-test-validator not found at {}: run ./localnet/install (builds agave-validator {AGAVE_VERSION} into the cache, ~20-40 min once)",
        bin.display()
    );
    let base = free_port_block(120);
    let (rpc, faucet, gossip) = (base, base + 2, base + 3);
    let dyn_range = format!("{}-{}", base + 10, base + 119);
    let ledger = scratch_dir("brainctl-ledger-");
    let log = ledger.join("validator.log");
    let mut args: Vec<String> = [
        "--ledger",
        ledger.to_str().expect("utf-8 path"),
        "--rpc-port",
        &rpc.to_string(),
        "--faucet-port",
        &faucet.to_string(),
        "--gossip-port",
        &gossip.to_string(),
        "--dynamic-port-range",
        &dyn_range,
        "--bind-address",
        "127.0.0.1",
        "--reset",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().cloned());
    let mut cmd = Command::new(&bin);
    cmd.args(&args);
    let pid = spawn_owned(cmd, &log, "solana-test-validator");
    let rpc_url = format!("http://127.0.0.1:{rpc}");
    let v = TestValidator {
        ws_url: format!("ws://127.0.0.1:{}", rpc + 1),
        rpc_url,
        ledger,
        pid,
        args,
        bin,
    };
    v.wait_healthy(&log);
    v
}

/// CPU seconds `pid` has used (user + system), from /proc (0 when it is
/// gone).
pub fn cpu_seconds(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // the fields after the command's closing parenthesis
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / 100.0)
        })
        .unwrap_or(0.0)
}

/// The test validator's banking scheduler busy-polls for transactions
/// whenever it is leader (agave 4.2's `receive_and_buffer` blocks only
/// when it is not), and a one-validator localnet is always leader: a whole
/// core of a 2-core machine spent waiting. Nice 19 on that one thread
/// (`solBnkTxSched`) lets the work it would starve run first (the
/// validator's other stages, the RPC, the services under test); it still
/// gets every idle cycle. `BRAINCTL_VALIDATOR_SCHED_NICE` sets the value
/// (0 leaves the thread alone). `localnet/up` does the same.
fn nice_busy_scheduler(pid: u32) {
    let nice: i32 = std::env::var("BRAINCTL_VALIDATOR_SCHED_NICE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(19);
    if nice == 0 {
        return;
    }
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != "solBnkTxSched" {
            continue;
        }
        if let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        {
            // a thread id is a PRIO_PROCESS target on Linux
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) };
        }
    }
}

impl TestValidator {
    /// Kills the validator (SIGKILL, as a crash) and starts it again on the
    /// same ledger and ports; returns once it is healthy. What clients see
    /// is a validator restart mid-run: refused connections, then the same
    /// chain, continued. Everything confirmed before the call is rooted
    /// first: a lone validator killed before its newest slots are rooted
    /// restarts without them (a cluster would keep them), and a test's
    /// funding lost that way is not what it means to test.
    pub fn restart(&mut self) {
        self.wait_rooted();
        unsafe { libc::kill(self.pid as i32, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while unsafe { libc::kill(self.pid as i32, 0) } == 0 {
            assert!(Instant::now() < deadline, "the validator did not die");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args: Vec<&String> = self.args.iter().filter(|a| *a != "--reset").collect();
        let log = self.ledger.join("validator-restarted.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut cmd = Command::new(&self.bin);
            cmd.args(&args);
            self.pid = spawn_owned(cmd, &log, "solana-test-validator (restarted)");
            std::thread::sleep(Duration::from_secs(2));
            // the old process's ports can take a moment to free
            if unsafe { libc::kill(self.pid as i32, 0) } == 0 || Instant::now() > deadline {
                break;
            }
        }
        self.wait_healthy(&log);
    }

    /// Waits (up to 60 s) until the slot confirmed now is finalized.
    fn wait_rooted(&self) {
        let rt = runtime();
        let chain = self.chain();
        let confirmed = rt
            .block_on(
                chain.rpc().get_slot_with_commitment(
                    solana_commitment_config::CommitmentConfig::confirmed(),
                ),
            )
            .expect("the confirmed slot");
        let deadline = Instant::now() + Duration::from_secs(60);
        while rt
            .block_on(
                chain.rpc().get_slot_with_commitment(
                    solana_commitment_config::CommitmentConfig::finalized(),
                ),
            )
            .is_ok_and(|rooted| rooted < confirmed)
        {
            assert!(
                Instant::now() < deadline,
                "slot {confirmed} was not finalized within 60 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn wait_healthy(&self, log: &std::path::Path) {
        let rt = runtime();
        let chain = self.chain();
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let ok = rt.block_on(async {
                chain.rpc().get_health().await.is_ok()
                    && chain.rpc().get_slot().await.is_ok_and(|s| s > 0)
            });
            if ok {
                nice_busy_scheduler(self.pid);
                return;
            }
            let alive = unsafe { libc::kill(self.pid as i32, 0) } == 0;
            if !alive || Instant::now() > deadline {
                let tail = std::fs::read_to_string(log).unwrap_or_default();
                let tail: String = tail
                    .lines()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                panic!("solana-test-validator did not become healthy (alive: {alive}); log tail:\n{tail}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A chain handle at `confirmed` (localnet).
    pub fn chain(&self) -> Chain {
        Chain::new(
            Endpoint {
                rpc_url: self.rpc_url.clone(),
                ws_url: self.ws_url.clone(),
            },
            parse_commitment("confirmed").expect("valid"),
            &[node::escrow::PROGRAM_ID],
        )
    }

    /// Mints `usd` test dollars to `to`'s associated account (the
    /// validator must have been started with [`test_dollar_args`]).
    pub fn fund_dollars(&self, to: &Pubkey, usd: u64) {
        use node::chain::test_dollar;
        self.mint_tokens(
            &test_dollar::mint(),
            to,
            usd * test_dollar::UNITS_PER_DOLLAR,
        );
    }

    /// Mints `units` of `mint` (one whose authority is
    /// [`test_dollar_authority`]: the test dollar, or [`Self::create_mint`]'s)
    /// to `to`'s associated account.
    pub fn mint_tokens(&self, mint: &node::chain::token::TokenMint, to: &Pubkey, units: u64) {
        use node::chain::{test_dollar, Signer};
        let authority = test_dollar_authority();
        let chain = self.chain();
        let rt = runtime();
        if rt
            .block_on(chain.balance(&authority.pubkey()))
            .expect("balance")
            < 100_000_000
        {
            self.fund(&authority.pubkey(), 10);
        }
        rt.block_on(chain.send(
            &test_dollar::mint_to(&authority.pubkey(), to, mint, units),
            &[&authority],
        ))
        .expect("mint tokens");
    }

    /// A new SPL Token mint of `decimals` whose authority is
    /// [`test_dollar_authority`].
    pub fn create_mint(&self, decimals: u8) -> Pubkey {
        self.create_mint_with(decimals, None)
    }

    /// [`Self::create_mint`] with `freeze_authority` (who may freeze any
    /// account of the mint).
    pub fn create_mint_with(&self, decimals: u8, freeze_authority: Option<&Pubkey>) -> Pubkey {
        use node::chain::{Keypair, Signer};
        let authority = test_dollar_authority();
        self.fund(&authority.pubkey(), 1);
        let mint = Keypair::new();
        let token: Pubkey = node::chain::parsed_tx::TOKEN_PROGRAM
            .parse()
            .expect("token program id");
        let chain = self.chain();
        let rt = runtime();
        let rent = rt.block_on(chain.rent_exemption(82)).expect("rent");
        let ixs = [
            solana_system_interface::instruction::create_account(
                &authority.pubkey(),
                &mint.pubkey(),
                rent,
                82,
                &token,
            ),
            spl_token_2022_interface::instruction::initialize_mint2(
                &token,
                &mint.pubkey(),
                &authority.pubkey(),
                freeze_authority,
                decimals,
            )
            .expect("initialize_mint2"),
        ];
        rt.block_on(chain.send(&ixs, &[&authority, &mint]))
            .expect("create mint");
        mint.pubkey()
    }

    /// A Token-2022 mint at `mint`'s address (6 decimals), `authority`
    /// its mint and close authority, and its permanent delegate too when
    /// `permanent_delegate`: what a hostile issuer makes, closes (supply
    /// 0) and makes again with other extensions at the same address.
    pub fn create_token_2022_mint(
        &self,
        mint: &Keypair,
        authority: &Keypair,
        permanent_delegate: bool,
    ) -> node::chain::token::TokenMint {
        use spl_token_2022_interface::extension::ExtensionType;
        use spl_token_2022_interface::instruction as t22;
        let program = spl_token_2022_interface::ID;
        let mut kinds = vec![ExtensionType::MintCloseAuthority];
        if permanent_delegate {
            kinds.push(ExtensionType::PermanentDelegate);
        }
        let space =
            ExtensionType::try_calculate_account_len::<spl_token_2022_interface::state::Mint>(
                &kinds,
            )
            .expect("mint length");
        let (chain, rt) = (self.chain(), runtime());
        let rent = rt.block_on(chain.rent_exemption(space)).expect("rent");
        let mut ixs = vec![
            solana_system_interface::instruction::create_account(
                &authority.pubkey(),
                &mint.pubkey(),
                rent,
                space as u64,
                &program,
            ),
            t22::initialize_mint_close_authority(
                &program,
                &mint.pubkey(),
                Some(&authority.pubkey()),
            )
            .expect("close authority"),
        ];
        if permanent_delegate {
            ixs.push(
                t22::initialize_permanent_delegate(&program, &mint.pubkey(), &authority.pubkey())
                    .expect("permanent delegate"),
            );
        }
        ixs.push(
            t22::initialize_mint2(&program, &mint.pubkey(), &authority.pubkey(), None, 6)
                .expect("initialize_mint2"),
        );
        rt.block_on(chain.send(&ixs, &[authority, mint]))
            .expect("create the Token-2022 mint");
        node::chain::token::TokenMint {
            address: mint.pubkey(),
            program,
            decimals: 6,
        }
    }

    /// Makes `owner`'s associated Token-2022 account of `mint` require a
    /// memo before every incoming transfer (`MemoTransfer`), as its owner
    /// may at any time; `payer` pays the fee.
    pub fn require_transfer_memos(
        &self,
        owner: &Keypair,
        mint: &node::chain::token::TokenMint,
        payer: &Keypair,
    ) {
        use spl_token_2022_interface::extension::memo_transfer::instruction::enable_required_transfer_memos;
        let account = node::chain::token::associated_account(&owner.pubkey(), mint);
        let ix = enable_required_transfer_memos(
            &spl_token_2022_interface::ID,
            &account,
            &owner.pubkey(),
            &[],
        )
        .expect("memo transfer instruction");
        // room for the extension first
        let grow = spl_token_2022_interface::instruction::reallocate(
            &spl_token_2022_interface::ID,
            &account,
            &payer.pubkey(),
            &owner.pubkey(),
            &[],
            &[spl_token_2022_interface::extension::ExtensionType::MemoTransfer],
        )
        .expect("reallocate instruction");
        runtime()
            .block_on(self.chain().send(&[grow, ix], &[payer, owner]))
            .expect("require transfer memos");
    }

    /// Closes the Token-2022 mint `mint` (its supply 0) by its close
    /// authority `authority`, its rent to `authority`.
    pub fn close_token_2022_mint(&self, mint: &Pubkey, authority: &Keypair) {
        let ix = spl_token_2022_interface::instruction::close_account(
            &spl_token_2022_interface::ID,
            mint,
            &authority.pubkey(),
            &authority.pubkey(),
            &[],
        )
        .expect("close_account");
        runtime()
            .block_on(self.chain().send(&[ix], &[authority]))
            .expect("close the mint");
    }

    /// Airdrops `sol` to `to` and waits for it.
    pub fn fund(&self, to: &Pubkey, sol: u64) {
        let chain = self.chain();
        runtime()
            .block_on(chain.airdrop(to, sol * 1_000_000_000))
            .expect("airdrop");
    }

    /// Waits until the chain's clock (the block time of the latest
    /// confirmed slot) has reached `unix` (a local validator's clock can
    /// lag the wall clock); panics after 60 s, or thrice the distance
    /// the chain's clock first had to go, whichever is longer.
    pub fn wait_block_time(&self, unix: i64) {
        let chain = self.chain();
        let start = std::time::Instant::now();
        // 60 s, and thrice the chain's distance to `unix` (a validator on a
        // loaded machine makes slots slower than its clock's 400 ms)
        let mut deadline = start + Duration::from_secs(60);
        let mut first = true;
        runtime().block_on(async {
            loop {
                let rpc = chain.rpc();
                if let Ok(slot) = rpc.get_slot().await {
                    if let Ok(t) = rpc.get_block_time(slot).await {
                        if t >= unix {
                            return;
                        }
                        if std::mem::take(&mut first) {
                            let behind = (unix - t).max(0) as u64;
                            deadline = deadline.max(start + Duration::from_secs(3 * behind));
                        }
                    }
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the chain's clock did not reach {unix}"
                );
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
        });
    }

    /// A new funded keypair.
    pub fn funded_keypair(&self, sol: u64) -> Keypair {
        let k = Keypair::new();
        self.fund(&k.pubkey(), sol);
        k
    }
}

/// The address a service started with `--listen 127.0.0.1:0` bound, read
/// from its log (`... serving listen=<addr> ...`, plain text: the binaries
/// colour only terminals), waited for up to 90 s (an indexer reads the
/// cluster before it binds; with three validators busy on two cores that
/// once took over 30 s, its log still empty).
pub fn logged_listen_address(log: &std::path::Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(addr) = text
            .lines()
            .find(|l| l.contains("serving"))
            .and_then(|l| l.split("listen=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
        {
            return addr.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never said where it listens:\n{text}",
            log.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A venv under the brainctl cache (`$BRAINCTL_CACHE`, default
/// ~/.cache/brainctl) or at `$override_var`: its python. `localnet/install`
/// creates it, so a missing venv fails the test and names that step (a
/// test never passes by skipping).
fn cached_venv_python(override_var: &str, dir: &str, what: &str) -> PathBuf {
    let cache = std::env::var_os("BRAINCTL_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/brainctl")));
    let venv = std::env::var_os(override_var)
        .map(PathBuf::from)
        .or_else(|| cache.map(|c| c.join(dir)))
        .expect("HOME or BRAINCTL_CACHE is set");
    let py = venv.join("bin/python");
    assert!(
        py.exists(),
        "{what} is missing ({} not found): run ./localnet/install (it creates {dir}; or set {override_var})",
        py.display()
    );
    py
}

/// The reference venv's python (Python brainctl 2.8.0): ref-venv, or
/// BRAINCTL_REF_VENV.
pub fn ref_python() -> PathBuf {
    cached_venv_python("BRAINCTL_REF_VENV", "ref-venv", "the reference venv")
}

/// The MCP client venv's python (the `mcp` SDK from PyPI): mcp-venv, or
/// BRAINCTL_MCP_VENV.
pub fn mcp_python() -> PathBuf {
    cached_venv_python("BRAINCTL_MCP_VENV", "mcp-venv", "the MCP client venv")
}

/// Headless Chromium (Debian `chromium`, or `$BRAINCTL_CHROMIUM`);
/// `localnet/install` installs it, so a missing one fails the test.
pub fn chromium() -> PathBuf {
    let found = std::env::var_os("BRAINCTL_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        })
        .filter(|p| p.exists());
    found.expect("chromium is missing: run ./localnet/install (it installs Debian's chromium; or set BRAINCTL_CHROMIUM)")
}

/// The reference's own CLI (`brainctl` of the reference venv) over a
/// `brain.db` of its own making, as an agent on Python brainctl has it.
pub struct RefBrain {
    bin: PathBuf,
    /// Its `BRAINCTL_HOME`.
    pub home: PathBuf,
    /// Its `brain.db` (`BRAINCTL_DB`).
    pub db: PathBuf,
}

impl RefBrain {
    /// `brainctl init` of a new brain.db in `home` (the reference venv
    /// must be installed, as [`ref_python`]).
    pub fn init(home: &std::path::Path) -> RefBrain {
        let bin = ref_python()
            .parent()
            .expect("the venv's bin dir")
            .join("brainctl");
        std::fs::create_dir_all(home).expect("brain home");
        let brain = RefBrain {
            bin,
            home: home.to_path_buf(),
            db: home.join("brain.db"),
        };
        brain.json(&["init"]);
        brain
    }

    /// `brainctl <args>` on its brain.db, which must succeed with JSON.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        self.json_on(&self.db, args)
    }

    /// The same on another brain.db (e.g. a copy to search: searches update rows).
    pub fn json_on(&self, db: &std::path::Path, args: &[&str]) -> serde_json::Value {
        let out = Command::new(&self.bin)
            .args(args)
            .env("BRAINCTL_DB", db)
            .env("BRAINCTL_HOME", &self.home)
            .output()
            .expect("run the reference brainctl");
        assert!(
            out.status.success(),
            "reference brainctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
            panic!(
                "reference brainctl {args:?}: {err}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

/// A child process killed (SIGKILL) and reaped when the guard drops, so a
/// failing test leaves nothing running.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A small runtime for blocking test code.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A two-worker runtime, for tests whose tasks must run beside the one
/// that blocks (a daemon loop, an API server).
pub fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The `p` quantile (0..=1, nearest rank) of `sorted`; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}
