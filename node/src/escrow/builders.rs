//! Instruction builders of the escrow program: Anchor discriminator +
//! Borsh arguments, account metas in the order of each `Accounts` struct
//! of `programs/escrow/src/sealed/`.

use super::{
    escrow_address, event_authority_address, listing_address, program_data_address, program_id,
    settings_address, vault_address, Terms, SYSTEM,
};
use crate::chain::token::{associated_account, TokenMint, ATA_PROGRAM};
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;

/// Borsh encoding of the argument types the program uses.
struct Args(Vec<u8>);

impl Args {
    fn new(ix: &str) -> Args {
        Args(super::discriminator("global", ix).to_vec())
    }
    fn bytes(mut self, b: &[u8]) -> Args {
        self.0.extend_from_slice(b);
        self
    }
    fn u16(self, v: u16) -> Args {
        self.bytes(&v.to_le_bytes())
    }
    /// A v3 leaf's tallies as Borsh's `Option<[[u8; 4]; 2]>`.
    fn tallies(self, t: &Option<[[u8; 4]; 2]>) -> Args {
        match t {
            None => self.bytes(&[0]),
            Some([before, after]) => self.bytes(&[1]).bytes(before).bytes(after),
        }
    }
    fn u32(self, v: u32) -> Args {
        self.bytes(&v.to_le_bytes())
    }
    fn u64(self, v: u64) -> Args {
        self.bytes(&v.to_le_bytes())
    }
    fn i64(self, v: i64) -> Args {
        self.bytes(&v.to_le_bytes())
    }
    fn string(self, s: &str) -> Args {
        self.u32(s.len() as u32).bytes(s.as_bytes())
    }
}

/// An instruction that emits an event: its accounts, then the two
/// `#[event_cpi]` appends (the event authority, the program itself).
fn ix(data: Args, mut accounts: Vec<AccountMeta>) -> Instruction {
    accounts.push(AccountMeta::new_readonly(event_authority_address(), false));
    accounts.push(AccountMeta::new_readonly(program_id(), false));
    quiet_ix(data, accounts)
}

/// An instruction that emits no event (`init_settings`).
fn quiet_ix(data: Args, accounts: Vec<AccountMeta>) -> Instruction {
    Instruction {
        program_id: program_id(),
        accounts,
        data: data.0,
    }
}

/// The program's settings, chosen once by its upgrade authority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSettings {
    /// Where claim fees go (a system account).
    pub treasury: Pubkey,
    /// Claim fee, basis points (≤ 1000).
    pub fee_bps: u16,
    /// Share of the stake a missed reveal or proven fraud pays (1..10,000).
    pub slash_bps: u16,
    /// Seconds after a deposit in which the seller may reveal (120 s..30 days).
    pub release_window_secs: i64,
    /// Seconds after a reveal in which the buyer may prove fraud (10 s..30 days).
    pub dispute_window_secs: i64,
    /// Stake floor at every deposit (> 0).
    pub min_stake: u64,
}

/// `init_settings` by `admin`, who must be the upgrade authority.
pub fn init_settings(admin: &Pubkey, c: &NewSettings) -> Instruction {
    quiet_ix(
        Args::new("init_settings")
            .u16(c.fee_bps)
            .u16(c.slash_bps)
            .i64(c.release_window_secs)
            .i64(c.dispute_window_secs)
            .u64(c.min_stake),
        vec![
            AccountMeta::new(settings_address(), false),
            AccountMeta::new_readonly(c.treasury, false),
            AccountMeta::new(*admin, true),
            AccountMeta::new_readonly(program_data_address(), false),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `list_sealed` by `seller`, with at most `max_open` escrows open at
/// once (`u32::MAX`: as many as the stake backs).
pub fn list_sealed(
    seller: &Pubkey,
    listing_id: &str,
    terms: &Terms,
    stake: u64,
    max_open: u32,
) -> Instruction {
    ix(
        Args::new("list_sealed")
            .string(listing_id)
            .bytes(&terms.encode())
            .u64(stake)
            .u32(max_open),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(listing_address(seller, listing_id), false),
            AccountMeta::new(*seller, true),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `deposit_sealed` by `buyer` into `listing` (the listing account),
/// repeating `terms` and binding `blind_point`.
pub fn deposit(
    listing: &Pubkey,
    buyer: &Pubkey,
    terms: &Terms,
    blind_point: &[u8; 32],
    buyer_x25519: &[u8; 32],
) -> Instruction {
    ix(
        Args::new("deposit_sealed")
            .bytes(&terms.encode())
            .bytes(blind_point)
            .bytes(buyer_x25519),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, true),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `reveal` of `s` by `seller` on `buyer`'s escrow.
pub fn reveal(listing: &Pubkey, buyer: &Pubkey, seller: &Pubkey, s: &[u8; 32]) -> Instruction {
    ix(
        Args::new("reveal").bytes(s),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new_readonly(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new_readonly(*seller, true),
        ],
    )
}

/// `decline` by `seller` of `buyer`'s deposit.
pub fn decline(listing: &Pubkey, buyer: &Pubkey, seller: &Pubkey) -> Instruction {
    ix(
        Args::new("decline"),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new_readonly(*seller, true),
        ],
    )
}

/// `claim` of `buyer`'s revealed escrow (anyone may send it).
pub fn claim(listing: &Pubkey, buyer: &Pubkey, seller: &Pubkey, treasury: &Pubkey) -> Instruction {
    ix(
        Args::new("claim"),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*seller, false),
            AccountMeta::new(*treasury, false),
        ],
    )
}

/// `refund_sealed` by `buyer`: closes its escrow and takes what it holds.
pub fn refund(listing: &Pubkey, buyer: &Pubkey) -> Instruction {
    ix(
        Args::new("refund_sealed"),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, true),
        ],
    )
}

/// `expire` of `buyer`'s escrow (anyone may send it): a deposit past its
/// release window and grace, or a reveal on a convicted listing, stops
/// counting as open and its slash share moves into the escrow for the
/// buyer. Serves listings in lamports and in tokens alike.
pub fn expire(listing: &Pubkey, buyer: &Pubkey) -> Instruction {
    ix(
        Args::new("expire"),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
        ],
    )
}

/// `list_sealed_token` by `seller`: deposits in `mint` (the terms' price
/// in its base units), at most `max_open` escrows open at once; `treasury`'s associated account of it is created
/// when missing, at the seller's cost.
pub fn list_sealed_token(
    seller: &Pubkey,
    listing_id: &str,
    terms: &Terms,
    stake: u64,
    max_open: u32,
    mint: &TokenMint,
    treasury: &Pubkey,
) -> Instruction {
    ix(
        Args::new("list_sealed_token")
            .string(listing_id)
            .bytes(&terms.encode())
            .u64(stake)
            .u32(max_open),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(listing_address(seller, listing_id), false),
            AccountMeta::new(*seller, true),
            AccountMeta::new_readonly(mint.address, false),
            AccountMeta::new_readonly(*treasury, false),
            AccountMeta::new(associated_account(treasury, mint), false),
            AccountMeta::new_readonly(mint.program, false),
            AccountMeta::new_readonly(ATA_PROGRAM, false),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `deposit_sealed_token` by `buyer` from its associated account of
/// `mint` into the escrow's vault.
pub fn deposit_token(
    listing: &Pubkey,
    buyer: &Pubkey,
    terms: &Terms,
    blind_point: &[u8; 32],
    buyer_x25519: &[u8; 32],
    mint: &TokenMint,
) -> Instruction {
    ix(
        Args::new("deposit_sealed_token")
            .bytes(&terms.encode())
            .bytes(blind_point)
            .bytes(buyer_x25519),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, true),
            AccountMeta::new_readonly(mint.address, false),
            AccountMeta::new(associated_account(buyer, mint), false),
            AccountMeta::new(vault_address(listing, buyer, mint), false),
            AccountMeta::new_readonly(mint.program, false),
            AccountMeta::new_readonly(ATA_PROGRAM, false),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `claim_token` of `buyer`'s revealed escrow in `mint` (anyone may send
/// it): to the seller's associated account, the fee to the treasury's.
pub fn claim_token(
    listing: &Pubkey,
    buyer: &Pubkey,
    seller: &Pubkey,
    treasury: &Pubkey,
    mint: &TokenMint,
) -> Instruction {
    ix(
        Args::new("claim_token"),
        vec![
            AccountMeta::new_readonly(settings_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new_readonly(*seller, false),
            AccountMeta::new_readonly(mint.address, false),
            AccountMeta::new(vault_address(listing, buyer, mint), false),
            AccountMeta::new(associated_account(seller, mint), false),
            AccountMeta::new(associated_account(treasury, mint), false),
            AccountMeta::new_readonly(mint.program, false),
        ],
    )
}

/// The accounts of `refund_sealed_token`: the vault back to `buyer`'s
/// associated account of `mint`.
fn exit_token_accounts(listing: &Pubkey, buyer: &Pubkey, mint: &TokenMint) -> Vec<AccountMeta> {
    vec![
        AccountMeta::new_readonly(settings_address(), false),
        AccountMeta::new(*listing, false),
        AccountMeta::new(escrow_address(listing, buyer), false),
        AccountMeta::new(*buyer, true),
        AccountMeta::new_readonly(mint.address, false),
        AccountMeta::new(vault_address(listing, buyer, mint), false),
        AccountMeta::new(associated_account(buyer, mint), false),
        AccountMeta::new_readonly(mint.program, false),
    ]
}

/// `refund_sealed_token` by `buyer`.
pub fn refund_token(listing: &Pubkey, buyer: &Pubkey, mint: &TokenMint) -> Instruction {
    ix(
        Args::new("refund_sealed_token"),
        exit_token_accounts(listing, buyer, mint),
    )
}

/// A fraud proof's arguments: the program's `FraudProof` (a chunk that
/// does not open to its hash, any blob), `StepFraud` or `LinkFraud` (a v2
/// blob's plaintext that is not the promised bundle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FraudProof {
    /// `dispute`: chunk `index` does not open to its plaintext hash.
    Chunk {
        /// The listing's scalar k.
        k: [u8; 32],
        /// The lying chunk.
        index: u32,
        /// Its committed ciphertext.
        cipher: Vec<u8>,
        /// Its committed plaintext hash.
        plain_hash: [u8; 32],
        /// Its Merkle path.
        path: Vec<[u8; 32]>,
    },
    /// `dispute_step`: chunk `index` is not its SHA-256 step.
    Step {
        /// The listing's scalar k.
        k: [u8; 32],
        /// The lying chunk.
        index: u32,
        /// Its committed ciphertext.
        cipher: Vec<u8>,
        /// Its committed plaintext hash.
        plain_hash: [u8; 32],
        /// Its committed masked states before and after.
        states: ([u8; 32], [u8; 32]),
        /// Its Merkle path.
        path: Vec<[u8; 32]>,
        /// Its committed memory tallies before and after (v3 blobs).
        tallies: Option<[[u8; 4]; 2]>,
    },
    /// `dispute_link`: chunks `index` and `index + 1` do not join.
    Link {
        /// The listing's scalar k.
        k: [u8; 32],
        /// The first chunk.
        index: u32,
        /// Both leaves' parts (masked states, body, v3 tallies).
        leaves: [escrow_math::fraud::LeafParts; 2],
        /// Leaf `index`'s path.
        path: Vec<[u8; 32]>,
        /// Leaf `index + 1`'s path below the join.
        next: Vec<[u8; 32]>,
    },
}

impl FraudProof {
    /// The chunk the proof names.
    pub fn index(&self) -> u32 {
        match self {
            FraudProof::Chunk { index, .. }
            | FraudProof::Step { index, .. }
            | FraudProof::Link { index, .. } => *index,
        }
    }

    /// Which proof, as its instruction names it (`chunk`, `step`, `link`).
    pub fn kind(&self) -> &'static str {
        match self {
            FraudProof::Chunk { .. } => "chunk",
            FraudProof::Step { .. } => "step",
            FraudProof::Link { .. } => "link",
        }
    }

    /// The Borsh arguments of its instruction, with `suffix` (`""` or
    /// `"_token"`).
    fn args(&self, suffix: &str) -> Args {
        let paths = |mut args: Args, path: &[[u8; 32]]| {
            args = args.u32(path.len() as u32);
            for node in path {
                args = args.bytes(node);
            }
            args
        };
        match self {
            FraudProof::Chunk {
                k,
                index,
                cipher,
                plain_hash,
                path,
            } => paths(
                Args::new(&format!("dispute{suffix}"))
                    .bytes(k)
                    .u32(*index)
                    .u32(cipher.len() as u32)
                    .bytes(cipher)
                    .bytes(plain_hash),
                path,
            ),
            FraudProof::Step {
                k,
                index,
                cipher,
                plain_hash,
                states,
                path,
                tallies,
            } => paths(
                Args::new(&format!("dispute_step{suffix}"))
                    .bytes(k)
                    .u32(*index)
                    .u32(cipher.len() as u32)
                    .bytes(cipher)
                    .bytes(plain_hash)
                    .bytes(&states.0)
                    .bytes(&states.1),
                path,
            )
            .tallies(tallies),
            FraudProof::Link {
                k,
                index,
                leaves,
                path,
                next,
            } => {
                let mut args = Args::new(&format!("dispute_link{suffix}"))
                    .bytes(k)
                    .u32(*index);
                for leaf in leaves {
                    args = args
                        .bytes(&leaf.before)
                        .bytes(&leaf.after)
                        .bytes(&leaf.body)
                        .tallies(&leaf.tallies);
                }
                paths(paths(args, path), next)
            }
        }
    }
}

/// `dispute_token` (or its step or link form) by `buyer` with `proof`:
/// no token account is named (a conviction moves no token; the deposit
/// waits in the vault for [`refund_token`]).
pub fn dispute_token(listing: &Pubkey, buyer: &Pubkey, proof: &FraudProof) -> Instruction {
    ix(
        proof.args("_token"),
        dispute_accounts(listing, buyer, false),
    )
}

/// `dispute` (or `dispute_step`, `dispute_link`) by `buyer` with `proof`.
pub fn dispute(listing: &Pubkey, buyer: &Pubkey, proof: &FraudProof) -> Instruction {
    ix(proof.args(""), dispute_accounts(listing, buyer, true))
}

/// The accounts of a dispute: `buyer` is paid (writable) where the
/// lamport escrow closes to it, only signs where the token escrow keeps
/// the deposit.
fn dispute_accounts(listing: &Pubkey, buyer: &Pubkey, buyer_paid: bool) -> Vec<AccountMeta> {
    vec![
        AccountMeta::new_readonly(settings_address(), false),
        AccountMeta::new(*listing, false),
        AccountMeta::new(escrow_address(listing, buyer), false),
        if buyer_paid {
            AccountMeta::new(*buyer, true)
        } else {
            AccountMeta::new_readonly(*buyer, true)
        },
    ]
}

/// `retire_sealed` by `seller`.
pub fn retire(seller: &Pubkey, listing_id: &str) -> Instruction {
    ix(
        Args::new("retire_sealed"),
        vec![
            AccountMeta::new(listing_address(seller, listing_id), false),
            AccountMeta::new(*seller, true),
        ],
    )
}
