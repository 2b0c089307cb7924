//! Running the Anchor program natively in `solana-program-test` 4.2.2.
//!
//! Anchor 1.2.2 reaches sysvars and CPI through `solana-sysvar` 3.1's
//! syscall stubs, while program-test installs its stubs into
//! `solana-sysvar` 4.1 only; the 3.1 defaults answer "unsupported sysvar"
//! and turn every CPI into a silent no-op. [`start`] installs an adapter
//! that forwards each 3.1 stub to program-test's, so the program sees the
//! same bank either way.
#![allow(dead_code)] // each test binary uses a different subset

use solana_program_test::{processor, ProgramTest, ProgramTestContext};
use solana_sdk::account_info::AccountInfo;
use solana_sdk::entrypoint::ProgramResult;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sysvar_v3::program_stubs as v3;
use solana_sysvar_v4::program_stubs as v4;
use std::sync::{Arc, Once};

/// Anchor's entry ties every lifetime to `'info`; the native runtime
/// passes shorter ones, and keeps the values alive for the call.
pub fn process(program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> ProgramResult {
    let accounts: &[AccountInfo<'static>] = unsafe { std::mem::transmute(accounts) };
    let program_id: &'static Pubkey = Box::leak(Box::new(*program_id));
    let data: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
    escrow::entry(program_id, accounts, data)
}

/// program-test's stubs, shared by both stub slots.
struct Shared(Arc<Box<dyn v4::SyscallStubs>>);

/// Implements each stub trait by forwarding every method to program-test's.
macro_rules! bridge {
    (@methods $($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        fn $name(&self, $($arg: $ty),*) -> $ret { self.0.$name($($arg),*) }
    )*};
    ($($stubs:path),*) => {$(
        impl $stubs for Shared {
            bridge!(@methods
                sol_log(m: &str) -> ();
                sol_log_compute_units() -> ();
                sol_remaining_compute_units() -> u64;
                sol_invoke_signed(i: &Instruction, a: &[AccountInfo], s: &[&[&[u8]]]) -> ProgramResult;
                sol_get_sysvar(id: *const u8, var: *mut u8, off: u64, len: u64) -> u64;
                sol_get_clock_sysvar(var: *mut u8) -> u64;
                sol_get_epoch_schedule_sysvar(var: *mut u8) -> u64;
                sol_get_fees_sysvar(var: *mut u8) -> u64;
                sol_get_rent_sysvar(var: *mut u8) -> u64;
                sol_get_epoch_rewards_sysvar(var: *mut u8) -> u64;
                sol_get_last_restart_slot(var: *mut u8) -> u64;
                sol_get_epoch_stake(vote: *const u8) -> u64;
                sol_get_return_data() -> Option<(Pubkey, Vec<u8>)>;
                sol_set_return_data(d: &[u8]) -> ();
                sol_log_data(f: &[&[u8]]) -> ();
                sol_get_processed_sibling_instruction(i: usize) -> Option<Instruction>;
                sol_get_stack_height() -> u64;
            );
        }
    )*};
}

bridge!(v4::SyscallStubs, v3::SyscallStubs);

/// The SBF build of the program to run instead of the native one:
/// `BRAINCTL_ESCROW_SO` (what `localnet/install-sbf` builds, e.g.
/// `~/.cache/brainctl/sbf/escrow.so`), or `None` to run natively.
pub fn sbf_program() -> Option<std::path::PathBuf> {
    let so = std::path::PathBuf::from(std::env::var_os("BRAINCTL_ESCROW_SO")?);
    assert!(
        so.is_file(),
        "BRAINCTL_ESCROW_SO={} is not a file (build it with localnet/install-sbf)",
        so.display()
    );
    Some(so)
}

/// Starts `pt` (with the escrow program added: the SBF `.so` of
/// [`sbf_program`] under the BPF loader, else natively) and bridges the
/// stubs.
pub async fn start(mut pt: ProgramTest) -> ProgramTestContext {
    match sbf_program() {
        Some(so) => {
            let elf = std::fs::read(&so).expect("read the program");
            pt.add_account(
                escrow::ID,
                solana_sdk::account::Account {
                    lamports: solana_sdk::rent::Rent::default()
                        .minimum_balance(elf.len())
                        .max(1),
                    data: elf,
                    owner: solana_sdk::pubkey!("BPFLoader2111111111111111111111111111111111"),
                    executable: true,
                    rent_epoch: 0,
                },
            );
        }
        None => pt.add_program("escrow", escrow::ID, processor!(process)),
    }
    let ctx = pt.start_with_context().await;
    static BRIDGE: Once = Once::new();
    BRIDGE.call_once(|| {
        struct Placeholder;
        impl v4::SyscallStubs for Placeholder {}
        let theirs = v4::set_syscall_stubs(Box::new(Placeholder));
        let shared = Arc::new(theirs);
        v4::set_syscall_stubs(Box::new(Shared(shared.clone())));
        v3::set_syscall_stubs(Box::new(Shared(shared)));
    });
    ctx
}

/// Adds the ProgramData account an upgradeable deploy of the program
/// creates (bincode `UpgradeableLoaderState::ProgramData`), with
/// `authority` as its upgrade authority.
/// The upgradeable loader.
pub const UPGRADEABLE_LOADER: Pubkey =
    solana_sdk::pubkey!("BPFLoaderUpgradeab1e11111111111111111111111");

/// The program's ProgramData address.
pub fn program_data_address() -> Pubkey {
    Pubkey::find_program_address(&[escrow::ID.as_ref()], &UPGRADEABLE_LOADER).0
}

pub fn add_program_data(pt: &mut ProgramTest, authority: Option<&Pubkey>) {
    let mut data = 3u32.to_le_bytes().to_vec(); // variant ProgramData
    data.extend_from_slice(&0u64.to_le_bytes()); // slot
    match authority {
        Some(a) => {
            data.push(1);
            data.extend_from_slice(a.as_ref());
        }
        None => data.push(0),
    }
    pt.add_account(
        program_data_address(),
        solana_sdk::account::Account {
            lamports: 1_000_000_000,
            data,
            owner: UPGRADEABLE_LOADER,
            executable: false,
            rent_epoch: 0,
        },
    );
}

/// The code of `e` as a transaction reports it.
pub fn code(e: escrow::error::EscrowError) -> u32 {
    anchor_lang::error::ERROR_CODE_OFFSET + e as u32
}

/// The custom error of a failed transaction (Anchor's or a called
/// program's); panics on anything else.
pub fn custom<T: std::fmt::Debug>(res: Result<T, solana_program_test::BanksClientError>) -> u32 {
    use solana_program_test::BanksClientError;
    use solana_sdk::instruction::InstructionError;
    use solana_sdk::transaction::TransactionError;
    match res {
        Err(BanksClientError::TransactionError(TransactionError::InstructionError(
            _,
            InstructionError::Custom(c),
        ))) => c,
        other => panic!("expected a custom program error, got {other:?}"),
    }
}

/// A party: its wallet and X25519 secret.
pub struct Party {
    pub key: solana_sdk::signature::Keypair,
    pub x_secret: [u8; 32],
}

impl Party {
    pub fn new(x: u8) -> Party {
        Party {
            key: solana_sdk::signature::Keypair::new(),
            x_secret: [x; 32],
        }
    }
    pub fn x_public(&self) -> [u8; 32] {
        curve25519_dalek::MontgomeryPoint::mul_base_clamped(self.x_secret).to_bytes()
    }
}

/// Bytes of the transaction a buyer's client sends with `ix`: the buyer
/// signs and pays alone, with a compute-unit limit and price beside it
/// (what the node's `Chain::send` adds).
pub fn buyer_tx_len(ix: Instruction, buyer: &solana_sdk::signature::Keypair) -> usize {
    use solana_sdk::signature::Signer;
    let budget = solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111");
    let mut limit = vec![2u8];
    limit.extend_from_slice(&200_000u32.to_le_bytes());
    let mut price = vec![3u8];
    price.extend_from_slice(&1_000u64.to_le_bytes());
    let budget_ix = |data| Instruction {
        program_id: budget,
        accounts: vec![],
        data,
    };
    let tx = solana_sdk::transaction::Transaction::new_signed_with_payer(
        &[budget_ix(limit), budget_ix(price), ix],
        Some(&buyer.pubkey()),
        &[buyer],
        solana_sdk::hash::Hash::default(),
    );
    1 + 64 * tx.signatures.len() + tx.message_data().len()
}
