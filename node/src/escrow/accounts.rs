//! The escrow program's accounts, decoded strictly (owner, Anchor account
//! discriminator, Borsh layout of `programs/escrow/src/state.rs`): what the
//! buyer checks before depositing and the seller before releasing. Hostile
//! or truncated data is an [`AccountError`], never a panic.

use super::{discriminator, program_id};
use crate::chain::anchor::{ReadError, Reader};
use solana_sdk::pubkey::Pubkey;

/// Why account bytes are not the account asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountError {
    /// Owned by another program: not the escrow program's account at all.
    #[error("account is owned by {0}, not the escrow program")]
    WrongOwner(Pubkey),
    /// Another account type (discriminator mismatch).
    #[error("account is not an escrow `{0}` account")]
    WrongType(&'static str),
    /// The layout did not read.
    #[error("escrow `{kind}` account: {why}")]
    Layout {
        /// Account type.
        kind: &'static str,
        /// What failed.
        why: ReadError,
    },
    /// An enum tag the program never writes.
    #[error("escrow `{0}` account: unknown status tag")]
    BadStatus(&'static str),
}

/// `Config`: fee, treasury, window, minimum stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigAccount {
    /// Who initialized it.
    pub admin: Pubkey,
    /// Where release fees go.
    pub treasury: Pubkey,
    /// Release fee, basis points.
    pub fee_bps: u16,
    /// Share of the stake a slash pays.
    pub slash_bps: u16,
    /// Seconds after a deposit before a refund.
    pub release_window_secs: i64,
    /// Smallest stake.
    pub min_stake: u64,
}

/// A listing's lifecycle on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingStatus {
    /// Taking deposits.
    Live,
    /// Cancelled by the seller.
    Cancelled,
}

/// `Listing`: the seller's terms and stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingAccount {
    /// Seller, paid on release.
    pub seller: Pubkey,
    /// Listing id.
    pub listing_id: String,
    /// Committed bundle hash.
    pub bundle_hash: [u8; 32],
    /// Price each buyer deposits.
    pub price_lamports: u64,
    /// Stake held.
    pub stake: u64,
    /// No deposits from this unix second on.
    pub expires_at: i64,
    /// Lifecycle.
    pub status: ListingStatus,
    /// Deposits neither released nor refunded.
    pub open_escrows: u32,
    /// Refunds not yet slashed.
    pub unslashed_refunds: u32,
}

/// An escrow's lifecycle on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EscrowStatus {
    /// The price is held.
    Deposited,
    /// Paid to the seller.
    Released,
    /// Returned to the buyer.
    Refunded,
}

/// `Escrow`: one buyer's deposit on one listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscrowAccount {
    /// Listing account.
    pub listing: Pubkey,
    /// Buyer.
    pub buyer: Pubkey,
    /// Buyer's X25519 key (the envelope is sealed to it).
    pub buyer_x25519: [u8; 32],
    /// Lamports held.
    pub amount: u64,
    /// Unix seconds of the deposit.
    pub deposited_at: i64,
    /// Lifecycle.
    pub status: EscrowStatus,
    /// Envelope id named on release.
    pub envelope_id: String,
    /// Whether a slash was paid for this refund.
    pub slashed: bool,
}

/// Checks owner and discriminator; returns a reader over the body.
fn body<'a>(
    kind: &'static str,
    owner: &Pubkey,
    data: &'a [u8],
) -> Result<Reader<'a>, AccountError> {
    if *owner != program_id() {
        return Err(AccountError::WrongOwner(*owner));
    }
    match data.split_at_checked(8) {
        Some((d, rest)) if d == discriminator("account", kind) => Ok(Reader(rest)),
        _ => Err(AccountError::WrongType(kind)),
    }
}

fn layout(kind: &'static str) -> impl Fn(ReadError) -> AccountError {
    move |why| AccountError::Layout { kind, why }
}

fn i64_of(r: &mut Reader<'_>) -> Result<i64, ReadError> {
    Ok(r.u64()? as i64)
}

fn u16_of(r: &mut Reader<'_>) -> Result<u16, ReadError> {
    Ok(u16::from_le_bytes(r.take(2)?.try_into().expect("2")))
}

fn array32(r: &mut Reader<'_>) -> Result<[u8; 32], ReadError> {
    Ok(r.take(32)?.try_into().expect("32"))
}

impl ConfigAccount {
    /// Decodes a `Config` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<ConfigAccount, AccountError> {
        const KIND: &str = "Config";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<ConfigAccount, ReadError> {
            Ok(ConfigAccount {
                admin: r.key()?,
                treasury: r.key()?,
                fee_bps: u16_of(r)?,
                slash_bps: u16_of(r)?,
                release_window_secs: i64_of(r)?,
                min_stake: r.u64()?,
            })
        };
        read(&mut r).map_err(layout(KIND))
    }
}

impl ListingAccount {
    /// Decodes a `Listing` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<ListingAccount, AccountError> {
        const KIND: &str = "Listing";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<(ListingAccount, u8), ReadError> {
            let mut l = ListingAccount {
                seller: r.key()?,
                listing_id: r.string(21)?,
                bundle_hash: array32(r)?,
                price_lamports: r.u64()?,
                stake: r.u64()?,
                expires_at: i64_of(r)?,
                status: ListingStatus::Live,
                open_escrows: 0,
                unslashed_refunds: 0,
            };
            let tag = r.u8()?;
            l.open_escrows = r.u32()?;
            l.unslashed_refunds = r.u32()?;
            Ok((l, tag))
        };
        let (mut l, tag) = read(&mut r).map_err(layout(KIND))?;
        l.status = match tag {
            0 => ListingStatus::Live,
            1 => ListingStatus::Cancelled,
            _ => return Err(AccountError::BadStatus(KIND)),
        };
        Ok(l)
    }
}

impl EscrowAccount {
    /// Decodes an `Escrow` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<EscrowAccount, AccountError> {
        const KIND: &str = "Escrow";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<(EscrowAccount, u8, u8), ReadError> {
            let mut e = EscrowAccount {
                listing: r.key()?,
                buyer: r.key()?,
                buyer_x25519: array32(r)?,
                amount: r.u64()?,
                deposited_at: i64_of(r)?,
                status: EscrowStatus::Deposited,
                envelope_id: String::new(),
                slashed: false,
            };
            let tag = r.u8()?;
            e.envelope_id = r.string(64)?;
            let slashed = r.u8()?;
            Ok((e, tag, slashed))
        };
        let (mut e, tag, slashed) = read(&mut r).map_err(layout(KIND))?;
        e.status = match tag {
            0 => EscrowStatus::Deposited,
            1 => EscrowStatus::Released,
            2 => EscrowStatus::Refunded,
            _ => return Err(AccountError::BadStatus(KIND)),
        };
        e.slashed = match slashed {
            0 => false,
            1 => true,
            _ => return Err(AccountError::BadStatus(KIND)),
        };
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escrow_bytes(tag: u8) -> Vec<u8> {
        let mut b = discriminator("account", "Escrow").to_vec();
        b.extend_from_slice(&[1; 32]);
        b.extend_from_slice(&[2; 32]);
        b.extend_from_slice(&[3; 32]);
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&9i64.to_le_bytes());
        b.push(tag);
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(b"env");
        b.push(0);
        b.push(254); // bump
        b
    }

    #[test]
    fn escrow_account_reads_and_hostile_bytes_are_typed_errors() {
        let e = EscrowAccount::decode(&program_id(), &escrow_bytes(1)).unwrap();
        assert_eq!(
            (e.amount, e.deposited_at, e.status, e.envelope_id.as_str()),
            (7, 9, EscrowStatus::Released, "env")
        );
        let other = Pubkey::new_unique();
        assert_eq!(
            EscrowAccount::decode(&other, &escrow_bytes(1)),
            Err(AccountError::WrongOwner(other))
        );
        assert_eq!(
            EscrowAccount::decode(&program_id(), &escrow_bytes(3)),
            Err(AccountError::BadStatus("Escrow"))
        );
        assert_eq!(
            ListingAccount::decode(&program_id(), &escrow_bytes(0)),
            Err(AccountError::WrongType("Listing")),
            "an escrow is not a listing"
        );
        let bytes = escrow_bytes(0);
        for cut in 0..bytes.len() - 1 {
            assert!(
                EscrowAccount::decode(&program_id(), &bytes[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
    }
}
