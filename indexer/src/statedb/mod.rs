//! The folded state as database rows: one table per entity (listings,
//! offers, buys, refused memos, escrow deposits, folded transactions) and
//! one row of scalars, written a batch at a time in one transaction with
//! the log change number the state reflects and the undo rows that take
//! the batch back. SQLite ([`sqlite::SqliteState`]) is the embedded
//! default; PostgreSQL ([`postgres::PgState`]) is the server mode, whose
//! hot standbys serve the same rows to stateless API servers.
//!
//! Each entity's row holds its canonical JSON: the exact bytes the state
//! hash covers, so [`state_hash`] streams the hash from the tables in key
//! order without building the state. Secondary columns (a buy's listing
//! and position, an offer's listing, a listing's seller) are the indexes
//! the fold's loads and the API's queries use.
//!
//! Owns the encoding and the storage contract; never decides what a
//! record means (that is [`crate::fold`]) nor when to fold ([`durable`]).

pub mod answers;
pub mod around;
pub mod durable;
pub mod postgres;
pub mod read;
pub mod sieve;
pub mod sqlite;

use crate::fold::{
    Changes, EscrowState, Head, ListingState, OfferState, Rejected, Rows, Settlement, State, Totals,
};
use crate::record::Position;
use crate::store::StoreError;
use around::{Anchor, Around};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The entity tables, in the order the state hash writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `listings`: listing id → listing.
    Listing = 1,
    /// `offers`: offer id → offer.
    Offer = 2,
    /// `settlements`: buy signature → buy.
    Settlement = 3,
    /// `rejected`: transaction signature → refused memos.
    Rejected = 4,
    /// `escrows`: escrow account → deposit.
    Escrow = 5,
    /// Folded transactions (not hashed): signature → position.
    Seen = 6,
}

impl Kind {
    /// The hashed kinds, in the state's field order, with their field names.
    pub const HASHED: [(Kind, &'static str); 5] = [
        (Kind::Listing, "listings"),
        (Kind::Offer, "offers"),
        (Kind::Settlement, "settlements"),
        (Kind::Rejected, "rejected"),
        (Kind::Escrow, "escrows"),
    ];

    /// The stored number.
    pub fn number(self) -> i16 {
        self as i16
    }

    /// Every kind.
    pub const ALL: [Kind; 6] = [
        Kind::Listing,
        Kind::Offer,
        Kind::Settlement,
        Kind::Rejected,
        Kind::Escrow,
        Kind::Seen,
    ];

    /// The kind stored as `n`.
    pub fn from_number(n: i64) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as i64 == n)
    }
}

/// The table and key column of a kind.
pub(crate) fn table(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Listing => ("state_listings", "id"),
        Kind::Offer => ("state_offers", "id"),
        Kind::Settlement => ("state_settlements", "signature"),
        Kind::Rejected => ("state_rejected", "signature"),
        Kind::Escrow => ("state_escrows", "account"),
        Kind::Seen => ("state_seen", "signature"),
    }
}

/// A stored position (both parts or none).
pub(crate) fn position(slot: Option<i64>, idx: Option<i64>) -> Option<Position> {
    Some((slot? as u64, idx? as u32))
}

/// Rows `(key, canonical JSON)` decoded.
pub(crate) fn decoded<T: DeserializeOwned>(
    rows: Vec<(String, String)>,
) -> Result<Vec<(String, T)>, StoreError> {
    rows.into_iter()
        .map(|(k, b)| decode(&k, &b).map(|v| (k, v)))
        .collect()
}

/// Buy rows `(signature, canonical JSON)` decoded.
pub(crate) fn settlements(
    rows: Vec<(String, String)>,
) -> Result<Vec<(String, Settlement)>, StoreError> {
    rows.into_iter()
        .map(|(k, b)| decode_settlement(&k, &b).map(|v| (k, v)))
        .collect()
}

/// A listing's row: the columns its queries filter on (the view columns
/// a page's [`sieve::Sieve`] reads among them), and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct ListingRow {
    /// Listing id (the key).
    pub id: String,
    /// Seller.
    pub seller: String,
    /// The escrow program's listing account, for an escrow listing.
    pub escrow_account: Option<String>,
    /// Cancelled by its seller.
    pub cancelled: bool,
    /// Listed again by another seller (its status is `contested`).
    pub contested: bool,
    /// Expiry (unix seconds).
    pub expires_at: i64,
    /// auction | private.
    pub visibility: String,
    /// Price (USD).
    pub price_usd: f64,
    /// Canonical JSON.
    pub body: String,
}

/// One stored row of any kind, for writes and undo.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    /// A listing.
    Listing(ListingRow),
    /// An offer, under its listing.
    Offer {
        /// Offer id.
        id: String,
        /// Its listing.
        listing_id: String,
        /// Canonical JSON.
        body: String,
    },
    /// A buy, under its listing, at its transaction's position (`None`:
    /// an update that keeps the stored position).
    Settlement {
        /// Buy signature.
        signature: String,
        /// Its listing.
        listing_id: String,
        /// Where the buy sits.
        at: Option<Position>,
        /// Canonical JSON.
        body: String,
    },
    /// A transaction's refused memos.
    Rejected {
        /// Transaction signature.
        signature: String,
        /// Canonical JSON.
        body: String,
    },
    /// An escrow deposit, under the listing account it went into.
    Escrow {
        /// Escrow account.
        account: String,
        /// The escrow program's listing account.
        listing_account: String,
        /// Canonical JSON.
        body: String,
    },
    /// A folded transaction.
    Seen {
        /// Signature.
        signature: String,
        /// Where it sits.
        at: Position,
    },
}

/// An undo entry: a key's value before a batch (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Undo {
    /// Which table.
    pub kind: Kind,
    /// Which key.
    pub key: String,
    /// Its canonical JSON before (a position's `[slot,index]` for `Seen`).
    pub before: Option<String>,
}

/// One batch to commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// Rows inserted or updated.
    pub rows: Vec<Row>,
    /// Keys deleted (a rewind only).
    pub deletes: Deletes,
    /// The scalars after.
    pub head: Head,
    /// Undo: the scalars and the changed keys' values before (`None`: the
    /// batch cannot be taken back; a rewind into it rebuilds).
    pub undo: Option<(Head, Vec<Undo>)>,
    /// The log change number the state reflects after this batch (`None`:
    /// unchanged; a catch-up sets it with its last batch).
    pub applied_seq: Option<u64>,
    /// New listings, offers, buys and refused transactions (the counts).
    pub added: Totals,
}

/// The counts `deletes` take away.
pub fn removed_by(deletes: &Deletes) -> Totals {
    let n = |k: Kind| deletes.iter().filter(|(kind, _)| *kind == k).count() as u64;
    Totals {
        listings: n(Kind::Listing),
        offers: n(Kind::Offer),
        settlements: n(Kind::Settlement),
        rejected: n(Kind::Rejected),
    }
}

/// What [`StateDb::rewind`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewound {
    /// Every batch that folded anything at or after the position was
    /// taken back: the state is the fold of the log before it.
    To(Head),
    /// A batch without undo rows folded at or after it: rebuild.
    Unreachable,
}

/// The state tables behind one narrow trait (reads are [`Rows`]).
pub trait StateDb: Rows<Error = StoreError> + Send {
    /// The log change number the state reflects (`None`: never folded).
    fn applied_seq(&mut self) -> Result<Option<u64>, StoreError>;
    /// Writes a batch in one transaction.
    fn commit(&mut self, c: &Commit) -> Result<(), StoreError>;
    /// Takes back, newest first, every batch whose last record sits at or
    /// after `from`, in one transaction.
    fn rewind(&mut self, from: Position) -> Result<Rewound, StoreError>;
    /// Empties every table (a rebuild).
    fn clear(&mut self) -> Result<(), StoreError>;
    /// Which commit of the tables a read now sees, where the database
    /// names one ([`answers`]: answers are kept per version). PostgreSQL:
    /// the transaction that last wrote the head row, which every commit
    /// and rewind rewrites. `None` (SQLite, whose reads are in-process,
    /// or an empty state): nothing is kept.
    fn version(&mut self) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }
    /// Starts a read snapshot: every read until [`StateDb::end_read`] sees
    /// the tables as of one commit.
    fn begin_read(&mut self) -> Result<(), StoreError>;
    /// Ends it.
    fn end_read(&mut self) -> Result<(), StoreError>;
    /// What an answer about the listings `anchor` names reads, in one
    /// statement (its own snapshot, or the open read's).
    fn around(&mut self, anchor: &Anchor) -> Result<Around, StoreError>;
    /// At most `limit` listings `sieve` lets through, in id order.
    fn listings_after(
        &mut self,
        sieve: &sieve::Sieve,
        limit: usize,
    ) -> Result<Vec<ListingState>, StoreError>;
    /// The refused memos of the transactions `signatures`.
    fn rejected(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Vec<Rejected>)>, StoreError>;
    /// Every row of a hashed kind in key order (bytewise), `(key, body)`
    /// to `f`, a page at a time.
    fn scan(
        &mut self,
        kind: Kind,
        f: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
}

/// Canonical JSON of an entity (what the state hash writes for it).
pub fn body<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("entities serialize")
}

/// An entity back from its canonical JSON.
pub fn decode<T: DeserializeOwned>(key: &str, body: &str) -> Result<T, StoreError> {
    serde_json::from_str(body).map_err(|source| StoreError::Corrupt {
        signature: key.to_string(),
        source,
    })
}

/// A buy back from its canonical JSON, which holds `at` twice (the buy's,
/// then the release's or refund's after `status`: the flattened status
/// repeats the key, and the state hash has always covered both).
pub fn decode_settlement(key: &str, body: &str) -> Result<Settlement, StoreError> {
    /// Every key and value in order, duplicates kept.
    struct Pairs(Vec<(String, serde_json::Value)>);
    impl<'de> serde::Deserialize<'de> for Pairs {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Pairs;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Pairs, A::Error> {
                    let mut pairs = Vec::new();
                    while let Some(kv) = m.next_entry()? {
                        pairs.push(kv);
                    }
                    Ok(Pairs(pairs))
                }
            }
            d.deserialize_map(V)
        }
    }
    let corrupt = |source| StoreError::Corrupt {
        signature: key.to_string(),
        source,
    };
    let Pairs(mut pairs) = serde_json::from_str(body).map_err(corrupt)?;
    let mut after_status = false;
    for (k, _) in pairs.iter_mut() {
        match k.as_str() {
            "status" => after_status = true,
            "at" if after_status => *k = "status_at".into(),
            _ => {}
        }
    }
    serde_json::from_value(serde_json::Value::Object(pairs.into_iter().collect())).map_err(corrupt)
}

/// A listing's row.
pub fn listing_row(l: &ListingState) -> ListingRow {
    let escrow = l.is_escrow();
    ListingRow {
        id: l.listing_id.clone(),
        seller: l.seller.clone(),
        escrow_account: escrow
            .then(|| crate::fold::escrow_listing_account(&l.seller, &l.listing_id).ok())
            .flatten(),
        cancelled: l.cancelled.is_some(),
        contested: !l.contested_by.is_empty(),
        expires_at: l.expires_at,
        visibility: l.visibility.clone(),
        price_usd: l.price_usd,
        body: body(l),
    }
}

/// The rows of `changes`.
pub fn rows_of(changes: &Changes) -> Vec<Row> {
    let mut rows = Vec::new();
    rows.extend(
        changes
            .listings
            .iter()
            .map(|l| Row::Listing(listing_row(l))),
    );
    rows.extend(changes.offers.iter().map(|o| Row::Offer {
        id: o.offer_id.clone(),
        listing_id: o.listing_id.clone(),
        body: body(o),
    }));
    rows.extend(
        changes
            .settlements
            .iter()
            .map(|(sig, at, b)| Row::Settlement {
                signature: sig.clone(),
                listing_id: b.listing_id.clone(),
                at: *at,
                body: body(b),
            }),
    );
    rows.extend(changes.rejected.iter().map(|(sig, r)| Row::Rejected {
        signature: sig.clone(),
        body: body(r),
    }));
    rows.extend(changes.escrows.iter().map(|(account, e)| Row::Escrow {
        account: account.clone(),
        listing_account: e.listing.clone(),
        body: body(e),
    }));
    rows.extend(changes.seen.iter().map(|(sig, at)| Row::Seen {
        signature: sig.clone(),
        at: *at,
    }));
    rows
}

/// The undo entries of `changes`: each changed key's value in `before`.
pub fn undo_of(changes: &Changes, before: &State) -> Vec<Undo> {
    let mut undo = Vec::new();
    let mut put = |kind: Kind, key: &str, v: Option<String>| {
        undo.push(Undo {
            kind,
            key: key.to_string(),
            before: v,
        })
    };
    for l in &changes.listings {
        put(
            Kind::Listing,
            &l.listing_id,
            before.listings.get(&l.listing_id).map(body),
        );
    }
    for o in &changes.offers {
        put(
            Kind::Offer,
            &o.offer_id,
            before.offers.get(&o.offer_id).map(body),
        );
    }
    for (sig, _, _) in &changes.settlements {
        put(Kind::Settlement, sig, before.settlements.get(sig).map(body));
    }
    for (sig, _) in &changes.rejected {
        put(Kind::Rejected, sig, before.rejected.get(sig).map(body));
    }
    for (account, _) in &changes.escrows {
        put(Kind::Escrow, account, before.escrows.get(account).map(body));
    }
    for (sig, _) in &changes.seen {
        put(Kind::Seen, sig, before.folded_at(sig).map(|p| body(&p)));
    }
    undo
}

/// Keys to delete, by table.
pub type Deletes = Vec<(Kind, String)>;

/// The rows and deletes that restore `undo` entries (newest batch first,
/// as read): what a rewind commits.
pub fn restore(undo: &[Undo]) -> Result<(Vec<Row>, Deletes), StoreError> {
    // a key changed by several batches goes back to its value before the
    // oldest of them (the last entry read)
    let mut last: std::collections::HashMap<(i16, &str), usize> = Default::default();
    for (i, u) in undo.iter().enumerate() {
        last.insert((u.kind.number(), u.key.as_str()), i);
    }
    let (mut rows, mut deletes) = (Vec::new(), Vec::new());
    for (i, u) in undo.iter().enumerate() {
        if last[&(u.kind.number(), u.key.as_str())] != i {
            continue;
        }
        let Some(b) = &u.before else {
            deletes.push((u.kind, u.key.clone()));
            continue;
        };
        let key = u.key.clone();
        rows.push(match u.kind {
            Kind::Listing => Row::Listing(listing_row(&decode::<ListingState>(&key, b)?)),
            Kind::Offer => {
                let o: OfferState = decode(&key, b)?;
                Row::Offer {
                    id: key,
                    listing_id: o.listing_id,
                    body: b.clone(),
                }
            }
            Kind::Settlement => {
                let s = decode_settlement(&key, b)?;
                Row::Settlement {
                    signature: key,
                    listing_id: s.listing_id,
                    at: None,
                    body: b.clone(),
                }
            }
            Kind::Rejected => Row::Rejected {
                signature: key,
                body: b.clone(),
            },
            Kind::Escrow => {
                let e: EscrowState = decode(&key, b)?;
                Row::Escrow {
                    account: key,
                    listing_account: e.listing,
                    body: b.clone(),
                }
            }
            Kind::Seen => Row::Seen {
                at: decode(&key, b)?,
                signature: key,
            },
        });
    }
    Ok((rows, deletes))
}

/// The state hash ([`State::hash`]) of the state in `db`, streamed from
/// its tables in key order: the same bytes the in-memory state encodes,
/// never more than one row in memory.
pub fn state_hash(db: &mut dyn StateDb) -> Result<String, StoreError> {
    let head = db.head()?;
    let mut h = Sha256::new();
    h.update(format!(
        "brainctl-indexer/state/v{}\n",
        crate::STATE_VERSION
    ));
    h.update(format!(
        "{{\"now\":{},\"last\":{},\"transactions\":{}",
        head.now,
        body(&head.last),
        head.transactions
    ));
    for (kind, field) in Kind::HASHED {
        let mut opened = false;
        let mut first = true;
        // an empty escrow map is left out (the state skips it)
        if kind != Kind::Escrow {
            h.update(format!(",\"{field}\":{{"));
            opened = true;
        }
        db.scan(kind, &mut |key, row| {
            if !opened {
                h.update(format!(",\"{field}\":{{"));
                opened = true;
            }
            if !first {
                h.update(b",");
            }
            first = false;
            serde_json::to_writer(crate::fold::HashWriter(&mut h), key).expect("a key serializes");
            h.update(b":");
            h.update(row.as_bytes());
            Ok(())
        })?;
        if opened {
            h.update(b"}");
        }
    }
    h.update(b"}");
    Ok(hex::encode(h.finalize()))
}

/// Keys as a list (for `IN`/`ANY` queries).
pub(crate) fn keys(set: &BTreeSet<String>) -> Vec<String> {
    set.iter().cloned().collect()
}

/// The scalars as an undo row stores them.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct HeadJson {
    now: i64,
    last: Option<Position>,
    transactions: u64,
}

impl From<Head> for HeadJson {
    fn from(h: Head) -> Self {
        HeadJson {
            now: h.now,
            last: h.last,
            transactions: h.transactions,
        }
    }
}

impl From<HeadJson> for Head {
    fn from(h: HeadJson) -> Self {
        Head {
            now: h.now,
            last: h.last,
            transactions: h.transactions,
        }
    }
}
