//! The escrow family: the escrow program's events (deposit, release,
//! refund, slash) as they appear in a successful transaction's logs, the
//! deposits they describe, and the buy a refund or slash settles. Never
//! reads memos.

use super::settlement::{Settlement, SettlementStatus};
use super::{At, State};
use crate::fold::refusal::Refusal;
use crate::record::TxRecord;
use node::escrow::EscrowEvent;
use serde::Serialize;

/// One escrow deposit as the program's events tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EscrowState {
    /// Listing account (program PDA).
    pub listing: String,
    /// Buyer.
    pub buyer: String,
    /// Lamports deposited.
    pub amount: u64,
    /// deposited | released | refunded.
    pub status: &'static str,
    /// Envelope named on release.
    pub envelope_id: Option<String>,
    /// Paid to the seller and to the treasury on release.
    pub paid: Option<(u64, u64)>,
    /// Deposit transaction.
    pub deposited: At,
    /// Release or refund transaction.
    pub settled: Option<At>,
    /// Stake paid to the refunded buyer, once slashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slashed: Option<u64>,
}

impl State {
    pub(super) fn apply_escrow(&mut self, ev: EscrowEvent, r: &TxRecord) {
        match ev {
            EscrowEvent::Deposited {
                listing,
                escrow,
                buyer,
                amount,
            } => {
                self.escrows.insert(
                    escrow.to_string(),
                    EscrowState {
                        listing: listing.to_string(),
                        buyer: buyer.to_string(),
                        amount,
                        status: "deposited",
                        envelope_id: None,
                        paid: None,
                        deposited: At::of(r),
                        settled: None,
                        slashed: None,
                    },
                );
            }
            EscrowEvent::Released {
                escrow,
                envelope_id,
                to_seller,
                fee,
            } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "released";
                    e.envelope_id = Some(envelope_id);
                    e.paid = Some((to_seller, fee));
                    e.settled = Some(At::of(r));
                }
            }
            EscrowEvent::Refunded { escrow, .. } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.status = "refunded";
                    e.settled = Some(At::of(r));
                }
                if let Some(s) = self.escrow_settlement(&escrow.to_string()) {
                    s.status = SettlementStatus::Refunded {
                        at: At::of(r),
                        slashed_lamports: 0,
                    };
                }
            }
            EscrowEvent::Slashed { escrow, amount } => {
                if let Some(e) = self.escrows.get_mut(&escrow.to_string()) {
                    e.slashed = Some(amount);
                }
                if let Some(s) = self.escrow_settlement(&escrow.to_string()) {
                    if let SettlementStatus::Refunded {
                        slashed_lamports, ..
                    } = &mut s.status
                    {
                        *slashed_lamports = amount;
                    }
                }
            }
            EscrowEvent::Other(_) => {}
        }
    }

    /// The buy whose deposit `escrow` holds (or held): the paid or
    /// refunded settlement of its buyer on the listing whose program
    /// account it belongs to.
    fn escrow_settlement(&mut self, escrow: &str) -> Option<&mut Settlement> {
        let e = self.escrows.get(escrow)?;
        let (account, buyer) = (e.listing.clone(), e.buyer.clone());
        let listing_id = self
            .listings
            .values()
            .find(|l| {
                escrow_listing_account(&l.seller, &l.listing_id).ok() == Some(account.clone())
            })?
            .listing_id
            .clone();
        let sig = self
            .settlements_of(&listing_id)
            .find(|(_, s)| {
                s.buyer == buyer
                    && matches!(
                        s.status,
                        SettlementStatus::Paid | SettlementStatus::Refunded { .. }
                    )
            })
            .map(|(k, _)| k.clone())?;
        self.settlements.get_mut(&sig)
    }
}

/// The escrow program's listing account of (seller, listing id).
pub fn escrow_listing_account(seller: &str, listing_id: &str) -> Result<String, Refusal> {
    let seller_key: node::chain::Pubkey = seller.parse().map_err(|_| Refusal::SellerNotPubkey {
        seller: seller.into(),
    })?;
    Ok(node::escrow::listing_address(&seller_key, listing_id).to_string())
}
