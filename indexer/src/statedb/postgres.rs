//! The state tables in PostgreSQL (the server mode): created by the log
//! store's migrations (`indexer-pg/0003_state.sql`), written by the one
//! writer a batch per transaction, read by API servers on the primary or
//! on hot standbys. Loads take a whole key set per query (`= ANY`), writes
//! one `UNNEST` upsert per table, so a batch costs a handful of round
//! trips whatever its size.
//!
//! Owns the SQL only.

use super::around::{self, Anchor, Around, AroundRow, Dialect};
use super::sieve::{Param, Sieve};
use super::{
    decoded, position, restore, settlements, table, Commit, HeadJson, Kind, Rewound, Row, StateDb,
    Undo,
};
use crate::fold::{
    EscrowState, Head, ListingState, OfferState, Rejected, Rows, Settlement, Totals,
};
use crate::record::Position;
use crate::store::pg_conn::Conn;
use crate::store::{PgStore, StoreError};
use std::collections::BTreeSet;

/// Rows a hash scan reads per query.
const SCAN_PAGE: i64 = 10_000;
/// Advisory lock the one writer of the state tables holds for as long as
/// its connection lives.
const WRITER_LOCK: i64 = 0x4252_4e4b;

/// [`around::TEMPLATE`] in PostgreSQL's notation.
const DIALECT: Dialect = Dialect {
    ids_cte: "SELECT ARRAY({ids}) AS a",
    in_ids: "= ANY((SELECT a FROM ids)::text[])",
    in_accounts: "= ANY(ARRAY(SELECT escrow_account FROM l))",
    params: ["$1::text", "$2::bool", "$3::text"],
    unnest: "SELECT json_array_elements_text($1::text::json) AS id",
    head: "json_build_array({cols})::text",
    collate: "COLLATE \"C\"",
};

/// The PostgreSQL state tables.
pub struct PgState {
    pg: PgStore,
}

impl PgState {
    /// Connects to `url`, bringing the schema up to date.
    pub fn connect(url: &str) -> Result<PgState, StoreError> {
        Ok(PgState {
            pg: PgStore::connect(url)?,
        })
    }

    /// Connects to read only (a hot standby, or the primary as an API
    /// server reads it): the schema is never touched.
    pub fn connect_reader(url: &str) -> Result<PgState, StoreError> {
        Ok(PgState {
            pg: PgStore::connect_read_only(url, crate::store::postgres::STATE_SCHEMA)?,
        })
    }

    /// Connects as the one writer: refused while another process holds
    /// the writer's lock (two writers would fold the same batches twice).
    /// (Its commits wait for the WAL flush: a hot standby is sent only
    /// flushed WAL, so `synchronous_commit off` would delay every answer
    /// there by up to the WAL writer's delay, measured at 400 ms p50.)
    pub fn connect_writer(url: &str) -> Result<PgState, StoreError> {
        let s = PgState::connect(url)?;
        let locked: bool = s.pg.run(|c| async move {
            Ok(
                c.query_one("SELECT pg_try_advisory_lock($1)", &[&WRITER_LOCK])
                    .await?
                    .get(0),
            )
        })?;
        if !locked {
            return Err(StoreError::Foreign(
                "another writer (`brainctl-indexer run`) holds this database's state tables; stop it first".into(),
            ));
        }
        Ok(s)
    }

    /// `(key, body)` rows `sql` selects with the key list as `$1`.
    fn pairs(
        &self,
        sql: &'static str,
        set: &BTreeSet<String>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        if set.is_empty() {
            return Ok(Vec::new());
        }
        let keys = super::keys(set);
        self.pg.run(move |c| async move {
            let rows = c.query(sql, &[&keys]).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }
}

async fn read_head(c: &Conn) -> Result<(Head, Option<u64>, Option<Position>), StoreError> {
    let row = c
        .query_opt(
            "SELECT now, last_slot, last_idx, transactions, applied_seq, floor_slot, floor_idx
             FROM state_head WHERE one = 1",
            &[],
        )
        .await?;
    Ok(row
        .map(|r| {
            (
                Head {
                    now: r.get(0),
                    last: position(r.get(1), r.get(2)),
                    transactions: r.get::<_, i64>(3) as u64,
                },
                r.get::<_, Option<i64>>(4).map(|s| s as u64),
                position(r.get(5), r.get(6)),
            )
        })
        .unwrap_or_default())
}

/// Moves the counts by `t` (`sign` 1: added, -1: taken away).
async fn count(c: &Conn, t: Totals, sign: i64) -> Result<(), StoreError> {
    c.execute(
        "UPDATE state_head SET n_listings = n_listings + $1, n_offers = n_offers + $2,
           n_settlements = n_settlements + $3, n_rejected = n_rejected + $4",
        &[
            &(sign * t.listings as i64),
            &(sign * t.offers as i64),
            &(sign * t.settlements as i64),
            &(sign * t.rejected as i64),
        ],
    )
    .await?;
    Ok(())
}

async fn write_head(
    c: &Conn,
    head: &Head,
    applied_seq: Option<u64>,
    floor: Option<Position>,
) -> Result<(), StoreError> {
    let last = head.last;
    c.execute(
        "INSERT INTO state_head (one, now, last_slot, last_idx, transactions, applied_seq, floor_slot, floor_idx)
         VALUES (1, $1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (one) DO UPDATE SET now = $1, last_slot = $2, last_idx = $3,
           transactions = $4, applied_seq = $5, floor_slot = $6, floor_idx = $7",
        &[
            &head.now,
            &last.map(|p| p.0 as i64),
            &last.map(|p| p.1 as i64),
            &(head.transactions as i64),
            &applied_seq.map(|s| s as i64),
            &floor.map(|p| p.0 as i64),
            &floor.map(|p| p.1 as i64),
        ],
    )
    .await?;
    Ok(())
}

/// Text columns.
type Texts = Vec<String>;
/// Integer columns.
type Ints = Vec<i64>;

/// Listing rows as columns.
#[derive(Default)]
struct ListingColumns {
    id: Texts,
    seller: Texts,
    escrow_account: Vec<Option<String>>,
    body: Texts,
    cancelled: Vec<bool>,
    contested: Vec<bool>,
    expires_at: Ints,
    visibility: Texts,
    price_usd: Vec<f64>,
}

/// Columns of each table's rows, as arrays for one `UNNEST` upsert.
#[derive(Default)]
struct Columns {
    listings: ListingColumns,
    offers: (Texts, Texts, Texts),
    /// Buys at a known position.
    buys_at: (Texts, Texts, Ints, Ints, Texts),
    /// Buys whose stored position stands.
    buys: (Texts, Texts, Texts),
    rejected: (Texts, Texts),
    escrows: (Texts, Texts, Texts),
    seen: (Texts, Ints, Ints),
}

impl Columns {
    fn of(rows: &[Row]) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            match row.clone() {
                Row::Listing(l) => {
                    let c = &mut c.listings;
                    c.id.push(l.id);
                    c.seller.push(l.seller);
                    c.escrow_account.push(l.escrow_account);
                    c.body.push(l.body);
                    c.cancelled.push(l.cancelled);
                    c.contested.push(l.contested);
                    c.expires_at.push(l.expires_at);
                    c.visibility.push(l.visibility);
                    c.price_usd.push(l.price_usd);
                }
                Row::Offer {
                    id,
                    listing_id,
                    body,
                } => {
                    c.offers.0.push(id);
                    c.offers.1.push(listing_id);
                    c.offers.2.push(body);
                }
                Row::Settlement {
                    signature,
                    listing_id,
                    at: Some(at),
                    body,
                } => {
                    c.buys_at.0.push(signature);
                    c.buys_at.1.push(listing_id);
                    c.buys_at.2.push(at.0 as i64);
                    c.buys_at.3.push(at.1 as i64);
                    c.buys_at.4.push(body);
                }
                Row::Settlement {
                    signature,
                    listing_id,
                    at: None,
                    body,
                } => {
                    c.buys.0.push(signature);
                    c.buys.1.push(listing_id);
                    c.buys.2.push(body);
                }
                Row::Rejected { signature, body } => {
                    c.rejected.0.push(signature);
                    c.rejected.1.push(body);
                }
                Row::Escrow {
                    account,
                    listing_account,
                    body,
                } => {
                    c.escrows.0.push(account);
                    c.escrows.1.push(listing_account);
                    c.escrows.2.push(body);
                }
                Row::Seen { signature, at } => {
                    c.seen.0.push(signature);
                    c.seen.1.push(at.0 as i64);
                    c.seen.2.push(at.1 as i64);
                }
            }
        }
        c
    }

    async fn write(self, c: &Conn) -> Result<(), StoreError> {
        let Columns {
            listings,
            offers,
            buys_at,
            buys,
            rejected,
            escrows,
            seen,
        } = self;
        if !listings.id.is_empty() {
            let l = &listings;
            c.execute(
                "INSERT INTO state_listings (id, seller, escrow_account, body, cancelled,
                   contested, expires_at, visibility, price_usd)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[],
                   $5::bool[], $6::bool[], $7::int8[], $8::text[], $9::float8[])
                 ON CONFLICT (id) DO UPDATE SET seller = EXCLUDED.seller,
                   escrow_account = EXCLUDED.escrow_account, body = EXCLUDED.body,
                   cancelled = EXCLUDED.cancelled, contested = EXCLUDED.contested,
                   expires_at = EXCLUDED.expires_at, visibility = EXCLUDED.visibility,
                   price_usd = EXCLUDED.price_usd",
                &[
                    &l.id,
                    &l.seller,
                    &l.escrow_account,
                    &l.body,
                    &l.cancelled,
                    &l.contested,
                    &l.expires_at,
                    &l.visibility,
                    &l.price_usd,
                ],
            )
            .await?;
        }
        if !offers.0.is_empty() {
            c.execute(
                "INSERT INTO state_offers (id, listing_id, body)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[])
                 ON CONFLICT (id) DO UPDATE SET listing_id = EXCLUDED.listing_id, body = EXCLUDED.body",
                &[&offers.0, &offers.1, &offers.2],
            )
            .await?;
        }
        if !buys_at.0.is_empty() {
            c.execute(
                "INSERT INTO state_settlements (signature, listing_id, slot, idx, body)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::int8[], $5::text[])
                 ON CONFLICT (signature) DO UPDATE SET listing_id = EXCLUDED.listing_id,
                   slot = EXCLUDED.slot, idx = EXCLUDED.idx, body = EXCLUDED.body",
                &[&buys_at.0, &buys_at.1, &buys_at.2, &buys_at.3, &buys_at.4],
            )
            .await?;
        }
        if !buys.0.is_empty() {
            c.execute(
                "INSERT INTO state_settlements (signature, listing_id, slot, idx, body)
                 SELECT s, l, 0, 0, b FROM UNNEST($1::text[], $2::text[], $3::text[]) AS t(s, l, b)
                 ON CONFLICT (signature) DO UPDATE SET listing_id = EXCLUDED.listing_id,
                   body = EXCLUDED.body",
                &[&buys.0, &buys.1, &buys.2],
            )
            .await?;
        }
        if !rejected.0.is_empty() {
            c.execute(
                "INSERT INTO state_rejected (signature, body)
                 SELECT * FROM UNNEST($1::text[], $2::text[])
                 ON CONFLICT (signature) DO UPDATE SET body = EXCLUDED.body",
                &[&rejected.0, &rejected.1],
            )
            .await?;
        }
        if !escrows.0.is_empty() {
            c.execute(
                "INSERT INTO state_escrows (account, listing_account, body)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[])
                 ON CONFLICT (account) DO UPDATE SET listing_account = EXCLUDED.listing_account,
                   body = EXCLUDED.body",
                &[&escrows.0, &escrows.1, &escrows.2],
            )
            .await?;
        }
        if !seen.0.is_empty() {
            // no unique index to arbitrate (migration 0009: a hash
            // index): the rows it has are moved, the rest inserted
            c.execute(
                "WITH input (signature, slot, idx) AS (
                   SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[])),
                 moved AS (
                   UPDATE state_seen s SET slot = i.slot, idx = i.idx FROM input i
                   WHERE s.signature = i.signature RETURNING s.signature)
                 INSERT INTO state_seen (signature, slot, idx)
                 SELECT * FROM input i
                 WHERE NOT EXISTS (SELECT 1 FROM moved m WHERE m.signature = i.signature)",
                &[&seen.0, &seen.1, &seen.2],
            )
            .await?;
        }
        Ok(())
    }
}

/// Deletes `keys` of each kind.
async fn delete(c: &Conn, deletes: Vec<(Kind, String)>) -> Result<(), StoreError> {
    for kind in Kind::ALL {
        let keys: Vec<&String> = deletes
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, key)| key)
            .collect();
        if keys.is_empty() {
            continue;
        }
        let (t, k) = table(kind);
        c.execute(&format!("DELETE FROM {t} WHERE {k} = ANY($1)"), &[&keys])
            .await?;
    }
    Ok(())
}

impl Rows for PgState {
    type Error = StoreError;

    fn head(&mut self) -> Result<Head, StoreError> {
        self.pg.run(|c| async move { Ok(read_head(&c).await?.0) })
    }

    fn listings(&mut self, ids: &BTreeSet<String>) -> Result<Vec<ListingState>, StoreError> {
        let rows = self.pairs(
            "SELECT id, body FROM state_listings WHERE id = ANY($1)",
            ids,
        )?;
        Ok(decoded(rows)?.into_iter().map(|(_, l)| l).collect())
    }

    fn offers(&mut self, ids: &BTreeSet<String>) -> Result<Vec<OfferState>, StoreError> {
        let rows = self.pairs("SELECT id, body FROM state_offers WHERE id = ANY($1)", ids)?;
        Ok(decoded(rows)?.into_iter().map(|(_, o)| o).collect())
    }

    fn offers_of(&mut self, listing_ids: &BTreeSet<String>) -> Result<Vec<OfferState>, StoreError> {
        let rows = self.pairs(
            "SELECT id, body FROM state_offers WHERE listing_id = ANY($1)",
            listing_ids,
        )?;
        Ok(decoded(rows)?.into_iter().map(|(_, o)| o).collect())
    }

    fn settlements(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, StoreError> {
        settlements(self.pairs(
            "SELECT signature, body FROM state_settlements WHERE signature = ANY($1)",
            signatures,
        )?)
    }

    fn settlements_of(
        &mut self,
        listing_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Settlement)>, StoreError> {
        settlements(self.pairs(
            "SELECT signature, body FROM state_settlements WHERE listing_id = ANY($1)
             ORDER BY slot, idx, signature",
            listing_ids,
        )?)
    }

    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, EscrowState)>, StoreError> {
        decoded(self.pairs(
            "SELECT account, body FROM state_escrows WHERE account = ANY($1)",
            accounts,
        )?)
    }

    fn seen(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Position)>, StoreError> {
        if signatures.is_empty() {
            return Ok(Vec::new());
        }
        let keys = super::keys(signatures);
        self.pg.run(move |c| async move {
            let rows = c
                .query(
                    "SELECT signature, slot, idx FROM state_seen WHERE signature = ANY($1)",
                    &[&keys],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        (r.get::<_, i64>(1) as u64, r.get::<_, i64>(2) as u32),
                    )
                })
                .collect())
        })
    }
}

impl StateDb for PgState {
    fn applied_seq(&mut self) -> Result<Option<u64>, StoreError> {
        self.pg.run(|c| async move { Ok(read_head(&c).await?.1) })
    }

    fn commit(&mut self, commit: &Commit) -> Result<(), StoreError> {
        let columns = Columns::of(&commit.rows);
        let deletes = commit.deletes.clone();
        let changed = !commit.rows.is_empty() || !commit.deletes.is_empty();
        let head = commit.head;
        let undo = commit.undo.clone();
        let applied_seq = commit.applied_seq;
        let added = commit.added;
        self.pg.transaction(move |c| async move {
            let (_, applied, mut floor) = read_head(&c).await?;
            columns.write(&c).await?;
            delete(&c, deletes).await?;
            match (undo, head.last) {
                (Some((before, undo)), Some(last)) if changed => {
                    let batch: i64 = c
                        .query_one(
                            "INSERT INTO state_batches (last_slot, last_idx, head_before)
                             VALUES ($1, $2, $3) RETURNING batch",
                            &[
                                &(last.0 as i64),
                                &(last.1 as i64),
                                &super::body(&HeadJson::from(before)),
                            ],
                        )
                        .await?
                        .get(0);
                    let kinds: Vec<i16> = undo.iter().map(|u| u.kind.number()).collect();
                    let keys: Vec<String> = undo.iter().map(|u| u.key.clone()).collect();
                    let bodies: Vec<Option<String>> = undo.into_iter().map(|u| u.before).collect();
                    c.execute(
                        "INSERT INTO state_undo (batch, kind, key, body)
                         SELECT $1, * FROM UNNEST($2::int2[], $3::text[], $4::text[])",
                        &[&batch, &kinds, &keys, &bodies],
                    )
                    .await?;
                }
                (None, last) if changed => floor = last.max(floor),
                _ => {}
            }
            write_head(&c, &head, applied_seq.or(applied), floor).await?;
            count(&c, added, 1).await
        })
    }

    fn rewind(&mut self, from: Position) -> Result<Rewound, StoreError> {
        let (slot, idx) = (from.0 as i64, from.1 as i64);
        let read = self.pg.run(move |c| async move {
            let (head, applied, floor) = read_head(&c).await?;
            if floor.is_some_and(|f| from <= f) {
                return Ok(None);
            }
            let batches = c
                .query(
                    "SELECT batch, head_before FROM state_batches
                     WHERE last_slot > $1 OR (last_slot = $1 AND last_idx >= $2)
                     ORDER BY batch DESC",
                    &[&slot, &idx],
                )
                .await?;
            let mut undo = Vec::new();
            for b in &batches {
                let rows = c
                    .query(
                        "SELECT kind, key, body FROM state_undo WHERE batch = $1",
                        &[&b.get::<_, i64>(0)],
                    )
                    .await?;
                for r in rows {
                    undo.push((r.get::<_, i16>(0), r.get::<_, String>(1), r.get(2)));
                }
            }
            let oldest = batches
                .last()
                .map(|b| (b.get::<_, i64>(0), b.get::<_, String>(1)));
            Ok(Some((head, applied, floor, oldest, undo)))
        })?;
        let Some((head, applied, floor, oldest, raw)) = read else {
            return Ok(Rewound::Unreachable);
        };
        let Some((oldest, head_json)) = oldest else {
            return Ok(Rewound::To(head));
        };
        let head: Head = super::decode::<HeadJson>("state head", &head_json)?.into();
        let undo = raw
            .into_iter()
            .map(|(kind, key, before): (i16, String, Option<String>)| {
                let kind = Kind::from_number(kind as i64).ok_or_else(|| {
                    StoreError::Foreign(format!("undo row of unknown kind {kind}"))
                })?;
                Ok(Undo { kind, key, before })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let (rows, deletes) = restore(&undo)?;
        let removed = super::removed_by(&deletes);
        let columns = Columns::of(&rows);
        self.pg.transaction(move |c| async move {
            columns.write(&c).await?;
            delete(&c, deletes).await?;
            c.execute("DELETE FROM state_undo WHERE batch >= $1", &[&oldest])
                .await?;
            c.execute("DELETE FROM state_batches WHERE batch >= $1", &[&oldest])
                .await?;
            write_head(&c, &head, applied, floor).await?;
            count(&c, removed, -1).await
        })?;
        Ok(Rewound::To(head))
    }

    fn clear(&mut self) -> Result<(), StoreError> {
        self.pg.transaction(|c| async move {
            c.batch_execute(
                "DELETE FROM state_listings; DELETE FROM state_offers; DELETE FROM state_settlements;
                 DELETE FROM state_rejected; DELETE FROM state_escrows; DELETE FROM state_seen;
                 DELETE FROM state_undo; DELETE FROM state_batches; DELETE FROM state_head;",
            )
            .await?;
            Ok(())
        })
    }

    fn version(&mut self) -> Result<Option<i64>, StoreError> {
        self.pg.run(|c| async move {
            let row = c
                .query_opt(
                    "SELECT xmin::text::bigint FROM state_head WHERE one = 1",
                    &[],
                )
                .await?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn begin_read(&mut self) -> Result<(), StoreError> {
        self.pg.run(|c| async move {
            c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
            Ok(())
        })
    }

    fn end_read(&mut self) -> Result<(), StoreError> {
        self.pg.run(|c| async move {
            c.batch_execute("COMMIT").await?;
            Ok(())
        })
    }

    fn around(&mut self, anchor: &Anchor) -> Result<Around, StoreError> {
        let (p1, p2, p3) = anchor.params();
        let sql = DIALECT.sql(anchor);
        let rows: Vec<AroundRow> = self.pg.run(move |c| async move {
            let rows = c.query(&sql, &[&p1, &p2, &p3]).await?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i32>(0) as i64, r.get(1), r.get(2)))
                .collect())
        })?;
        around::decode_rows(rows)
    }

    fn listings_after(
        &mut self,
        sieve: &Sieve,
        limit: usize,
    ) -> Result<Vec<ListingState>, StoreError> {
        let (sql, params) = sieve.query(limit, |n| format!("${n}"));
        let rows: Vec<(String, String)> = self.pg.run(move |c| async move {
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                .iter()
                .map(|p| match p {
                    Param::Text(s) => s as &(dyn tokio_postgres::types::ToSql + Sync),
                    Param::Int(i) => i,
                    Param::Real(f) => f,
                })
                .collect();
            let rows = c.query(&sql, &params).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })?;
        Ok(decoded(rows)?.into_iter().map(|(_, l)| l).collect())
    }

    fn rejected(
        &mut self,
        signatures: &BTreeSet<String>,
    ) -> Result<Vec<(String, Vec<Rejected>)>, StoreError> {
        decoded(self.pairs(
            "SELECT signature, body FROM state_rejected WHERE signature = ANY($1)",
            signatures,
        )?)
    }

    fn scan(
        &mut self,
        kind: Kind,
        f: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let (t, k) = table(kind);
        let sql = format!("SELECT {k}, body FROM {t} WHERE {k} > $1 ORDER BY {k} LIMIT $2");
        let mut after = String::new();
        loop {
            let sql = sql.clone();
            let from = after.clone();
            let page: Vec<(String, String)> = self.pg.run(move |c| async move {
                let rows = c.query(&sql, &[&from, &SCAN_PAGE]).await?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            })?;
            for (key, body) in &page {
                f(key, body)?;
            }
            match page.last() {
                Some((key, _)) if page.len() as i64 == SCAN_PAGE => after = key.clone(),
                _ => return Ok(()),
            }
        }
    }
}
