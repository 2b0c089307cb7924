//! The escrow program's accounts, decoded strictly (owner, Anchor account
//! discriminator, Borsh layout of `programs/escrow/src/sealed/state.rs`):
//! what the buyer checks before depositing and the seller before
//! revealing. Hostile or truncated data is an [`AccountError`], never a
//! panic.

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

/// `Settings`: fee, treasury, windows, stake floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsAccount {
    /// Who initialized it.
    pub admin: Pubkey,
    /// Where claim fees go.
    pub treasury: Pubkey,
    /// Claim fee, basis points.
    pub fee_bps: u16,
    /// Share of the stake a missed reveal or a proven fraud pays.
    pub slash_bps: u16,
    /// Seconds after a deposit in which the seller may reveal.
    pub release_window_secs: i64,
    /// Seconds after a reveal in which the buyer may prove fraud.
    pub dispute_window_secs: i64,
    /// Stake floor at every deposit.
    pub min_stake: u64,
}

/// What a sealed listing commits to (the program's `SealedTerms`); a
/// deposit repeats it exactly. `price_lamports` is in base units of the
/// listing's mint for a listing in a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    /// Price each buyer deposits.
    pub price_lamports: u64,
    /// K = k·G.
    pub key_point: [u8; 32],
    /// Root over the escrow blob's chunk leaves.
    pub blob_root: [u8; 32],
    /// Plaintext length.
    pub plain_len: u64,
    /// SHA-256 of the plaintext bundle.
    pub bundle_hash: [u8; 32],
    /// The seller's X25519 key.
    pub seller_x25519: [u8; 32],
    /// Unix seconds after which no deposit is taken.
    pub expires_at: i64,
}

impl Terms {
    /// Borsh bytes, as the program reads them.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * 3 + 32 * 4);
        out.extend_from_slice(&self.price_lamports.to_le_bytes());
        out.extend_from_slice(&self.key_point);
        out.extend_from_slice(&self.blob_root);
        out.extend_from_slice(&self.plain_len.to_le_bytes());
        out.extend_from_slice(&self.bundle_hash);
        out.extend_from_slice(&self.seller_x25519);
        out.extend_from_slice(&self.expires_at.to_le_bytes());
        out
    }

    fn read(r: &mut Reader<'_>) -> Result<Terms, ReadError> {
        Ok(Terms {
            price_lamports: r.u64()?,
            key_point: array32(r)?,
            blob_root: array32(r)?,
            plain_len: r.u64()?,
            bundle_hash: array32(r)?,
            seller_x25519: array32(r)?,
            expires_at: i64_of(r)?,
        })
    }
}

/// A listing's lifecycle on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingStatus {
    /// Taking deposits.
    Live,
    /// Retired by the seller (stake returned; the id is used for good).
    Retired,
    /// A fraud proof held against it: no more deposits.
    Convicted,
}

/// `SealedListing`: the seller's committed terms and stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingAccount {
    /// Seller.
    pub seller: Pubkey,
    /// Listing id.
    pub listing_id: String,
    /// The committed terms.
    pub terms: Terms,
    /// Stake held.
    pub stake: u64,
    /// Lifecycle.
    pub status: ListingStatus,
    /// Escrows deposited or revealed, not yet settled.
    pub open_escrows: u32,
    /// The mint deposits are in (`list_sealed_token`); `None`: lamports.
    pub mint: Option<Pubkey>,
    /// Stake reserved for the open escrows' slash shares.
    pub reserved: u64,
    /// The seller's cap on open escrows.
    pub max_open: u32,
}

/// An escrow's lifecycle on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EscrowStatus {
    /// The price is held; the seller may reveal inside the window.
    Deposited,
    /// The seller revealed; the price waits out the dispute window.
    Revealed,
    /// Declined by the seller: the buyer takes it all back.
    Declined,
    /// The seller was paid; the buyer may close it for the rent.
    Claimed,
    /// Left past its window (or revealed on a convicted listing) and
    /// expired by anyone: the buyer closes it for the deposit and share.
    Expired,
}

/// `SealedEscrow`: one buyer's deposit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscrowAccount {
    /// Listing account.
    pub listing: Pubkey,
    /// Buyer.
    pub buyer: Pubkey,
    /// Buyer's X25519 key.
    pub buyer_x25519: [u8; 32],
    /// B = b·G.
    pub blind_point: [u8; 32],
    /// What is held: lamports, or base units of the listing's mint (in
    /// the escrow's vault).
    pub amount: u64,
    /// Unix seconds of the deposit.
    pub deposited_at: i64,
    /// Lifecycle.
    pub status: EscrowStatus,
    /// s, once revealed.
    pub revealed: [u8; 32],
    /// Unix seconds of the reveal.
    pub revealed_at: i64,
    /// The slash share reserved for it at the deposit.
    pub share: u64,
}

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

/// Seconds past the release window in which the program still takes a
/// reveal or a decline (its `REVEAL_GRACE_SECS`); refunds and `expire`
/// open after them.
pub const REVEAL_GRACE_SECS: i64 = 90;

impl SettingsAccount {
    /// Unix seconds until which a deposit made at `deposited_at` takes a
    /// reveal or a decline (the release window and [`REVEAL_GRACE_SECS`]);
    /// its refund and `expire` open then.
    pub fn answer_deadline(&self, deposited_at: i64) -> i64 {
        deposited_at
            .saturating_add(self.release_window_secs)
            .saturating_add(REVEAL_GRACE_SECS)
    }

    /// Unix seconds from which a reveal made at `revealed_at` can no
    /// longer be disputed (the dispute window's end): its claim opens then.
    pub fn dispute_closes(&self, revealed_at: i64) -> i64 {
        revealed_at.saturating_add(self.dispute_window_secs)
    }

    /// Decodes a `Settings` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<SettingsAccount, AccountError> {
        const KIND: &str = "Settings";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<SettingsAccount, ReadError> {
            Ok(SettingsAccount {
                admin: r.key()?,
                treasury: r.key()?,
                fee_bps: u16_of(r)?,
                slash_bps: u16_of(r)?,
                release_window_secs: i64_of(r)?,
                dispute_window_secs: i64_of(r)?,
                min_stake: r.u64()?,
            })
        };
        read(&mut r).map_err(layout(KIND))
    }
}

impl ListingAccount {
    /// Decodes a `SealedListing` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<ListingAccount, AccountError> {
        const KIND: &str = "SealedListing";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<(ListingAccount, u8), ReadError> {
            let seller = r.key()?;
            let listing_id = r.string(21)?;
            let terms = Terms::read(r)?;
            let stake = r.u64()?;
            let tag = r.u8()?;
            let open_escrows = r.u32()?;
            let _bump = r.u8()?;
            let mint = Some(r.key()?).filter(|m| *m != Pubkey::default());
            let reserved = r.u64()?;
            let max_open = r.u32()?;
            let l = ListingAccount {
                seller,
                listing_id,
                terms,
                stake,
                status: ListingStatus::Live,
                open_escrows,
                mint,
                reserved,
                max_open,
            };
            Ok((l, tag))
        };
        let (mut l, tag) = read(&mut r).map_err(layout(KIND))?;
        l.status = match tag {
            0 => ListingStatus::Live,
            1 => ListingStatus::Retired,
            2 => ListingStatus::Convicted,
            _ => return Err(AccountError::BadStatus(KIND)),
        };
        Ok(l)
    }
}

impl EscrowAccount {
    /// Decodes a `SealedEscrow` account owned by `owner`.
    pub fn decode(owner: &Pubkey, data: &[u8]) -> Result<EscrowAccount, AccountError> {
        const KIND: &str = "SealedEscrow";
        let mut r = body(KIND, owner, data)?;
        let read = |r: &mut Reader<'_>| -> Result<(EscrowAccount, u8), ReadError> {
            let listing = r.key()?;
            let buyer = r.key()?;
            let buyer_x25519 = array32(r)?;
            let blind_point = array32(r)?;
            let amount = r.u64()?;
            let deposited_at = i64_of(r)?;
            let tag = r.u8()?;
            let revealed = array32(r)?;
            let revealed_at = i64_of(r)?;
            let _bump = r.u8()?;
            let share = r.u64()?;
            let e = EscrowAccount {
                listing,
                buyer,
                buyer_x25519,
                blind_point,
                amount,
                deposited_at,
                status: EscrowStatus::Deposited,
                revealed,
                revealed_at,
                share,
            };
            Ok((e, tag))
        };
        let (mut e, tag) = read(&mut r).map_err(layout(KIND))?;
        e.status = match tag {
            0 => EscrowStatus::Deposited,
            1 => EscrowStatus::Revealed,
            2 => EscrowStatus::Declined,
            3 => EscrowStatus::Claimed,
            4 => EscrowStatus::Expired,
            _ => return Err(AccountError::BadStatus(KIND)),
        };
        Ok(e)
    }
}

/// Byte offset of `SealedEscrow.listing` (after the discriminator).
pub const ESCROW_LISTING_OFFSET: usize = 8;
/// Byte offset of `SealedEscrow.status`: listing, buyer, X25519 key, B (32
/// each), amount, deposited_at (8 each).
pub const ESCROW_STATUS_OFFSET: usize = 8 + 32 * 4 + 8 * 2;

/// The Borsh tag of `status`.
pub fn status_tag(s: EscrowStatus) -> u8 {
    match s {
        EscrowStatus::Deposited => 0,
        EscrowStatus::Revealed => 1,
        EscrowStatus::Declined => 2,
        EscrowStatus::Claimed => 3,
        EscrowStatus::Expired => 4,
    }
}
