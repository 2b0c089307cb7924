//! `dispute`, `dispute_step`, `dispute_link`: inside the dispute window,
//! the buyer proves that the revealed key does not open the committed
//! ciphertext to the committed plaintext (`dispute`, any blob), or, against
//! a v2 blob's midstate commitments, that the plaintext is not the bundle
//! the listing's `bundle_hash` names (`dispute_step`: one chunk's SHA-256
//! step; `dispute_link`: two chunks' states do not join), and against a
//! v3 blob's memory tallies that the plaintext does not hold the memory
//! count the blob states (the same two proofs, with the tallies)
//! (`escrow_math::fraud`). A proof that holds closes the escrow
//! to the buyer (the whole deposit) and pays it the stake share; one that
//! does not fails, costing the disputer its transaction fee and nothing
//! else (the seller's claim only waits for the window).

use crate::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use crate::error::EscrowError;
use crate::instructions::{add, now};
use crate::sealed::events::{emit, FraudProven};
use crate::sealed::sealed_refund::slash_to;
use crate::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, Settings,
};
use anchor_lang::prelude::*;
use escrow_math::fraud::{
    check, check_link, check_step, Commitments, LeafParts, LinkProof, Proof, ProofError, StepProof,
};

/// Accounts of `dispute`.
#[event_cpi]
#[derive(Accounts)]
pub struct Dispute<'info> {
    /// Settings (dispute window, slash share).
    #[account(seeds = [SETTINGS_SEED], bump = settings.bump)]
    pub settings: Account<'info, Settings>,
    /// The listing (its commitments judge; its stake pays).
    #[account(
        mut,
        seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()],
        bump = listing.bump,
        constraint = listing.in_lamports() @ EscrowError::ListingInToken
    )]
    pub listing: Account<'info, SealedListing>,
    /// The buyer's escrow, closed to the buyer when the proof holds.
    #[account(
        mut,
        seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), buyer.key().as_ref()],
        bump = escrow.bump,
        has_one = listing @ EscrowError::WrongListing,
        has_one = buyer @ EscrowError::NotBuyer,
        close = buyer
    )]
    pub escrow: Account<'info, SealedEscrow>,
    /// The buyer.
    #[account(mut)]
    pub buyer: Signer<'info>,
}

/// A fraud proof's arguments.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, PartialEq, Eq, Debug)]
pub struct FraudProof {
    /// The listing's scalar k (the buyer computed it as s − b).
    pub k: [u8; 32],
    /// The chunk.
    pub index: u32,
    /// Its committed ciphertext.
    pub cipher: Vec<u8>,
    /// Its committed plaintext hash.
    pub plain_hash: [u8; 32],
    /// Its Merkle path.
    pub path: Vec<[u8; 32]>,
}

/// A step proof's arguments (v2 blobs).
#[derive(AnchorSerialize, AnchorDeserialize, Clone, PartialEq, Eq, Debug)]
pub struct StepFraud {
    /// The listing's scalar k.
    pub k: [u8; 32],
    /// The chunk.
    pub index: u32,
    /// Its committed ciphertext.
    pub cipher: Vec<u8>,
    /// Its committed plaintext hash.
    pub plain_hash: [u8; 32],
    /// Its committed masked state before.
    pub before: [u8; 32],
    /// Its committed masked state after.
    pub after: [u8; 32],
    /// Its Merkle path.
    pub path: Vec<[u8; 32]>,
    /// Its committed memory tallies before and after (v3 blobs; `None`
    /// against a v2 blob).
    pub tallies: Option<[[u8; 4]; 2]>,
}

/// One v2 or v3 leaf's parts in a link proof.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct LeafFields {
    /// Masked state before the chunk.
    pub before: [u8; 32],
    /// Masked state after it.
    pub after: [u8; 32],
    /// SHA-256(cipher ‖ plain_hash).
    pub body: [u8; 32],
    /// Its committed memory tallies before and after (v3; `None` for v2).
    pub tallies: Option<[[u8; 4]; 2]>,
}

/// A link proof's arguments (v2 blobs).
#[derive(AnchorSerialize, AnchorDeserialize, Clone, PartialEq, Eq, Debug)]
pub struct LinkFraud {
    /// The listing's scalar k.
    pub k: [u8; 32],
    /// The first of the two chunks.
    pub index: u32,
    /// Leaf `index`.
    pub left: LeafFields,
    /// Leaf `index + 1`.
    pub right: LeafFields,
    /// Leaf `index`'s path.
    pub path: Vec<[u8; 32]>,
    /// Leaf `index + 1`'s path below where the two join.
    pub next: Vec<[u8; 32]>,
}

/// A proof the program decides against a listing's commitments.
pub trait Decide {
    /// The chunk it names.
    fn index(&self) -> u32;
    /// `Ok(())` when it shows fraud.
    fn decide(&self, c: &Commitments) -> core::result::Result<(), ProofError>;
}

impl Decide for FraudProof {
    fn index(&self) -> u32 {
        self.index
    }
    fn decide(&self, c: &Commitments) -> core::result::Result<(), ProofError> {
        check(
            c,
            &Proof {
                k: self.k,
                index: self.index,
                cipher: &self.cipher,
                plain_hash: self.plain_hash,
                path: &self.path,
            },
        )
    }
}

impl Decide for StepFraud {
    fn index(&self) -> u32 {
        self.index
    }
    fn decide(&self, c: &Commitments) -> core::result::Result<(), ProofError> {
        check_step(
            c,
            &StepProof {
                k: self.k,
                index: self.index,
                cipher: &self.cipher,
                plain_hash: self.plain_hash,
                before: self.before,
                after: self.after,
                tallies: self.tallies,
                path: &self.path,
            },
        )
    }
}

impl Decide for LinkFraud {
    fn index(&self) -> u32 {
        self.index
    }
    fn decide(&self, c: &Commitments) -> core::result::Result<(), ProofError> {
        let parts = |l: &LeafFields| LeafParts {
            before: l.before,
            after: l.after,
            tallies: l.tallies,
            body: l.body,
        };
        check_link(
            c,
            &LinkProof {
                k: self.k,
                index: self.index,
                left: parts(&self.left),
                right: parts(&self.right),
                path: &self.path,
                next: &self.next,
            },
        )
    }
}

impl Dispute<'_> {
    /// Decides the proof; on fraud, refunds and slashes.
    pub fn handler(ctx: Context<Dispute>, proof: &impl Decide) -> Result<()> {
        let a = ctx.accounts;
        let buyer = a.buyer.to_account_info();
        // the escrow's lamports (deposit and rent) close to the buyer
        let events = a.event_authority.to_account_info();
        convict(
            &a.settings,
            &mut a.listing,
            &a.escrow,
            &buyer,
            proof,
            &events,
        )
    }
}

/// Decides `proof` against `listing`'s commitments for a revealed
/// `escrow` inside the dispute window; when it holds, convicts the
/// listing, pays `buyer` the stake share and emits [`FraudProven`] (the
/// caller returns the deposit).
pub fn convict(
    settings: &Settings,
    listing: &mut Account<'_, SealedListing>,
    escrow: &Account<'_, SealedEscrow>,
    buyer: &AccountInfo<'_>,
    proof: &impl Decide,
    event_authority: &AccountInfo<'_>,
) -> Result<()> {
    require!(
        escrow.status == SealedEscrowStatus::Revealed,
        EscrowError::WrongEscrowState
    );
    let closes = add(escrow.revealed_at, settings.dispute_window_secs)?;
    require!(now()? < closes, EscrowError::DisputeWindowClosed);
    let terms = &listing.terms;
    let verdict = proof.decide(&Commitments {
        key_point: terms.key_point,
        blob_root: terms.blob_root,
        plain_len: terms.plain_len,
        bundle_hash: terms.bundle_hash,
    });
    match verdict {
        Ok(()) => {}
        Err(ProofError::WrongKey) => return err!(EscrowError::ProofWrongKey),
        Err(ProofError::BadChunk) => return err!(EscrowError::ProofBadChunk),
        Err(ProofError::BadPath) => return err!(EscrowError::ProofBadPath),
        Err(ProofError::Honest) => return err!(EscrowError::NoFraud),
    }
    // convicted: it takes no more deposits (k is public now)
    if listing.status == SealedListingStatus::Live {
        listing.status = SealedListingStatus::Convicted;
    }
    let slashed = slash_to(listing, escrow, buyer)?;
    emit(
        event_authority,
        &FraudProven {
            escrow: escrow.key(),
            index: proof.index(),
            amount: escrow.amount,
            slashed,
        },
    )
}
