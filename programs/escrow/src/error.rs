//! Every way an instruction is refused, with the reason shown to users.

use anchor_lang::prelude::*;

/// Escrow program errors (codes follow this order from 6000).
#[error_code]
pub enum EscrowError {
    /// `fee_bps` over [`crate::constants::MAX_FEE_BPS`].
    #[msg("fee_bps is above the 1000 bps cap")]
    FeeTooHigh,
    /// `slash_bps` over 10,000.
    #[msg("slash_bps is above 10000")]
    SlashTooHigh,
    /// A listing id not of the `YYYYMMDD-<12 hex>` shape.
    #[msg("listing id must be YYYYMMDD-<12 hex>")]
    BadListingId,
    /// Price of zero.
    #[msg("price_lamports must be positive")]
    ZeroPrice,
    /// Stake under the configured minimum.
    #[msg("stake is below the configured minimum")]
    StakeTooLow,
    /// Expiry not in the future.
    #[msg("expires_at must be in the future")]
    ExpiryInPast,
    /// The listing was retired, or convicted of fraud.
    #[msg("the listing takes no deposits: retired, or convicted of fraud")]
    ListingClosed,
    /// The listing expired.
    #[msg("the listing has expired")]
    ListingExpired,
    /// The signer is not the listing's seller.
    #[msg("only the listing's seller may do this")]
    NotSeller,
    /// The signer is not the escrow's buyer.
    #[msg("only the escrow's buyer may do this")]
    NotBuyer,
    /// Refund asked before the release window closed.
    #[msg("the release window is still open")]
    ReleaseWindowOpen,
    /// Retire with deposits still open.
    #[msg("the listing has open escrows")]
    OpenEscrows,
    /// Arithmetic overflow or underflow.
    #[msg("arithmetic overflow")]
    Overflow,
    /// The treasury account differs from the settings'.
    #[msg("treasury account differs from the settings'")]
    WrongTreasury,
    /// The escrow belongs to another listing.
    #[msg("escrow belongs to another listing")]
    WrongListing,
    /// `init_settings` signed by someone other than the upgrade authority.
    #[msg("only the program's upgrade authority may initialize the settings")]
    NotUpgradeAuthority,
    /// A window outside its bounds (release: 120 s to 30 days; dispute:
    /// 10 s to 30 days).
    #[msg("the release window must be 120 s to 30 days, the dispute window 10 s to 30 days")]
    WindowOutOfRange,
    /// A minimum stake of zero.
    #[msg("min_stake must be positive")]
    ZeroMinStake,
    /// A slash share of zero.
    #[msg("slash_bps must be 1 to 10000")]
    ZeroSlash,
    /// A committed point that is not a usable curve point.
    #[msg("a committed point does not decode or is of small order")]
    BadPoint,
    /// A low-order X25519 key.
    #[msg("an X25519 key is of low order")]
    LowOrderKey,
    /// A plaintext length of zero or over 32 MiB.
    #[msg("plain_len must be 1 byte to 32 MiB")]
    BadPlainLen,
    /// The deposit's terms differ from the listing's.
    #[msg("the listing's terms differ from those the buyer checked")]
    TermsMismatch,
    /// The listing's stake fell under the configured floor.
    #[msg("the listing's stake is below the floor: no deposits")]
    StakeBelowFloor,
    /// A reveal after the release window.
    #[msg("the release window has closed")]
    ReleaseWindowClosed,
    /// A reveal that does not satisfy s·G = K + B.
    #[msg("the revealed scalar does not satisfy s·G = K + B")]
    WrongReveal,
    /// The escrow is not in the state this instruction needs.
    #[msg("the escrow is not in a state that allows this")]
    WrongEscrowState,
    /// A claim inside the dispute window.
    #[msg("the dispute window is still open")]
    DisputeWindowOpen,
    /// A dispute after the dispute window.
    #[msg("the dispute window has closed")]
    DisputeWindowClosed,
    /// The fraud proof's scalar does not open K.
    #[msg("the fraud proof's scalar does not open the key commitment")]
    ProofWrongKey,
    /// The fraud proof names no chunk of the committed length.
    #[msg("the fraud proof's chunk is out of range or of the wrong length")]
    ProofBadChunk,
    /// The fraud proof's path does not reach the committed root.
    #[msg("the fraud proof's Merkle path does not reach the committed root")]
    ProofBadPath,
    /// The chunk decrypts to its commitment: the seller was honest.
    #[msg("the chunk decrypts to its committed plaintext: no fraud")]
    NoFraud,
    /// A claim on a listing convicted of fraud: every reveal of it opened
    /// the same lying blob, so its buyers take their deposits back.
    #[msg("the listing was convicted of fraud: nothing of it is claimed")]
    ListingConvicted,
    /// The price account is not a Pyth receiver's `PriceUpdateV2`.
    #[msg("the price account is not a Pyth PriceUpdateV2 account")]
    PriceNotPyth,
    /// The price is older than the listing takes.
    #[msg("the price is older than the listing's maximum age")]
    PriceStale,
    /// The price's confidence is wider than the listing takes.
    #[msg("the price's confidence is wider than the listing's bound")]
    PriceUncertain,
    /// The price account carries another feed.
    #[msg("the price account carries another feed than the listing's")]
    PriceOtherFeed,
    /// The price cannot convert (partially verified, not positive, out of range).
    #[msg("the price cannot convert the listing's USD")]
    PriceUnusable,
    /// The quote is above what the buy pays (the price moved).
    #[msg("the price moved: the quote is above what the buy pays")]
    PriceMoved,
    /// A lamport instruction on a listing that settles in a token.
    #[msg("the listing settles in a token: use the instruction's _token variant")]
    ListingInToken,
    /// A token instruction on a listing that settles in lamports.
    #[msg("the listing settles in lamports: use the instruction without _token")]
    ListingInLamports,
    /// The mint account is not the listing's.
    #[msg("the mint differs from the listing's")]
    WrongMint,
    /// Not an initialized mint of the SPL Token or Token-2022 program.
    #[msg("the mint is not an initialized SPL Token or Token-2022 mint")]
    NotAMint,
    /// The token program is not the mint's.
    #[msg("the token program is not the mint's owner")]
    WrongTokenProgram,
    /// The vault is not the escrow's associated token account.
    #[msg("the vault is not the escrow's associated token account of the mint")]
    WrongVault,
    /// The vault received other than the price.
    #[msg("the vault received other than the price: the mint takes a fee on transfers")]
    DepositShort,
    /// The seller's token account is not the seller's, of the mint.
    #[msg("the seller's token account is not an account of the seller for the listing's mint")]
    WrongSellerAccount,
    /// A Token-2022 mint whose extension could move, freeze, tax or block
    /// a held vault.
    #[msg("the mint has a Token-2022 extension that could move, freeze, tax or block a held vault (permanent delegate, pause, transfer hook or fee, non-transferable, default account state, confidential transfers)")]
    MintExtension,
    /// A deposit over the seller's cap on open escrows.
    #[msg("the listing has as many open escrows as its seller allows; try again when one settles")]
    TooManyOpen,
    /// A deposit whose slash share the listing's unreserved stake cannot
    /// cover.
    #[msg("the listing's unreserved stake cannot cover another deposit's slash share; try again when an escrow settles")]
    StakeReserved,
    /// A cap on open escrows of zero.
    #[msg("max_open must be at least 1")]
    ZeroMaxOpen,
    /// A treasury below rent exemption (fees under it would be waived).
    #[msg("the treasury must hold at least the rent-exempt minimum")]
    TreasuryNotRentExempt,
    /// An escrow that cannot be expired (yet).
    #[msg("only a deposit past its release window and grace, or a reveal on a convicted listing, can be expired")]
    NotExpirable,
    /// Settings whose slash share (`min_stake · slash_bps / 10⁴`) rounds
    /// to zero: a missed reveal or a proven lie would cost the seller
    /// nothing.
    #[msg("min_stake and slash_bps give a slash share of 0 lamports: raise either")]
    ZeroShare,
    /// The treasury's token account is frozen: the claim waits for the
    /// thaw (a freeze never waives the fee).
    #[msg("the treasury's token account of the mint is frozen; the claim pays once it is thawed")]
    TreasuryFrozen,
}
