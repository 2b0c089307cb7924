//! Why a marketplace memo or a buy does not count: [`Refusal`] for a memo
//! that changed nothing, [`BuyRefusal`] for a buy transaction recorded as
//! rejected. Typed so tests and callers match variants; serialized as
//! their messages, which are the exact texts the fold has always kept, so
//! [`super::State::hash`] is unchanged by the types.
//!
//! Owns the wording of every refusal; never decides one.

use super::OfferStatus;
use node::market::MemoError;
use node::settle::Rejection;
use serde::{Serialize, Serializer};
use std::fmt;

/// Which kind of manifest a memo names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// A `list` memo's listing manifest.
    Listing,
    /// An `offer` memo's offer manifest.
    Offer,
    /// A `counter` memo's counter manifest.
    Counter,
}

impl ManifestKind {
    fn name(self) -> &'static str {
        match self {
            ManifestKind::Listing => "listing",
            ManifestKind::Offer => "offer",
            ManifestKind::Counter => "counter",
        }
    }

    /// The name with its indefinite article ("a listing", "an offer").
    fn with_article(self) -> &'static str {
        match self {
            ManifestKind::Listing => "a listing",
            ManifestKind::Offer => "an offer",
            ManifestKind::Counter => "a counter",
        }
    }
}

impl fmt::Display for ManifestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Who had to sign an accept, reject or withdraw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Party {
    /// The offer's buyer (withdraw).
    Buyer,
    /// The listing's seller (accept, reject).
    Seller,
}

impl fmt::Display for Party {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Party::Buyer => "the offer's buyer",
            Party::Seller => "the listing's seller",
        })
    }
}

/// Why a marketplace memo changed nothing (PROTOCOL.md §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The memo has the marketplace prefix but does not parse.
    #[error("malformed memo: {0}")]
    Malformed(MemoError),
    /// The transaction carrying it failed (`meta.err` set).
    #[error("the transaction failed on chain")]
    TxFailed,
    /// The memo names a listing this fold has not seen.
    #[error("unknown listing {listing_id}")]
    UnknownListing {
        /// The listing id named.
        listing_id: String,
    },
    /// The listing was cancelled before this memo.
    #[error("listing was cancelled at slot {slot}")]
    ListingCancelled {
        /// Slot of the cancel.
        slot: u64,
    },
    /// The listing had expired at the memo's block time.
    #[error("listing expired at {expires_at} (block time {block_time})")]
    ListingExpired {
        /// The listing's expiry.
        expires_at: i64,
        /// The memo's block time.
        block_time: i64,
    },
    /// The memo's block has no time, so expiry cannot be judged.
    #[error("no block time; expiry cannot be judged")]
    NoBlockTime,
    /// The manifest named failed its checks (signature, schema).
    #[error("{kind} manifest refused: {why}")]
    ManifestRefused {
        /// Which manifest.
        kind: ManifestKind,
        /// The book's reason.
        why: String,
    },
    /// The manifest named is valid but of another kind.
    #[error("{manifest_id} is not {article} manifest", article = .kind.with_article())]
    WrongManifestKind {
        /// The manifest expected.
        kind: ManifestKind,
        /// Its Arweave id.
        manifest_id: String,
    },
    /// The manifest named could not be fetched.
    #[error("{kind} manifest {manifest_id} unavailable")]
    ManifestUnavailable {
        /// The manifest expected.
        kind: ManifestKind,
        /// Its Arweave id.
        manifest_id: String,
    },
    /// A `list` memo's bundle hash is not its manifest's.
    #[error("memo bundle hash differs from the manifest's")]
    BundleHashDiffers,
    /// A `list` memo not signed by the manifest's seller.
    #[error("list memo not signed by the manifest's seller")]
    ListNotSignedBySeller,
    /// The same seller listed the same listing id again.
    #[error("listing {listing_id} already exists")]
    ListingExists {
        /// The listing id.
        listing_id: String,
    },
    /// Another seller listed a listing id already taken: the listing is
    /// now contested.
    #[error("listing id {listing_id} is already listed by seller {first_seller}; it is now contested and is not settled through this indexer")]
    Contested {
        /// The listing id.
        listing_id: String,
        /// The seller who listed it first.
        first_seller: String,
    },
    /// An `offer` memo not signed by the buyer it names.
    #[error("offer memo not signed by the buyer it names")]
    OfferNotSignedByBuyer,
    /// A seller offering on their own listing.
    #[error("a seller cannot offer on their own listing")]
    OwnListing,
    /// The offer manifest is for another listing or buyer.
    #[error("offer manifest names another listing or buyer than its memo")]
    OfferManifestMismatch,
    /// The offer id is taken.
    #[error("offer {offer_id} already exists")]
    OfferExists {
        /// The offer id.
        offer_id: String,
    },
    /// The memo names an offer this fold has not seen.
    #[error("unknown offer {offer_id}")]
    UnknownOffer {
        /// The offer id named.
        offer_id: String,
    },
    /// The offer was already accepted, rejected or withdrawn.
    // the historical text is lowercased whole (offer id included)
    #[error("{}", format!("offer {} is already {:?}", .offer_id, .status).to_lowercase())]
    OfferClosed {
        /// The offer id.
        offer_id: String,
        /// Its status.
        status: OfferStatus,
    },
    /// The offer's current terms had expired.
    #[error("offer {offer_id} terms expired at {expires_at}")]
    OfferTermsExpired {
        /// The offer id.
        offer_id: String,
        /// The current terms' expiry.
        expires_at: i64,
    },
    /// A `counter` memo not signed by the counterer it names.
    #[error("counter memo not signed by the counterer it names")]
    CounterNotSignedByCounterer,
    /// A counter by someone other than the seller or the offer's buyer.
    #[error("only the seller or the offer's buyer may counter")]
    CounterNotParty,
    /// The counter manifest is for another offer or signer.
    #[error("counter manifest names another offer or signer than its memo")]
    CounterManifestMismatch,
    /// An accept, reject or withdraw not signed by the party it needs.
    #[error("not signed by {0}")]
    NotSignedBy(Party),
    /// A `release` memo not signed by the listing's seller.
    #[error("release not signed by the listing's seller")]
    ReleaseNotSignedBySeller,
    /// The release envelope's signature does not verify.
    #[error("envelope refused: {why}")]
    EnvelopeRefused {
        /// The verifier's reason.
        why: String,
    },
    /// The envelope is for another listing.
    #[error("envelope names another listing")]
    EnvelopeOtherListing,
    /// The envelope is for another bundle.
    #[error("envelope names another bundle hash than the listing")]
    EnvelopeOtherBundle,
    /// The envelope names a buy this fold has not seen.
    #[error("envelope names unknown buy {signature}")]
    EnvelopeUnknownBuy {
        /// The buy signature named.
        signature: String,
    },
    /// The envelope names a buy of another listing.
    #[error("envelope's buy is of another listing")]
    EnvelopeBuyOtherListing,
    /// The buy named is not paid-and-unreleased.
    #[error("buy {signature} is not awaiting release")]
    BuyNotAwaitingRelease {
        /// The buy signature.
        signature: String,
    },
    /// The release of an x402 buy where the protocol fee applies did not
    /// pay the treasury its share (the buy paid the seller the whole price).
    #[error("release of {signature} pays the treasury {paid} of the {due} its buy owes it")]
    FeeUnpaidAtRelease {
        /// The buy.
        signature: String,
        /// What the release owes the treasury.
        due: u64,
        /// What it paid.
        paid: u64,
    },
    /// A bare release with no paid buy to settle.
    #[error("no paid buy of this listing awaits release")]
    NoPaidBuy,
    /// A `release` memo on an escrow listing without the program's reveal
    /// in the same transaction: escrow buys are released by the program
    /// alone, never by a memo.
    #[error("an escrow listing's buys are released by the program's reveal, not by a memo")]
    EscrowReleasedInProgram,
    /// A `cancel` memo not signed by the listing's seller.
    #[error("cancel not signed by the listing's seller")]
    CancelNotSignedBySeller,
    /// The listing was already cancelled.
    #[error("listing already cancelled")]
    AlreadyCancelled,
    /// The listing's seller is not a public key, so its escrow account
    /// cannot be derived.
    #[error("seller {seller} is not a pubkey")]
    SellerNotPubkey {
        /// The seller as written.
        seller: String,
    },
    /// A refusal read back from durable state: its message, the only
    /// part the state keeps (and hashes).
    #[error("{0}")]
    Recorded(String),
}

/// Why a buy transaction does not count (it is kept, rejected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuyRefusal {
    /// The settlement rules refused it (node::settle).
    #[error(transparent)]
    Rules(#[from] Rejection),
    /// The listing fixes no lamport price.
    #[error("the listing fixes no price_lamports; it cannot be settled")]
    Unpriced,
    /// The listing names an escrow program other than ours.
    #[error("the listing names escrow program {program}, not ours")]
    ForeignEscrow {
        /// The program named.
        program: String,
    },
    /// A refusal read back from durable state: its message, the only
    /// part the state keeps (and hashes).
    #[error("{0}")]
    Recorded(String),
}

impl<'de> serde::Deserialize<'de> for BuyRefusal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(BuyRefusal::Recorded)
    }
}

impl<'de> serde::Deserialize<'de> for Refusal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Refusal::Recorded)
    }
}

/// Serializes a refusal as its message (the text the state hash covers).
macro_rules! serialize_as_message {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_message!(Refusal, BuyRefusal);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_historical_texts() {
        let cases: Vec<(Refusal, &str)> = vec![
            (
                Refusal::WrongManifestKind {
                    kind: ManifestKind::Offer,
                    manifest_id: "M".into(),
                },
                "M is not an offer manifest",
            ),
            (
                Refusal::ManifestUnavailable {
                    kind: ManifestKind::Counter,
                    manifest_id: "M".into(),
                },
                "counter manifest M unavailable",
            ),
            (
                Refusal::OfferClosed {
                    offer_id: "Off-A".into(),
                    status: OfferStatus::Accepted,
                },
                "offer off-a is already accepted",
            ),
            (
                Refusal::NotSignedBy(Party::Buyer),
                "not signed by the offer's buyer",
            ),
        ];
        for (refusal, text) in cases {
            assert_eq!(refusal.to_string(), text);
            assert_eq!(
                serde_json::to_string(&refusal).unwrap(),
                serde_json::to_string(text).unwrap()
            );
        }
        assert_eq!(
            serde_json::to_string(&BuyRefusal::Unpriced).unwrap(),
            "\"the listing fixes no price_lamports; it cannot be settled\""
        );
    }
}
