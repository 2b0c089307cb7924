//! What an answer about some listings reads, in one statement: the head
//! and the counts, the listings an [`Anchor`] names, their offers, their
//! buys in chain order and the escrow deposits into them. One statement
//! is one snapshot on either database, so an answer needs no read
//! transaction and costs one round trip to PostgreSQL, whatever the
//! listing holds. Each backend writes the statement in its dialect; the
//! rows come back as [`AroundRow`]s, decoded here once for both.
//!
//! Owns the shape of that read and its decoding; never writes.

use super::{decode, decode_settlement, StoreError};
use crate::fold::{EscrowState, Head, ListingState, OfferState, Settlement, Totals};
use std::collections::BTreeSet;

/// Which listings an answer is about.
#[derive(Debug, Clone)]
pub enum Anchor {
    /// These listings (read whole when `bodies`; else only what hangs on
    /// them, the caller holding the listings already).
    Listings {
        /// Listing ids.
        ids: BTreeSet<String>,
        /// Whether the listings' own rows are read.
        bodies: bool,
    },
    /// The listing an offer is on.
    Offer(String),
    /// The listing a buy paid for.
    Settlement(String),
    /// Every listing of a seller.
    Seller(String),
    /// An escrow deposit (read even when no listing holds its account),
    /// and the listing it went into.
    Escrow(String),
}

impl Anchor {
    /// No listing: the head and the counts alone.
    pub fn nothing() -> Anchor {
        Anchor::Listings {
            ids: BTreeSet::new(),
            bodies: false,
        }
    }

    /// The statement's parameters: the anchor's key (a JSON array of ids
    /// for [`Anchor::Listings`]), whether listing rows are read, and the
    /// escrow account read on its own.
    pub fn params(&self) -> (String, bool, Option<String>) {
        match self {
            Anchor::Listings { ids, bodies } => (
                serde_json::to_string(ids).expect("strings serialize"),
                *bodies,
                None,
            ),
            Anchor::Offer(k) | Anchor::Settlement(k) | Anchor::Seller(k) => (k.clone(), true, None),
            Anchor::Escrow(k) => (k.clone(), true, Some(k.clone())),
        }
    }
}

/// One row of the statement: what it is (the `K_*` numbers), its key and
/// its canonical JSON (for the head, the array [`head_of`] reads).
pub type AroundRow = (i64, String, String);

/// The head row: `[now, last_slot, last_idx, transactions, listings,
/// offers, settlements, rejected]`.
pub const K_HEAD: i64 = 0;
/// A listing row.
pub const K_LISTING: i64 = 1;
/// An offer row.
pub const K_OFFER: i64 = 2;
/// A buy row (in chain order).
pub const K_SETTLEMENT: i64 = 3;
/// An escrow deposit row.
pub const K_ESCROW: i64 = 4;

/// What the statement read.
#[derive(Debug, Default)]
pub struct Around {
    /// The head the rows reflect.
    pub head: Head,
    /// The whole market's counts.
    pub totals: Totals,
    /// The listings (none when the anchor asked for no bodies).
    pub listings: Vec<ListingState>,
    /// Their offers.
    pub offers: Vec<OfferState>,
    /// Their buys, in chain order.
    pub settlements: Vec<(String, Settlement)>,
    /// Escrow deposits into them (and the anchor's own).
    pub escrows: Vec<(String, EscrowState)>,
}

/// The statement's rows decoded.
pub fn decode_rows(rows: Vec<AroundRow>) -> Result<Around, StoreError> {
    let mut a = Around::default();
    for (kind, key, body) in rows {
        match kind {
            K_HEAD => (a.head, a.totals) = head_of(&body)?,
            K_LISTING => a.listings.push(decode(&key, &body)?),
            K_OFFER => a.offers.push(decode(&key, &body)?),
            K_SETTLEMENT => {
                let b = decode_settlement(&key, &body)?;
                a.settlements.push((key, b));
            }
            K_ESCROW => {
                let e = decode(&key, &body)?;
                a.escrows.push((key, e));
            }
            other => {
                return Err(StoreError::Foreign(format!(
                    "state read returned a row of unknown kind {other}"
                )))
            }
        }
    }
    Ok(a)
}

/// The head and the counts from the head row's array.
fn head_of(body: &str) -> Result<(Head, Totals), StoreError> {
    type Cols = (i64, Option<i64>, Option<i64>, i64, i64, i64, i64, i64);
    let (now, slot, idx, transactions, listings, offers, settlements, rejected): Cols =
        decode("state head", body)?;
    Ok((
        Head {
            now,
            last: super::position(slot, idx),
            transactions: transactions as u64,
        },
        Totals {
            listings: listings as u64,
            offers: offers as u64,
            settlements: settlements as u64,
            rejected: rejected as u64,
        },
    ))
}

/// The statement, around the listing ids `{ids}` selects (one column,
/// `id`), kept in the `ids` CTE as the backend likes (`{ids_cte}`) and
/// matched with `{in_ids}` (and the listings' escrow accounts with
/// `{in_accounts}`): PostgreSQL gets arrays, which its indexes answer
/// (`IN` over a CTE of unknown size plans as a scan of the whole table);
/// SQLite gets `IN` subqueries. `{p1}`..`{p3}` are the parameters of
/// [`Anchor::params`] in the backend's notation, `{head}` its JSON array
/// of the head's columns, `{c}` its bytewise collation.
pub const TEMPLATE: &str = "WITH ids AS ({ids_cte}),
 l AS (SELECT id, escrow_account, body FROM state_listings WHERE id {in_ids})
 SELECT 0 AS k, '' {c} AS key, {head} AS body, 0 AS slot, 0 AS idx FROM state_head
 UNION ALL SELECT 1, id, body, 0, 0 FROM l WHERE {p2}
 UNION ALL SELECT 2, id, body, 0, 0 FROM state_offers WHERE listing_id {in_ids}
 UNION ALL SELECT 3, signature, body, slot, idx FROM state_settlements WHERE listing_id {in_ids}
 UNION ALL SELECT 4, account, body, 0, 0 FROM state_escrows WHERE listing_account {in_accounts}
 UNION ALL SELECT 4, account, body, 0, 0 FROM state_escrows WHERE account = {p3}
 ORDER BY k, slot, idx, key";

/// The listing ids each anchor selects, `{p1}` its parameter and
/// `{unnest}` the backend's "one row per element of a JSON array".
pub fn ids_sql(anchor: &Anchor) -> &'static str {
    match anchor {
        Anchor::Listings { .. } => "{unnest}",
        Anchor::Offer(_) => "SELECT listing_id AS id FROM state_offers WHERE id = {p1}",
        Anchor::Settlement(_) => {
            "SELECT listing_id AS id FROM state_settlements WHERE signature = {p1}"
        }
        Anchor::Seller(_) => "SELECT id FROM state_listings WHERE seller = {p1}",
        Anchor::Escrow(_) => {
            "SELECT id FROM state_listings WHERE escrow_account =
               (SELECT listing_account FROM state_escrows WHERE account = {p1})
             ORDER BY id LIMIT 1"
        }
    }
}

/// A backend's notation for [`TEMPLATE`].
pub struct Dialect {
    /// The `ids` CTE's body around `{ids}`.
    pub ids_cte: &'static str,
    /// "Is one of the ids" (`ids` CTE).
    pub in_ids: &'static str,
    /// "Is one of the listings' escrow accounts" (`l` CTE).
    pub in_accounts: &'static str,
    /// Parameters 1 to 3, typed as the statement needs them.
    pub params: [&'static str; 3],
    /// One row (`id`) per element of the JSON array parameter 1.
    pub unnest: &'static str,
    /// The head's columns as a JSON array, as text.
    pub head: &'static str,
    /// The bytewise collation clause for the empty key.
    pub collate: &'static str,
}

const HEAD_COLS: &str =
    "now, last_slot, last_idx, transactions, n_listings, n_offers, n_settlements, n_rejected";

impl Dialect {
    /// The statement for `anchor` in this dialect.
    pub fn sql(&self, anchor: &Anchor) -> String {
        let [p1, p2, p3] = self.params;
        TEMPLATE
            .replace("{ids_cte}", self.ids_cte)
            .replace("{in_ids}", self.in_ids)
            .replace("{in_accounts}", self.in_accounts)
            .replace("{ids}", ids_sql(anchor))
            .replace("{unnest}", self.unnest)
            .replace("{head}", &self.head.replace("{cols}", HEAD_COLS))
            .replace("{c}", self.collate)
            .replace("{p1}", p1)
            .replace("{p2}", p2)
            .replace("{p3}", p3)
    }
}
