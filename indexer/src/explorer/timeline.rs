//! A listing's story as rows: listed, offers and counters, accepts and
//! rejects, buys, releases, refunds, cancel — in chain order, with the
//! transaction of each. Pure; the visibility rule is the API's
//! ([`views::may_see_trade`] for an anonymous reader: a private listing's
//! offers and buys never show).

use crate::fold::{At, ListingState, OfferStatus, SettlementStatus, State};
use crate::views;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The seller listed.
    Listed,
    /// A buyer offered a price.
    Offer,
    /// Either side countered.
    Counter,
    /// The seller accepted an offer.
    Accepted,
    /// The seller rejected an offer.
    Rejected,
    /// The buyer withdrew an offer.
    Withdrawn,
    /// A verified buy (paid).
    Buy,
    /// A buy the rules refused (the reason is in `detail`).
    RefusedBuy,
    /// The seller released a buy's key.
    Release,
    /// The buyer took an escrow deposit back.
    Refund,
    /// The seller cancelled the listing.
    Cancelled,
}

impl Event {
    /// Its label (also the row's CSS class).
    pub fn label(self) -> &'static str {
        match self {
            Event::Listed => "listed",
            Event::Offer => "offer",
            Event::Counter => "counter",
            Event::Accepted => "accepted",
            Event::Rejected => "rejected",
            Event::Withdrawn => "withdrawn",
            Event::Buy => "buy",
            Event::RefusedBuy => "refused buy",
            Event::Release => "release",
            Event::Refund => "refund",
            Event::Cancelled => "cancelled",
        }
    }
}

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    /// What happened.
    pub event: Event,
    /// Where on chain.
    pub at: &'a At,
    /// Who did it (a base58 pubkey).
    pub who: &'a str,
    /// The price it names, if any (lamports).
    pub lamports: Option<u64>,
    /// The offer it belongs to, a refusal reason, ...
    pub detail: Option<String>,
}

/// The timeline of `l` as an anonymous reader may see it, oldest first.
pub fn of<'a>(state: &'a State, l: &'a ListingState) -> Vec<Row<'a>> {
    let mut rows = vec![Row {
        event: Event::Listed,
        at: &l.listed,
        who: &l.seller,
        lamports: l.price_lamports,
        detail: None,
    }];
    for o in state
        .offers
        .values()
        .filter(|o| o.listing_id == l.listing_id && views::may_see_offer(state, o, None))
    {
        for (i, t) in o.terms.iter().enumerate() {
            rows.push(Row {
                event: if i == 0 { Event::Offer } else { Event::Counter },
                at: &t.at,
                who: &t.from,
                lamports: t.price_lamports,
                detail: Some(o.offer_id.clone()),
            });
        }
        if let Some(closed) = &o.closed {
            let (event, who) = match o.status {
                OfferStatus::Accepted => (Event::Accepted, l.seller.as_str()),
                OfferStatus::Rejected => (Event::Rejected, l.seller.as_str()),
                OfferStatus::Withdrawn => (Event::Withdrawn, o.buyer.as_str()),
                OfferStatus::Open | OfferStatus::Countered => continue,
            };
            rows.push(Row {
                event,
                at: closed,
                who,
                lamports: Some(o.current().price_lamports).flatten(),
                detail: Some(o.offer_id.clone()),
            });
        }
    }
    for (_, s) in views::visible_settlements(state, l, None) {
        let refused = matches!(s.status, SettlementStatus::Rejected { .. });
        rows.push(Row {
            event: if refused {
                Event::RefusedBuy
            } else {
                Event::Buy
            },
            at: &s.at,
            who: &s.buyer,
            lamports: Some(s.paid_lamports),
            detail: match &s.status {
                SettlementStatus::Rejected { reason } => Some(reason.to_string()),
                _ => s.offer_id.as_ref().map(|o| format!("at the terms of {o}")),
            },
        });
        match &s.status {
            SettlementStatus::Released { at, .. } => rows.push(Row {
                event: Event::Release,
                at,
                who: &l.seller,
                lamports: None,
                detail: Some(format!("for buy {}", short(&s.at.signature))),
            }),
            SettlementStatus::Refunded {
                at,
                slashed_lamports,
            } => rows.push(Row {
                event: Event::Refund,
                at,
                who: &s.buyer,
                lamports: Some(s.paid_lamports),
                detail: Some(format!("{slashed_lamports} lamports of stake slashed")),
            }),
            _ => {}
        }
    }
    if let Some(c) = &l.cancelled {
        rows.push(Row {
            event: Event::Cancelled,
            at: c,
            who: &l.seller,
            lamports: None,
            detail: None,
        });
    }
    rows.sort_by_key(|r| r.at.slot);
    rows
}

/// The first characters of a signature or key, for display.
pub fn short(s: &str) -> String {
    match s.char_indices().nth(8) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::{FoldConfig, State};
    use crate::synth::{wallet, LogBuilder};

    fn fold(b: &LogBuilder) -> State {
        let mut book = crate::book::ManifestBook::new();
        book.add_records(b.records());
        State::fold(b.records(), &book, &FoldConfig::default())
    }

    #[test]
    fn a_negotiated_sale_reads_in_chain_order() {
        let mut b = LogBuilder::new();
        let (seller, buyer) = (wallet(1, 1), wallet(2, 1));
        let l = b.list(&seller, 1, "auction");
        let offer = b.offer(&buyer, &l, 500);
        b.counter(&seller, &offer, 700);
        b.memo(
            &seller,
            node::market::MemoOp::Accept {
                offer_id: offer.clone(),
            },
        );
        let buy = b.buy(&buyer, &l, 700);
        b.release(&seller, &l, &buyer, &buy);
        let s = fold(&b);
        let rows = of(&s, &s.listings[&l.listing_id]);
        let events: Vec<_> = rows.iter().map(|r| r.event).collect();
        assert_eq!(
            events,
            [
                Event::Listed,
                Event::Offer,
                Event::Counter,
                Event::Accepted,
                Event::Buy,
                Event::Release
            ]
        );
        assert_eq!(rows[1].lamports, Some(500));
        assert_eq!(rows[2].lamports, Some(700));
        assert_eq!(rows[4].lamports, Some(700));
        assert!(rows.windows(2).all(|w| w[0].at.slot <= w[1].at.slot));
    }

    #[test]
    fn a_private_listing_shows_no_offers_or_buys_to_strangers() {
        let mut b = LogBuilder::new();
        let (seller, buyer) = (wallet(1, 2), wallet(2, 2));
        let l = b.list(&seller, 1, "private");
        b.offer(&buyer, &l, 500);
        let buy = b.buy(&buyer, &l, l.price_lamports.unwrap());
        b.release(&seller, &l, &buyer, &buy);
        let s = fold(&b);
        let rows = of(&s, &s.listings[&l.listing_id]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].event, Event::Listed);
    }
}
