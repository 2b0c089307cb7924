//! The escrow family: the sealed escrow's events (deposit, reveal,
//! decline, claim, expiry, refund, proven fraud) as the program emitted them
//! (its self-CPIs) in a successful transaction, the deposits they describe,
//! and the buy each settles: the one whose transaction made the deposit
//! the escrow account holds (an account is deposited into again after a
//! refund, and each deposit is its own buy). Never reads memos.

use super::settlement::{Settlement, SettlementStatus};
use super::{At, State};
use crate::record::TxRecord;
use node::escrow::EscrowEvent;
use serde::{Deserialize, Deserializer, Serialize};
use std::sync::Arc;

/// One escrow deposit as the program's events tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscrowState {
    /// Listing account (program PDA).
    pub listing: String,
    /// Buyer.
    pub buyer: String,
    /// Deposited: lamports, or base units of the listing's token.
    pub amount: u64,
    /// The token held (absent: SOL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mint: Option<String>,
    /// deposited | revealed | declined | claimed | expired | refunded |
    /// disputed.
    #[serde(deserialize_with = "status_word")]
    pub status: StatusWord,
    /// Paid to the seller and to the treasury on claim.
    pub paid: Option<(u64, u64)>,
    /// Deposit transaction.
    pub deposited: At,
    /// Reveal transaction (the key reached the buyer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revealed: Option<At>,
    /// Claim, refund or dispute transaction.
    pub settled: Option<At>,
    /// The chunk a proven fraud named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fraud_chunk: Option<u32>,
    /// Stake paid to the buyer (missed reveal or proven fraud).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slashed: Option<u64>,
}

/// An escrow status: one of the fold's own words. (An alias, so serde's
/// derive, which reads types by their spelling, does not take the field
/// for a borrow of the input.)
pub type StatusWord = &'static str;

/// The escrow statuses the fold writes.
const STATUSES: [&str; 7] = [
    "deposited",
    "revealed",
    "declined",
    "claimed",
    "expired",
    "refunded",
    "disputed",
];

/// A stored status read back as the fold's own word.
fn status_word<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s = String::deserialize(d)?;
    STATUSES
        .into_iter()
        .find(|w| *w == s)
        .ok_or_else(|| serde::de::Error::unknown_variant(&s, &STATUSES))
}

impl State {
    pub(super) fn apply_escrow(&mut self, ev: EscrowEvent, r: &TxRecord) {
        match ev {
            EscrowEvent::Deposited {
                listing,
                escrow,
                buyer,
                amount,
                mint,
                ..
            } => {
                self.escrows.insert(
                    escrow.to_string(),
                    EscrowState {
                        listing: listing.to_string(),
                        buyer: buyer.to_string(),
                        amount,
                        mint: (mint != node::chain::Pubkey::default()).then(|| mint.to_string()),
                        status: "deposited",
                        paid: None,
                        deposited: At::of(r),
                        revealed: None,
                        settled: None,
                        fraud_chunk: None,
                        slashed: None,
                    },
                );
            }
            EscrowEvent::Revealed { escrow } => {
                let escrow = escrow.to_string();
                if let Some(e) = self.escrows.get_mut(&escrow) {
                    e.status = "revealed";
                    e.revealed = Some(At::of(r));
                }
                // the program's reveal releases the buy (the key reached
                // its buyer); the receipt token, minted apart, is not named
                if let Some(s) = self.escrow_settlement(&escrow) {
                    if s.status == SettlementStatus::Paid {
                        s.status = SettlementStatus::Released {
                            at: At::of(r),
                            envelope_id: escrow,
                            minted_token: String::new(),
                        };
                    }
                }
            }
            EscrowEvent::Declined { escrow } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "declined";
                }
            }
            EscrowEvent::Claimed {
                escrow,
                to_seller,
                fee,
            } => {
                let escrow = escrow.to_string();
                if let Some(e) = self.escrows.get_mut(&escrow) {
                    e.status = "claimed";
                    e.paid = Some((to_seller, fee));
                    e.settled = Some(At::of(r));
                }
                // the seller was paid: only now is it a sale
                if let Some(s) = self.escrow_settlement(&escrow) {
                    s.claimed = Some(At::of(r));
                }
            }
            EscrowEvent::Refunded {
                escrow,
                amount,
                slashed,
            } => {
                // closing a claimed escrow returns its rent only; a token
                // escrow's withdrawal after its conviction keeps the
                // verdict (the fraud proof settled the buy)
                let escrow = escrow.to_string();
                let convicted = self
                    .escrows
                    .get(&escrow)
                    .is_some_and(|e| e.status == "disputed");
                if amount > 0 && !convicted {
                    self.escrow_refunded(&escrow, r, slashed, "refunded", None);
                }
            }
            EscrowEvent::FraudProven {
                escrow,
                index,
                slashed,
                ..
            } => self.escrow_refunded(&escrow.to_string(), r, slashed, "disputed", Some(index)),
            // left past its window: the share waits in the escrow for the
            // buyer's refund (which settles the buy)
            EscrowEvent::Expired { escrow, slashed } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "expired";
                    e.slashed = (slashed > 0).then_some(slashed);
                }
            }
            // a buy's quote is read by its settlement (`UsdTerms::quoted`)
            EscrowEvent::UsdQuoted(_) | EscrowEvent::Other(_) => {}
        }
    }

    /// A deposit returned to its buyer (with `slashed` of the stake).
    fn escrow_refunded(
        &mut self,
        escrow: &str,
        r: &TxRecord,
        slashed: u64,
        status: &'static str,
        fraud_chunk: Option<u32>,
    ) {
        if let Some(e) = self.escrows.get_mut(escrow) {
            e.status = status;
            e.settled = Some(At::of(r));
            e.slashed = (slashed > 0).then_some(slashed);
            e.fraud_chunk = fraud_chunk;
        }
        if let Some(s) = self.escrow_settlement(escrow) {
            s.status = SettlementStatus::Refunded {
                at: At::of(r),
                slashed_lamports: slashed,
            };
        }
    }

    /// The buy whose deposit `escrow` holds: the verified settlement of
    /// the transaction that made that deposit (an event names the escrow
    /// account; the account's latest deposit is the one it holds, since
    /// the program takes another only once the last is closed).
    fn escrow_settlement(&mut self, escrow: &str) -> Option<&mut Settlement> {
        let sig = &self.escrows.get(escrow)?.deposited.signature;
        let s = self.settlements.get_mut(sig).map(Arc::make_mut)?;
        (!matches!(s.status, SettlementStatus::Rejected { .. })).then_some(s)
    }
}
