//! Instruction builders of the escrow program: Anchor discriminator +
//! Borsh arguments, account metas in the IDL's order.

use super::{
    config_address, discriminator, escrow_address, listing_address, program_data_address,
    program_id, SYSTEM,
};
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;

/// Borsh encoding of the argument types the program uses.
#[derive(Default)]
struct Args(Vec<u8>);

impl Args {
    fn new(ix: &str) -> Args {
        Args(discriminator("global", ix).to_vec())
    }
    fn bytes(mut self, b: &[u8]) -> Args {
        self.0.extend_from_slice(b);
        self
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
    fn u32(self, v: u32) -> Args {
        self.bytes(&v.to_le_bytes())
    }
}

fn ix(data: Args, accounts: Vec<AccountMeta>) -> Instruction {
    Instruction {
        program_id: program_id(),
        accounts,
        data: data.0,
    }
}

/// The program's settings, chosen once by its upgrade authority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConfig {
    /// Where release fees go.
    pub treasury: Pubkey,
    /// Release fee, basis points (≤ 1000).
    pub fee_bps: u16,
    /// Share of the stake a slash pays, basis points.
    pub slash_bps: u16,
    /// Seconds after a deposit before the buyer may take a refund.
    pub release_window_secs: i64,
    /// Smallest stake a listing needs.
    pub min_stake: u64,
}

/// `initialize_config` by `admin`, who must be the upgrade authority.
pub fn initialize_config(admin: &Pubkey, c: &NewConfig) -> Instruction {
    ix(
        Args::new("initialize_config")
            .bytes(c.treasury.as_ref())
            .bytes(&c.fee_bps.to_le_bytes())
            .bytes(&c.slash_bps.to_le_bytes())
            .i64(c.release_window_secs)
            .u64(c.min_stake),
        vec![
            AccountMeta::new(config_address(), false),
            AccountMeta::new(*admin, true),
            AccountMeta::new_readonly(program_data_address(), false),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// What a seller lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscrowListing<'a> {
    /// `YYYYMMDD-<12 hex>`.
    pub listing_id: &'a str,
    /// SHA-256 of the canonical bundle.
    pub bundle_hash: [u8; 32],
    /// Price each buyer deposits.
    pub price_lamports: u64,
    /// Stake the seller puts up.
    pub stake: u64,
    /// Unix seconds after which no deposit is taken.
    pub expires_at: i64,
}

/// `create_listing` by `seller`.
pub fn create_listing(seller: &Pubkey, l: &EscrowListing<'_>) -> Instruction {
    ix(
        Args::new("create_listing")
            .string(l.listing_id)
            .bytes(&l.bundle_hash)
            .u64(l.price_lamports)
            .u64(l.stake)
            .i64(l.expires_at),
        vec![
            AccountMeta::new_readonly(config_address(), false),
            AccountMeta::new(listing_address(seller, l.listing_id), false),
            AccountMeta::new(*seller, true),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `deposit` by `buyer` into `listing` (the listing account), sealing to `buyer_x25519`.
pub fn deposit(listing: &Pubkey, buyer: &Pubkey, buyer_x25519: &[u8; 32]) -> Instruction {
    ix(
        Args::new("deposit").bytes(buyer_x25519),
        vec![
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, true),
            AccountMeta::new_readonly(SYSTEM, false),
        ],
    )
}

/// `release` by `seller` of `buyer`'s escrow on `listing`, naming the
/// envelope and committing to `bundle_hash`; the fee goes to `treasury`.
pub fn release(
    listing: &Pubkey,
    buyer: &Pubkey,
    seller: &Pubkey,
    treasury: &Pubkey,
    envelope_id: &str,
    bundle_hash: &[u8; 32],
) -> Instruction {
    ix(
        Args::new("release").string(envelope_id).bytes(bundle_hash),
        vec![
            AccountMeta::new_readonly(config_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*seller, true),
            AccountMeta::new(*treasury, false),
        ],
    )
}

/// `refund` by `buyer` after the release window.
pub fn refund(listing: &Pubkey, buyer: &Pubkey) -> Instruction {
    ix(
        Args::new("refund"),
        vec![
            AccountMeta::new_readonly(config_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, true),
        ],
    )
}

/// `slash` by anyone (`caller` signs) of `buyer`'s refunded escrow on
/// `listing`: the configured share of the remaining stake to the buyer.
pub fn slash(listing: &Pubkey, buyer: &Pubkey, caller: &Pubkey) -> Instruction {
    ix(
        Args::new("slash"),
        vec![
            AccountMeta::new_readonly(config_address(), false),
            AccountMeta::new(*listing, false),
            AccountMeta::new(escrow_address(listing, buyer), false),
            AccountMeta::new(*buyer, false),
            AccountMeta::new_readonly(*caller, true),
        ],
    )
}

/// `cancel_listing` by `seller` (no open escrows, no unslashed refunds):
/// the listing account closes to the seller with its stake.
pub fn cancel_listing(seller: &Pubkey, listing_id: &str) -> Instruction {
    ix(
        Args::new("cancel_listing"),
        vec![
            AccountMeta::new(listing_address(seller, listing_id), false),
            AccountMeta::new(*seller, true),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escrow::PROGRAM_ID;
    use serde_json::Value;

    fn idl() -> Value {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../programs/escrow/idl/escrow.json"
        );
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    #[test]
    fn builders_follow_the_idl() {
        let idl = idl();
        assert_eq!(idl["address"], PROGRAM_ID);
        let (s, b, l) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let el = EscrowListing {
            listing_id: "20261123-0123456789ab",
            bundle_hash: [1; 32],
            price_lamports: 5,
            stake: 6,
            expires_at: 7,
        };
        let config = NewConfig {
            treasury: s,
            fee_bps: 1,
            slash_bps: 2,
            release_window_secs: 3,
            min_stake: 4,
        };
        for (name, ix) in [
            ("initialize_config", initialize_config(&s, &config)),
            ("create_listing", create_listing(&s, &el)),
            ("deposit", deposit(&l, &b, &[2; 32])),
            ("release", release(&l, &b, &s, &s, "e", &[1; 32])),
            ("refund", refund(&l, &b)),
            ("slash", slash(&l, &b, &s)),
            (
                "cancel_listing",
                cancel_listing(&s, "20261123-0123456789ab"),
            ),
        ] {
            let want = idl["instructions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["name"] == name)
                .unwrap();
            let d: Vec<u8> = want["discriminator"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u8)
                .collect();
            assert_eq!(ix.data[..8], d[..], "{name}");
            let flags: Vec<(bool, bool)> = want["accounts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| (a["writable"] == true, a["signer"] == true))
                .collect();
            let ours: Vec<(bool, bool)> = ix
                .accounts
                .iter()
                .map(|m| (m.is_writable, m.is_signer))
                .collect();
            assert_eq!(ours, flags, "{name}");
        }
        // create_listing args: string, [u8;32], u64, u64, i64
        let data = create_listing(&s, &el).data;
        assert_eq!(data.len(), 8 + 4 + 21 + 32 + 8 + 8 + 8);
    }
}
