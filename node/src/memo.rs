//! Marketplace memos (PROTOCOL.md §6): `brainctl-marketplace/v1:<action>:...`
//! parsed into one typed enum, strictly (exact field count, charset and
//! length per field). Anything else is a [`MemoError`] naming the reason;
//! never a panic. Formatting is the exact inverse of parsing.
//!
//! Authority (who may post which action) is not decided here: that needs
//! the listing/offer state (`settle`, `listen`, the indexer). Also
//! reachable as `market::memo` (the marketplace speaks it).

use std::fmt;

/// Prefix of every marketplace memo.
pub const PREFIX: &str = "brainctl-marketplace/v1";
/// Longest memo we parse (SPL Memo allows far more; ours are < 200 bytes).
pub const MAX_MEMO_BYTES: usize = 566;

/// One marketplace action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoOp {
    /// A seller lists a bundle.
    List {
        /// Arweave id of the listing manifest.
        listing_arweave_id: String,
        /// Hex SHA-256 of the bundle.
        bundle_hash: String,
    },
    /// A buyer offers.
    Offer {
        /// Listing.
        listing_id: String,
        /// Arweave id of the offer manifest.
        offer_arweave_id: String,
        /// Buyer.
        buyer_pubkey: String,
    },
    /// Either side counters.
    Counter {
        /// Offer.
        offer_id: String,
        /// Arweave id of the counter manifest.
        counter_arweave_id: String,
        /// Who counters.
        counterer_pubkey: String,
    },
    /// Seller accepts an offer.
    Accept {
        /// Offer.
        offer_id: String,
    },
    /// Seller rejects an offer.
    Reject {
        /// Offer.
        offer_id: String,
    },
    /// Buyer withdraws an offer.
    Withdraw {
        /// Offer.
        offer_id: String,
    },
    /// Buyer pays (the same transaction carries the payment).
    Buy {
        /// Listing.
        listing_id: String,
        /// Buyer's X25519 key (base58) to seal the bundle key to.
        buyer_x25519: String,
    },
    /// Seller releases the key.
    Release {
        /// Listing.
        listing_id: String,
        /// Arweave id of the envelope.
        envelope_arweave_id: String,
        /// The token minted to the buyer.
        minted_token_address: String,
    },
    /// Seller cancels a listing.
    Cancel {
        /// Listing.
        listing_id: String,
    },
}

/// Why a memo is not a valid marketplace memo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoError {
    /// Does not start with the prefix (e.g. a pin memo): not ours, not an error to log loudly.
    #[error("not a marketplace memo")]
    NotMarketplace,
    /// Over [`MAX_MEMO_BYTES`].
    #[error("memo is {0} bytes, over the {MAX_MEMO_BYTES}-byte limit")]
    TooLong(usize),
    /// Unknown action word.
    #[error("unknown action `{0}`")]
    UnknownAction(String),
    /// Wrong number of fields for the action.
    #[error("`{action}` takes {want} fields, got {got}")]
    FieldCount {
        /// Action.
        action: &'static str,
        /// Expected.
        want: usize,
        /// Found.
        got: usize,
    },
    /// A field has the wrong shape.
    #[error("field `{field}` is not {want}")]
    BadField {
        /// Field name.
        field: &'static str,
        /// What it must be.
        want: &'static str,
    },
}

/// Kinds of field and their checks.
#[derive(Clone, Copy)]
enum Kind {
    ArweaveId,
    Hash,
    ListingId,
    OfferId,
    Pubkey,
}

impl Kind {
    fn want(self) -> &'static str {
        match self {
            Kind::ArweaveId => "a base64url Arweave id of 43 to 64 characters",
            Kind::Hash => "64 lowercase hex characters",
            Kind::ListingId => "a listing id YYYYMMDD-<12 hex>",
            Kind::OfferId => "an offer id offer-YYYYMMDD-<12 hex>",
            Kind::Pubkey => "a base58 32-byte key",
        }
    }

    fn ok(self, s: &str) -> bool {
        let hex12 = |t: &str| {
            t.len() == 12
                && t.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let listing = |t: &str| {
            t.len() == 21
                && t.as_bytes()[8] == b'-'
                && t[..8].bytes().all(|b| b.is_ascii_digit())
                && hex12(&t[9..])
        };
        match self {
            // Real ids are 43 chars (base64url of 32 bytes); the reference parser
            // checks nothing and its own fixtures carry 44-45 char placeholders,
            // so accept up to 64 of the same alphabet.
            Kind::ArweaveId => {
                (43..=64).contains(&s.len())
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }
            Kind::Hash => {
                s.len() == 64
                    && s.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
            Kind::ListingId => listing(s),
            Kind::OfferId => s.strip_prefix("offer-").is_some_and(listing),
            Kind::Pubkey => s.len() <= 44 && crate::crypto::b58_array::<32>(s).is_some(),
        }
    }
}

/// Whether `s` is a listing id (`YYYYMMDD-<12 hex>`).
pub fn is_listing_id(s: &str) -> bool {
    Kind::ListingId.ok(s)
}

/// The compact buy memo of an x402 payment: `x402:buy:<listing id>`.
/// x402 clients give a payment 20,000 compute units, and SPL Memo spends
/// about 355 a byte, so the full `buy` memo (about 95 bytes) cannot fit;
/// the buyer's X25519 key is not written: it is the Montgomery form of
/// the buyer's own Ed25519 key (the transfer's signer).
pub const X402_BUY_PREFIX: &str = "x402:buy:";

/// The listing an x402 buy memo names (`x402:buy:<listing id>`), if `memo`
/// is one.
pub fn x402_buy_listing(memo: &str) -> Option<&str> {
    memo.strip_prefix(X402_BUY_PREFIX)
        .filter(|id| is_listing_id(id))
}

/// Whether `s` is an offer id (`offer-YYYYMMDD-<12 hex>`).
pub fn is_offer_id(s: &str) -> bool {
    Kind::OfferId.ok(s)
}

/// Whether `s` is a base58 32-byte public key.
pub fn is_pubkey(s: &str) -> bool {
    Kind::Pubkey.ok(s)
}

/// Whether `s` is an Arweave item id as memos carry them.
pub fn is_arweave_id(s: &str) -> bool {
    Kind::ArweaveId.ok(s)
}

fn fields<const N: usize>(
    action: &'static str,
    parts: &[&str],
    spec: [(&'static str, Kind); N],
) -> Result<[String; N], MemoError> {
    if parts.len() != N {
        return Err(MemoError::FieldCount {
            action,
            want: N,
            got: parts.len(),
        });
    }
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    for (i, (name, kind)) in spec.iter().enumerate() {
        if !kind.ok(parts[i]) {
            return Err(MemoError::BadField {
                field: name,
                want: kind.want(),
            });
        }
        out[i] = parts[i].to_string();
    }
    Ok(out)
}

impl MemoOp {
    /// Parses a memo string.
    pub fn parse(memo: &str) -> Result<MemoOp, MemoError> {
        if memo.len() > MAX_MEMO_BYTES {
            return Err(MemoError::TooLong(memo.len()));
        }
        let rest = memo
            .strip_prefix(PREFIX)
            .and_then(|r| r.strip_prefix(':'))
            .ok_or(MemoError::NotMarketplace)?;
        let mut parts: Vec<&str> = rest.split(':').collect();
        let action = parts.remove(0);
        use Kind::*;
        Ok(match action {
            "list" => {
                let [a, h] = fields(
                    "list",
                    &parts,
                    [("listing_arweave_id", ArweaveId), ("bundle_hash", Hash)],
                )?;
                MemoOp::List {
                    listing_arweave_id: a,
                    bundle_hash: h,
                }
            }
            "offer" => {
                let [l, a, b] = fields(
                    "offer",
                    &parts,
                    [
                        ("listing_id", ListingId),
                        ("offer_arweave_id", ArweaveId),
                        ("buyer_pubkey", Pubkey),
                    ],
                )?;
                MemoOp::Offer {
                    listing_id: l,
                    offer_arweave_id: a,
                    buyer_pubkey: b,
                }
            }
            "counter" => {
                let [o, a, c] = fields(
                    "counter",
                    &parts,
                    [
                        ("offer_id", OfferId),
                        ("counter_arweave_id", ArweaveId),
                        ("counterer_pubkey", Pubkey),
                    ],
                )?;
                MemoOp::Counter {
                    offer_id: o,
                    counter_arweave_id: a,
                    counterer_pubkey: c,
                }
            }
            "accept" => MemoOp::Accept {
                offer_id: single("accept", &parts)?,
            },
            "reject" => MemoOp::Reject {
                offer_id: single("reject", &parts)?,
            },
            "withdraw" => MemoOp::Withdraw {
                offer_id: single("withdraw", &parts)?,
            },
            "buy" => {
                let [l, x] = fields(
                    "buy",
                    &parts,
                    [("listing_id", ListingId), ("buyer_x25519", Pubkey)],
                )?;
                MemoOp::Buy {
                    listing_id: l,
                    buyer_x25519: x,
                }
            }
            "release" => {
                let [l, e, m] = fields(
                    "release",
                    &parts,
                    [
                        ("listing_id", ListingId),
                        ("envelope_arweave_id", ArweaveId),
                        ("minted_token_address", Pubkey),
                    ],
                )?;
                MemoOp::Release {
                    listing_id: l,
                    envelope_arweave_id: e,
                    minted_token_address: m,
                }
            }
            "cancel" => {
                let [l] = fields("cancel", &parts, [("listing_id", ListingId)])?;
                MemoOp::Cancel { listing_id: l }
            }
            other => return Err(MemoError::UnknownAction(other.chars().take(32).collect())),
        })
    }

    /// The action word.
    pub fn action(&self) -> &'static str {
        match self {
            MemoOp::List { .. } => "list",
            MemoOp::Offer { .. } => "offer",
            MemoOp::Counter { .. } => "counter",
            MemoOp::Accept { .. } => "accept",
            MemoOp::Reject { .. } => "reject",
            MemoOp::Withdraw { .. } => "withdraw",
            MemoOp::Buy { .. } => "buy",
            MemoOp::Release { .. } => "release",
            MemoOp::Cancel { .. } => "cancel",
        }
    }

    /// The fields in wire order, with the reference parser's names.
    pub fn fields(&self) -> Vec<(&'static str, &str)> {
        match self {
            MemoOp::List {
                listing_arweave_id,
                bundle_hash,
            } => {
                vec![
                    ("listing_arweave_id", listing_arweave_id),
                    ("bundle_hash", bundle_hash),
                ]
            }
            MemoOp::Offer {
                listing_id,
                offer_arweave_id,
                buyer_pubkey,
            } => vec![
                ("listing_id", listing_id),
                ("offer_arweave_id", offer_arweave_id),
                ("buyer_pubkey", buyer_pubkey),
            ],
            MemoOp::Counter {
                offer_id,
                counter_arweave_id,
                counterer_pubkey,
            } => vec![
                ("offer_id", offer_id),
                ("counter_arweave_id", counter_arweave_id),
                ("counterer_pubkey", counterer_pubkey),
            ],
            MemoOp::Accept { offer_id }
            | MemoOp::Reject { offer_id }
            | MemoOp::Withdraw { offer_id } => {
                vec![("offer_id", offer_id)]
            }
            MemoOp::Buy {
                listing_id,
                buyer_x25519,
            } => vec![("listing_id", listing_id), ("buyer_x25519", buyer_x25519)],
            // the reference names this field `minted_cnft_address`
            MemoOp::Release {
                listing_id,
                envelope_arweave_id,
                minted_token_address,
            } => vec![
                ("listing_id", listing_id),
                ("envelope_arweave_id", envelope_arweave_id),
                ("minted_cnft_address", minted_token_address),
            ],
            MemoOp::Cancel { listing_id } => vec![("listing_id", listing_id)],
        }
    }

    /// The reference parser's dict for this memo (`{"action": ..., fields}`).
    pub fn to_reference_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("action".into(), self.action().into());
        for (k, v) in self.fields() {
            m.insert(k.into(), v.into());
        }
        serde_json::Value::Object(m)
    }
}

fn single(action: &'static str, parts: &[&str]) -> Result<String, MemoError> {
    let [o] = fields(action, parts, [("offer_id", Kind::OfferId)])?;
    Ok(o)
}

impl fmt::Display for MemoOp {
    /// The memo string (inverse of [`MemoOp::parse`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}:{}", self.action())?;
        for (_, v) in self.fields() {
            write!(f, ":{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PK: &str = "9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj";

    #[test]
    fn strict_rejections_name_the_reason() {
        let cases = [
            ("brainctl/v1:abc:def", MemoError::NotMarketplace),
            (
                "brainctl-marketplace/v1:sell:x",
                MemoError::UnknownAction("sell".into()),
            ),
            (
                "brainctl-marketplace/v1:cancel",
                MemoError::FieldCount {
                    action: "cancel",
                    want: 1,
                    got: 0,
                },
            ),
            (
                "brainctl-marketplace/v1:cancel:20261101-0123456789ab:extra",
                MemoError::FieldCount {
                    action: "cancel",
                    want: 1,
                    got: 2,
                },
            ),
            (
                "brainctl-marketplace/v1:cancel:20261101-0123456789AB",
                MemoError::BadField {
                    field: "listing_id",
                    want: Kind::ListingId.want(),
                },
            ),
            (
                "brainctl-marketplace/v1:accept:20261101-0123456789ab",
                MemoError::BadField {
                    field: "offer_id",
                    want: Kind::OfferId.want(),
                },
            ),
        ];
        for (memo, want) in cases {
            assert_eq!(MemoOp::parse(memo).unwrap_err(), want, "{memo}");
        }
        let short_id = format!(
            "brainctl-marketplace/v1:list:{}:{}",
            "a".repeat(42),
            "0".repeat(64)
        );
        assert!(matches!(
            MemoOp::parse(&short_id),
            Err(MemoError::BadField {
                field: "listing_arweave_id",
                ..
            })
        ));
        let bad_char = format!(
            "brainctl-marketplace/v1:list:{}:{}",
            "a+".repeat(22),
            "0".repeat(64)
        );
        assert!(matches!(
            MemoOp::parse(&bad_char),
            Err(MemoError::BadField {
                field: "listing_arweave_id",
                ..
            })
        ));
        let bad_key = format!(
            "brainctl-marketplace/v1:buy:20261101-0123456789ab:{}",
            &PK[..40]
        );
        assert!(matches!(
            MemoOp::parse(&bad_key),
            Err(MemoError::BadField {
                field: "buyer_x25519",
                ..
            })
        ));
        assert!(matches!(
            MemoOp::parse(&"x".repeat(600)),
            Err(MemoError::TooLong(600))
        ));
    }

    #[test]
    fn display_is_the_inverse_of_parse() {
        let m = format!("brainctl-marketplace/v1:buy:20261101-0123456789ab:{PK}");
        assert_eq!(MemoOp::parse(&m).unwrap().to_string(), m);
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,700}") {
            let _ = MemoOp::parse(&s);
            let _ = MemoOp::parse(&format!("{PREFIX}:{s}"));
        }

        #[test]
        fn cancel_round_trips(date in "[0-9]{8}", id in "[0-9a-f]{12}") {
            let m = format!("{PREFIX}:cancel:{date}-{id}");
            let op = MemoOp::parse(&m).unwrap();
            prop_assert_eq!(op.to_string(), m);
        }
    }
}
