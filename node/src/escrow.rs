//! Client side of the escrow program (`programs/escrow`, IDL in
//! `programs/escrow/idl/escrow.json`): PDAs, instruction builders (Anchor
//! discriminators + Borsh arguments + account metas in the IDL's order,
//! as anchor-client would build them) and a decoder of the program's
//! events from transaction logs, for `listen` and the indexer.
//!
//! Owns the wire shape only; it never sends anything. The program cannot
//! be deployed on localnet here (no SBF toolchain), so these builders are
//! tested against the program in `solana-program-test`.

pub use crate::chain::anchor::discriminator;
use crate::chain::anchor::Reader;
use base64::Engine;
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

/// The program id (`declare_id!` of `programs/escrow`).
pub const PROGRAM_ID: &str = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq";
const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");

/// The program id as a key.
pub fn program_id() -> Pubkey {
    Pubkey::from_str(PROGRAM_ID).expect("valid program id")
}

/// The Config PDA.
pub fn config_address() -> Pubkey {
    Pubkey::find_program_address(&[b"config"], &program_id()).0
}

/// The Listing PDA of (seller, listing id).
pub fn listing_address(seller: &Pubkey, listing_id: &str) -> Pubkey {
    Pubkey::find_program_address(
        &[b"listing", seller.as_ref(), listing_id.as_bytes()],
        &program_id(),
    )
    .0
}

/// The Escrow PDA of (listing account, buyer).
pub fn escrow_address(listing: &Pubkey, buyer: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[b"escrow", listing.as_ref(), buyer.as_ref()],
        &program_id(),
    )
    .0
}

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

/// An event the program emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EscrowEvent {
    /// A buyer deposited.
    Deposited {
        /// Listing account.
        listing: Pubkey,
        /// Escrow account.
        escrow: Pubkey,
        /// Buyer.
        buyer: Pubkey,
        /// Lamports.
        amount: u64,
    },
    /// The seller released.
    Released {
        /// Escrow account.
        escrow: Pubkey,
        /// Envelope item id.
        envelope_id: String,
        /// Paid to the seller.
        to_seller: u64,
        /// Paid to the treasury.
        fee: u64,
    },
    /// The buyer was refunded.
    Refunded {
        /// Escrow account.
        escrow: Pubkey,
        /// Lamports.
        amount: u64,
    },
    /// Another event of the program (listing created/cancelled, slashed).
    Other(&'static str),
}

/// Decodes one `Program data: <base64>` log line of the program (`None`
/// for other lines, other programs' events or malformed data).
pub fn decode_event(log_line: &str) -> Option<EscrowEvent> {
    let b64 = log_line.strip_prefix("Program data: ")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let (disc, body) = bytes.split_at_checked(8)?;
    let mut r = Reader(body);
    let is = |name: &str| disc == discriminator("event", name);
    if is("Deposited") {
        Some(EscrowEvent::Deposited {
            listing: r.key().ok()?,
            escrow: r.key().ok()?,
            buyer: r.key().ok()?,
            amount: r.u64().ok()?,
        })
    } else if is("Released") {
        Some(EscrowEvent::Released {
            escrow: r.key().ok()?,
            envelope_id: r.string(64).ok()?,
            to_seller: r.u64().ok()?,
            fee: r.u64().ok()?,
        })
    } else if is("Refunded") {
        Some(EscrowEvent::Refunded {
            escrow: r.key().ok()?,
            amount: r.u64().ok()?,
        })
    } else {
        ["ListingCreated", "ListingCancelled", "Slashed"]
            .into_iter()
            .find(|n| is(n))
            .map(EscrowEvent::Other)
    }
}

/// The program's events in a transaction's logs, in order: only `Program
/// data:` lines emitted while the escrow program is the innermost running
/// program count (another program logging the same bytes is ignored).
pub fn events_in_logs(logs: &[String]) -> Vec<EscrowEvent> {
    let mut stack: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in logs {
        if let Some(rest) = line.strip_prefix("Program ") {
            let mut words = rest.split(' ');
            let (id, verb) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            match verb {
                "invoke" => {
                    stack.push(id);
                    continue;
                }
                "success" | "failed:" => {
                    if stack.last() == Some(&id) {
                        stack.pop();
                    }
                    continue;
                }
                _ => {}
            }
        }
        if stack.last() == Some(&PROGRAM_ID) {
            out.extend(decode_event(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
        for (name, ix) in [
            ("create_listing", create_listing(&s, &el)),
            ("deposit", deposit(&l, &b, &[2; 32])),
            ("release", release(&l, &b, &s, &s, "e", &[1; 32])),
            ("refund", refund(&l, &b)),
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

    fn data_line(name: &str, body: &[u8]) -> String {
        let mut b = discriminator("event", name).to_vec();
        b.extend_from_slice(body);
        format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(b)
        )
    }

    #[test]
    fn only_the_escrow_programs_own_data_lines_count() {
        let escrow = Pubkey::new_unique();
        let mut body = escrow.to_bytes().to_vec();
        body.extend_from_slice(&9u64.to_le_bytes());
        let refunded = data_line("Refunded", &body);
        let other = "Evi1111111111111111111111111111111111111111";
        let logs: Vec<String> = [
            format!("Program {other} invoke [1]"),
            refunded.clone(),
            format!("Program {other} success"),
            format!("Program {PROGRAM_ID} invoke [1]"),
            "Program 11111111111111111111111111111111 invoke [2]".to_string(),
            refunded.clone(),
            "Program 11111111111111111111111111111111 success".to_string(),
            refunded.clone(),
            format!("Program {PROGRAM_ID} success"),
            refunded,
        ]
        .into();
        assert_eq!(
            events_in_logs(&logs),
            vec![EscrowEvent::Refunded { escrow, amount: 9 }],
            "forged by another program, inside a CPI, or after return: ignored"
        );
    }

    #[test]
    fn hostile_event_data_decodes_to_none() {
        assert_eq!(decode_event("Program log: hi"), None);
        assert_eq!(decode_event("Program data: !!!"), None);
        let mut short = discriminator("event", "Released").to_vec();
        short.extend_from_slice(&[0; 32]);
        short.extend_from_slice(&u32::MAX.to_le_bytes());
        let line = format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(&short)
        );
        assert_eq!(decode_event(&line), None, "huge string length refused");
    }
}
