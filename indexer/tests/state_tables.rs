//! The state kept as tables ([`indexer::statedb`]) is the fold of the log,
//! whatever the page size, the arrival order of records, forks moving or
//! dropping them, or a process killed between any two commits: its hash,
//! streamed from the tables, equals the whole in-memory fold's (and the
//! pinned hash of the recorded fixture log).

use indexer::book::ManifestBook;
use indexer::fold::{FoldConfig, Head, Rows, State};
use indexer::record::{sort_chain_order, Position, TxRecord};
use indexer::statedb::around::{Anchor, Around};
use indexer::statedb::durable::{self, CaughtUp};
use indexer::statedb::sqlite::SqliteState;
use indexer::statedb::{state_hash, Commit, Kind, Rewound, StateDb};
use indexer::store::{LogStore, SqliteStore, StoreError};
use indexer::synth::{self, wallet, LogBuilder};
use node::escrow::EscrowEvent;
use node::market::MemoOp;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn replay(records: &[TxRecord]) -> State {
    let mut sorted = records.to_vec();
    sort_chain_order(&mut sorted);
    let mut book = ManifestBook::new();
    book.add_records(&sorted);
    State::fold(&sorted, &book, &FoldConfig::default())
}

/// Trades, hostile trades and escrow buys that are revealed, claimed,
/// refunded and disputed, among few sellers (so listings, offers and
/// buys are touched again and again across pages).
fn mixed_log(n: u64) -> Vec<TxRecord> {
    let mut b = LogBuilder::new();
    for i in 0..n {
        b.trade(i, 3);
        b.hostile_trade(1_000 + i, 3);
        let seller = wallet(1, i % 3);
        // two buys, then a release whose envelope the log does not carry
        // (the reference's bare one): it settles the oldest paid buy, read
        // from the listing's buys (in pages of one, from the page before)
        let l = b.list(&seller, 3_000 + i, "auction");
        for k in 0..2 {
            b.buy(
                &wallet(2, 9_000 + 2 * i + k),
                &l,
                synth::LIST_PRICE_LAMPORTS,
            );
        }
        b.memo(
            &seller,
            MemoOp::Release {
                listing_id: l.listing_id.clone(),
                envelope_arweave_id: format!("{:A<43}", i),
                minted_token_address: wallet(0xAB, i).address(),
            },
        );
        let l = b.list_escrow(&seller, 2_000 + i, node::escrow::PROGRAM_ID);
        for (k, end) in (0..3u64).zip(["claim", "refund", "fraud"]) {
            let buyer = wallet(2, 5_000 + 3 * i + k);
            b.escrow_buy(&buyer, &l);
            let account =
                node::escrow::listing_address(&seller.address().parse().unwrap(), &l.listing_id);
            let escrow = node::escrow::escrow_address(&account, &buyer.address().parse().unwrap());
            let event = match end {
                "claim" => {
                    b.escrow_reveal(&seller, &l, &buyer);
                    EscrowEvent::Claimed {
                        escrow,
                        to_seller: 9,
                        fee: 1,
                    }
                }
                "refund" => EscrowEvent::Refunded {
                    escrow,
                    amount: 10,
                    slashed: 3,
                },
                _ => EscrowEvent::FraudProven {
                    escrow,
                    index: 4,
                    amount: 10,
                    slashed: 5,
                },
            };
            b.escrow_event(&seller, event);
        }
    }
    b.finish()
}

/// Listings of every view column's kind: private and public, cancelled
/// by their seller, listed again by another seller (contested).
fn view_market() -> Vec<TxRecord> {
    let mut b = LogBuilder::new();
    for i in 0..4u64 {
        b.trade(i, 2);
        let seller = wallet(1, i % 2);
        let visibility = if i % 2 == 0 { "private" } else { "auction" };
        let l = b.list(&seller, 100 + i, visibility);
        if i % 2 == 1 {
            b.memo(
                &seller,
                node::market::MemoOp::Cancel {
                    listing_id: l.listing_id,
                },
            );
        } else {
            b.list(&wallet(1, 9), 100 + i, "auction");
        }
    }
    b.finish()
}

/// A listing's view columns: `(id, cancelled, contested, expires_at,
/// visibility, price_usd)`.
type ViewColumns = (String, bool, bool, i64, String, Option<f64>);

/// The view columns the writer computes for each `(id, body)`.
fn view_columns_of(bodies: &[(String, String)]) -> Vec<ViewColumns> {
    let cols: Vec<ViewColumns> = bodies
        .iter()
        .map(|(id, body)| {
            let l = indexer::statedb::listing_row(&indexer::statedb::decode(id, body).unwrap());
            (
                l.id,
                l.cancelled,
                l.contested,
                l.expires_at,
                l.visibility,
                Some(l.price_usd),
            )
        })
        .collect();
    // the market holds each kind, so a column filled wrongly shows
    assert!(cols.iter().any(|c| c.1) && cols.iter().any(|c| c.2));
    assert!(cols.iter().any(|c| c.4 == "private") && cols.iter().any(|c| !c.1 && !c.2));
    cols
}

fn log_with(records: &[TxRecord], final_slot: u64) -> SqliteStore {
    let mut log = SqliteStore::in_memory().unwrap();
    log.put_records(records, final_slot).unwrap();
    log
}

fn catch_up(log: &dyn LogStore, db: &mut dyn StateDb, page: usize) -> CaughtUp {
    durable::catch_up(log, db, &FoldConfig::default(), page, &mut |_, _| {}).unwrap()
}

/// A catch-up that keeps undo rows for the last `tail` records only.
fn catch_up_keeping(
    log: &dyn LogStore,
    db: &mut dyn StateDb,
    page: usize,
    tail: usize,
) -> CaughtUp {
    durable::catch_up_with(log, db, &FoldConfig::default(), page, tail, &mut |_, _| {}).unwrap()
}

/// A catch-up by a writer killed at its `die_at`th commit: whether it died.
fn killed_at<D: StateDb>(log: &dyn LogStore, db: &mut D, page: usize, die_at: usize) -> bool {
    let mut dying = Dying {
        db,
        commits: 0,
        die_at,
    };
    durable::catch_up(
        log,
        &mut dying,
        &FoldConfig::default(),
        page,
        &mut |_, _| {},
    )
    .is_err()
}

#[test]
fn the_recorded_fixture_log_hashes_to_its_pinned_value_from_the_tables() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-refusal.jsonl");
    let records = indexer::logfile::read(std::fs::File::open(path).unwrap()).unwrap();
    let want = replay(&records).hash();
    assert_eq!(
        want,
        "dca430765a055328bd325bddcf9a0ffe08298b06b22194de56daec70cfbd5a10"
    );
    for page in [1, 3, 10_000] {
        let log = log_with(&records, u64::MAX);
        let mut db = SqliteState::in_memory().unwrap();
        let done = catch_up(&log, &mut db, page);
        assert_eq!(done.folded, records.len());
        assert_eq!(state_hash(&mut db).unwrap(), want, "page {page}");
    }
}

#[test]
fn a_mixed_log_folds_the_same_in_pages_of_any_size() {
    let records = mixed_log(12);
    let state = replay(&records);
    assert!(!state.escrows.is_empty() && !state.rejected.is_empty());
    // the bare releases settled a buy each
    let released = state
        .settlements
        .values()
        .filter(|s| matches!(s.status, indexer::fold::SettlementStatus::Released { .. }))
        .count();
    assert!(released >= 12 * 2, "{released}");
    let want = state.hash();
    for page in [1, 2, 17, 5_000] {
        let log = log_with(&records, u64::MAX);
        let mut db = SqliteState::in_memory().unwrap();
        catch_up(&log, &mut db, page);
        assert_eq!(state_hash(&mut db).unwrap(), want, "page {page}");
        assert_eq!(
            db.head().unwrap(),
            Head {
                now: state.now,
                last: state.last,
                transactions: state.transactions,
            }
        );
    }
}

#[test]
fn moved_late_and_vanished_records_rewind_only_what_they_touch() {
    let mut log = SqliteStore::in_memory().unwrap();
    let mut db = SqliteState::in_memory().unwrap();
    rewinds(&mut log, &mut db);
}

/// Late, moved and vanished records, with `log` and `db` empty.
fn rewinds(log: &mut dyn LogStore, db: &mut dyn StateDb) {
    let records = mixed_log(10);
    let n = records.len();
    // everything provisional (final slot 0), so a fork may move or drop it
    let late = records[n - 30].clone();
    let early: Vec<TxRecord> = records
        .iter()
        .filter(|r| r.signature() != late.signature())
        .cloned()
        .collect();
    for (i, chunk) in early.chunks(40).enumerate() {
        log.put_records(chunk, 0).unwrap();
        let done = catch_up(log, db, 7);
        assert!(!done.rewound, "chunk {i}");
        assert_eq!(done.rebuilt, i == 0, "only the first fold starts empty");
    }
    // a late record 30 back
    log.put_records(std::slice::from_ref(&late), 0).unwrap();
    let done = catch_up(log, db, 7);
    assert!(done.rewound && !done.rebuilt, "{done:?}");
    assert!(done.folded <= 30 + 2 * 7, "refolded {} of {n}", done.folded);
    assert_eq!(state_hash(db).unwrap(), replay(&records).hash());
    // a fork moves a record 50 back after the head
    let mut moved = records[n - 50].clone();
    moved.tx.slot = records[n - 1].tx.slot;
    moved.index = 1;
    log.put_records(std::slice::from_ref(&moved), 0).unwrap();
    let done = catch_up(log, db, 7);
    assert!(done.rewound && !done.rebuilt);
    let mut now = records.clone();
    now[n - 50] = moved;
    assert_eq!(state_hash(db).unwrap(), replay(&now).hash());
    // a provisional record 20 back vanishes
    let gone = now[n - 20].signature().to_string();
    assert_eq!(log.remove(std::slice::from_ref(&gone)).unwrap(), 1);
    let done = catch_up(log, db, 7);
    assert!(done.rewound && !done.rebuilt);
    now.retain(|r| r.signature() != gone);
    assert_eq!(state_hash(db).unwrap(), replay(&now).hash());
    assert!(db.seen(&BTreeSet::from([gone])).unwrap().is_empty());
    // a folded record removed and stored again after the head before the
    // next catch-up: stored anew (never moved, as far as its row knows),
    // yet folded before, so its old fold is taken back
    let i = now.len() - 10;
    let mut again = now[i].clone();
    assert_eq!(
        log.remove(std::slice::from_ref(&again.tx.signature))
            .unwrap(),
        1
    );
    again.tx.slot = now[now.len() - 1].tx.slot + 1;
    log.put_records(std::slice::from_ref(&again), 0).unwrap();
    let done = catch_up(log, db, 7);
    assert!(done.rewound && !done.rebuilt, "{done:?}");
    now.remove(i);
    now.push(again);
    assert_eq!(state_hash(db).unwrap(), replay(&now).hash());
    // the counts the tables keep went back with every rewind
    assert_eq!(
        db.around(&Anchor::nothing()).unwrap().totals,
        replay(&now).totals()
    );
}

#[test]
fn a_rewind_past_a_rebuilds_last_undo_rows_rebuilds() {
    let records = synth::trades(40, 4);
    let log = log_with(&records, u64::MAX);
    let mut db = SqliteState::in_memory().unwrap();
    // a cold fold writes undo rows only for its tail
    catch_up_keeping(&log, &mut db, 10, 20);
    let first: Position = records[0].position();
    assert_eq!(db.rewind(first).unwrap(), Rewound::Unreachable);
    let tail = records[records.len() - 5].position();
    assert!(matches!(db.rewind(tail).unwrap(), Rewound::To(_)));
    let done = catch_up(&log, &mut db, 10);
    assert_eq!(done.folded, 10, "the undone page is folded again");
    assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
}

/// A state database that dies (an error, as a killed process's last
/// commit never lands) at its `die_at`th commit.
struct Dying<'a, D: StateDb> {
    db: &'a mut D,
    commits: usize,
    die_at: usize,
}

impl<D: StateDb> Rows for Dying<'_, D> {
    type Error = StoreError;
    fn head(&mut self) -> Result<Head, StoreError> {
        self.db.head()
    }
    fn listings(
        &mut self,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<indexer::fold::ListingState>, StoreError> {
        self.db.listings(ids)
    }
    fn offers(
        &mut self,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<indexer::fold::OfferState>, StoreError> {
        self.db.offers(ids)
    }
    fn offers_of(
        &mut self,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<indexer::fold::OfferState>, StoreError> {
        self.db.offers_of(ids)
    }
    fn settlements(
        &mut self,
        sigs: &BTreeSet<String>,
    ) -> Result<Vec<(String, indexer::fold::Settlement)>, StoreError> {
        self.db.settlements(sigs)
    }
    fn settlements_of(
        &mut self,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, indexer::fold::Settlement)>, StoreError> {
        self.db.settlements_of(ids)
    }
    fn escrows(
        &mut self,
        accounts: &BTreeSet<String>,
    ) -> Result<Vec<(String, indexer::fold::EscrowState)>, StoreError> {
        self.db.escrows(accounts)
    }
    fn seen(&mut self, sigs: &BTreeSet<String>) -> Result<Vec<(String, Position)>, StoreError> {
        self.db.seen(sigs)
    }
}

impl<D: StateDb> StateDb for Dying<'_, D> {
    fn applied_seq(&mut self) -> Result<Option<u64>, StoreError> {
        self.db.applied_seq()
    }
    fn commit(&mut self, c: &Commit) -> Result<(), StoreError> {
        self.commits += 1;
        if self.commits == self.die_at {
            return Err(StoreError::Closed);
        }
        self.db.commit(c)
    }
    fn rewind(&mut self, from: Position) -> Result<Rewound, StoreError> {
        self.db.rewind(from)
    }
    fn begin_read(&mut self) -> Result<(), StoreError> {
        self.db.begin_read()
    }
    fn end_read(&mut self) -> Result<(), StoreError> {
        self.db.end_read()
    }
    fn around(&mut self, anchor: &Anchor) -> Result<Around, StoreError> {
        self.db.around(anchor)
    }
    fn listings_after(
        &mut self,
        sieve: &indexer::statedb::sieve::Sieve,
        limit: usize,
    ) -> Result<Vec<indexer::fold::ListingState>, StoreError> {
        self.db.listings_after(sieve, limit)
    }
    fn rejected(
        &mut self,
        sigs: &BTreeSet<String>,
    ) -> Result<Vec<(String, Vec<indexer::fold::Rejected>)>, StoreError> {
        self.db.rejected(sigs)
    }
    fn clear(&mut self) -> Result<(), StoreError> {
        self.db.clear()
    }
    fn scan(
        &mut self,
        kind: Kind,
        f: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.db.scan(kind, f)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Records arriving in any order, in batches of any size, folded in
    /// pages of any size, with the process killed at any commit and
    /// restarted: the tables hash to the replay of the sorted log.
    #[test]
    fn arrival_order_pages_and_kills_never_change_the_state(
        seed in any::<u64>(),
        sizes in proptest::collection::vec(1usize..60, 1..6),
        page in 1usize..40,
        die_at in 1usize..30,
    ) {
        let records = mixed_log(3);
        let mut shuffled = records.clone();
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let reach = if x % 10 == 0 { i } else { 6.min(i) };
            let j = i - (x as usize % (reach + 1));
            shuffled.swap(i, j);
        }
        let mut log = SqliteStore::in_memory().unwrap();
        let mut db = SqliteState::in_memory().unwrap();
        let mut died = false;
        let mut rest = &shuffled[..];
        let mut cycle = sizes.iter().cycle();
        while !rest.is_empty() {
            let k = (*cycle.next().unwrap()).min(rest.len());
            log.put_records(&rest[..k], 0).unwrap();
            rest = &rest[k..];
            if !died {
                died = killed_at(&log, &mut db, page, die_at);
                if died {
                    continue;
                }
            }
            catch_up(&log, &mut db, page);
        }
        catch_up(&log, &mut db, page);
        prop_assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
        prop_assert_eq!(db.around(&Anchor::nothing()).unwrap().totals, replay(&records).totals());
    }
}

/// A fresh database on `pg` for each scenario.
fn database(pg: &e2e::postgres::TestPostgres, name: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&pg.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
    });
    let (base, _) = pg.url.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

/// The same on PostgreSQL (a real server the harness starts): the log and
/// the state tables in one database, as `run --pg` keeps them.
#[test]
fn on_postgres_the_tables_fold_rewind_and_hash_the_same() {
    use indexer::statedb::postgres::PgState;
    use indexer::store::PgStore;
    let pg = e2e::postgres::start();
    // the fixture, pinned, in pages of 3
    let url = database(&pg, "fixture");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-refusal.jsonl");
    let records = indexer::logfile::read(std::fs::File::open(path).unwrap()).unwrap();
    let mut log = PgStore::connect(&url).unwrap();
    log.put_records(&records, u64::MAX).unwrap();
    let mut db = PgState::connect(&url).unwrap();
    assert_eq!(catch_up(&log, &mut db, 3).folded, records.len());
    assert_eq!(
        state_hash(&mut db).unwrap(),
        "dca430765a055328bd325bddcf9a0ffe08298b06b22194de56daec70cfbd5a10"
    );
    // the writer (here a superuser) installed pg_prewarm, and after a
    // rebuild reads the log's lookup indexes back with it: each block of
    // the log's signature index and of the carried bodies' ids
    let index_blocks: i64 = with_pg(&url, async |c| {
        c.query_one(
            "SELECT (sum(pg_relation_size(i)) / current_setting('block_size')::int8)::int8
             FROM unnest(ARRAY['txs_by_signature', 'carried_manifests_pkey']::regclass[]) i",
            &[],
        )
        .await
        .unwrap()
        .get(0)
    });
    assert!(index_blocks > 0);
    assert_eq!(log.warm_lookups().unwrap(), index_blocks as u64);
    // late, moved and vanished records
    let url = database(&pg, "rewinds");
    rewinds(
        &mut PgStore::connect(&url).unwrap(),
        &mut PgState::connect(&url).unwrap(),
    );
    // the log and the seen set, each kept one row a signature by its
    // writer (no unique index: migrations 0009 and 0010), hold every
    // record once, the seen set where the log has it now
    let (rows, signatures, elsewhere, logged, distinct): (i64, i64, i64, i64, i64) =
        with_pg(&url, async |c| {
            let r = c
                .query_one(
                    "SELECT count(*), count(DISTINCT signature),
                       (SELECT count(*) FROM txs t LEFT JOIN state_seen s USING (signature)
                        WHERE s.slot IS DISTINCT FROM t.slot OR s.idx IS DISTINCT FROM t.idx),
                       (SELECT count(*) FROM txs), (SELECT count(DISTINCT signature) FROM txs)
                     FROM state_seen",
                    &[],
                )
                .await
                .unwrap();
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
        });
    assert_eq!((rows, signatures, elsewhere), (logged, logged, 0));
    assert_eq!(distinct, logged);
    // a writer killed mid-catch-up resumes from the tables
    let url = database(&pg, "killed");
    let records = mixed_log(6);
    let mut log = PgStore::connect(&url).unwrap();
    log.put_records(&records, u64::MAX).unwrap();
    let mut db = PgState::connect(&url).unwrap();
    for die_at in [2, 5] {
        assert!(killed_at(&log, &mut db, 11, die_at));
    }
    let done = catch_up(&log, &mut db, 11);
    assert!(!done.rebuilt || done.folded <= records.len());
    assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
    // a database from before the listings' view columns (schema v4)
    // gets them filled from the bodies by the migration
    let url = database(&pg, "views");
    let mut log = PgStore::connect(&url).unwrap();
    log.put_records(&view_market(), u64::MAX).unwrap();
    catch_up(&log, &mut PgState::connect(&url).unwrap(), 5);
    let (stored, bodies) = pg_view_columns(&url);
    let want = view_columns_of(&bodies);
    assert_eq!(stored, want);
    pg_exec(
        &url,
        "DROP INDEX state_listings_open;
         ALTER TABLE state_listings DROP COLUMN cancelled, DROP COLUMN contested,
           DROP COLUMN expires_at, DROP COLUMN visibility, DROP COLUMN price_usd;
         CREATE TABLE state_manifests (id TEXT PRIMARY KEY, body TEXT NOT NULL);
         ALTER TABLE txs DROP COLUMN moved;
         DROP INDEX state_seen_by_signature;
         ALTER TABLE state_seen ADD PRIMARY KEY (signature);
         DROP INDEX txs_by_signature;
         ALTER TABLE txs ADD PRIMARY KEY (signature);
         UPDATE brainctl_indexer_schema SET version = 4;",
    );
    PgStore::connect(&url).unwrap();
    assert_eq!(pg_view_columns(&url).0, want);
    // and its copy of the carried bodies is gone (a batch reads the log's)
    let copies: i64 = with_pg(&url, async |c| {
        c.query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename = 'state_manifests'",
            &[],
        )
        .await
        .unwrap()
        .get(0)
    });
    assert_eq!(copies, 0);
}

/// Runs `f` on a connection to `url`.
fn with_pg<T>(url: &str, f: impl AsyncFnOnce(&tokio_postgres::Client) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        f(&c).await
    })
}

fn pg_exec(url: &str, sql: &str) {
    with_pg(url, async |c| c.batch_execute(sql).await.unwrap());
}

/// The stored view columns and the bodies, in id order.
fn pg_view_columns(url: &str) -> (Vec<ViewColumns>, Vec<(String, String)>) {
    let rows = with_pg(url, async |c| {
        c.query(
            "SELECT id, cancelled, contested, expires_at, visibility, price_usd, body
             FROM state_listings ORDER BY id",
            &[],
        )
        .await
        .unwrap()
    });
    rows.iter()
        .map(|r| {
            (
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)),
                (r.get(0), r.get(6)),
            )
        })
        .unzip()
}

/// A SQLite state file from before the listings' view columns gets them,
/// filled from the bodies, when a process opens it.
#[test]
fn a_state_file_from_before_the_view_columns_gets_them_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("indexer.db");
    let mut log = SqliteStore::open(&path).unwrap();
    log.put_records(&view_market(), u64::MAX).unwrap();
    catch_up(&log, &mut SqliteState::open(&path).unwrap(), 5);
    let read = || -> (Vec<ViewColumns>, Vec<(String, String)>) {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT id, cancelled, contested, expires_at, visibility, price_usd, body
                 FROM state_listings ORDER BY id",
            )
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ),
                    (r.get(0)?, r.get(6)?),
                ))
            })
            .unwrap();
        rows.map(Result::unwrap).unzip()
    };
    let (stored, bodies) = read();
    let want = view_columns_of(&bodies);
    assert_eq!(stored, want);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP INDEX state_listings_open;
             ALTER TABLE state_listings DROP COLUMN cancelled;
             ALTER TABLE state_listings DROP COLUMN contested;
             ALTER TABLE state_listings DROP COLUMN expires_at;
             ALTER TABLE state_listings DROP COLUMN visibility;
             ALTER TABLE state_listings DROP COLUMN price_usd;
             CREATE TABLE state_manifests (id TEXT PRIMARY KEY, body TEXT NOT NULL);",
        )
        .unwrap();
    SqliteState::open(&path).unwrap();
    assert_eq!(read().0, want);
    // and its copy of the carried bodies is gone (a batch reads the log's)
    let copies: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'state_manifests'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(copies, 0);
}

/// One writer per SQLite file: a second is refused, naming the lock, until
/// the first is gone.
#[test]
fn a_second_sqlite_writer_is_refused_until_the_first_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("indexer.db");
    SqliteStore::open(&path).unwrap();
    let first = SqliteState::open_writer(&path).unwrap();
    let refused = SqliteState::open_writer(&path)
        .err()
        .expect("a second writer");
    assert!(
        refused.to_string().contains("indexer.db.writer.lock"),
        "{refused}"
    );
    // readers are never refused
    SqliteState::open(&path).unwrap();
    drop(first);
    SqliteState::open_writer(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("indexer.db.writer.lock"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// A log stored before the store kept the manifests its records carried
/// (schema v3) gets them from its records when opened, and a rebuild
/// over it folds what the whole log does.
#[test]
fn a_log_from_before_carried_manifests_is_backfilled_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("indexer.db");
    let records = mixed_log(4);
    SqliteStore::open(&path)
        .unwrap()
        .put_records(&records, u64::MAX)
        .unwrap();
    let want: std::collections::BTreeMap<String, serde_json::Value> = records
        .iter()
        .flat_map(|r| &r.manifests)
        .map(|(id, b)| (id.clone(), (**b).clone()))
        .collect();
    assert!(want.len() >= 4, "{}", want.len());
    let carried = |log: &SqliteStore| -> std::collections::BTreeMap<String, serde_json::Value> {
        let mut all = std::collections::BTreeMap::new();
        let mut after: Option<String> = None;
        // two at a time: the paging is exercised too
        loop {
            let page = log.carried_manifests(after.as_deref(), 2).unwrap();
            let Some((last, _)) = page.last().cloned() else {
                return all;
            };
            for (id, body) in page {
                all.insert(id, serde_json::from_str(&body).unwrap());
            }
            after = Some(last);
        }
    };
    assert_eq!(carried(&SqliteStore::open(&path).unwrap()), want);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE carried_manifests; ALTER TABLE txs DROP COLUMN moved;
             PRAGMA user_version = 3;",
        )
        .unwrap();
    let log = SqliteStore::open(&path).unwrap();
    assert_eq!(carried(&log), want);
    let mut db = SqliteState::open(&path).unwrap();
    assert!(catch_up(&log, &mut db, 7).rebuilt);
    assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
}

/// A catch-up of up to one and a half pages folds them in one commit,
/// which also records the log's change number; a longer one pages; killed
/// at that one commit, the next catch-up does it all.
#[test]
fn a_short_catch_up_is_one_commit_recording_the_change_number() {
    let records = synth::trades(80, 3);
    let mut log = SqliteStore::in_memory().unwrap();
    let mut db = SqliteState::in_memory().unwrap();
    log.put_records(&records[..60], 0).unwrap();
    catch_up(&log, &mut db, 100);
    for (batch, commits) in [(60..210, 1), (210..361, 2)] {
        log.put_records(&records[batch.clone()], 0).unwrap();
        let mut counting = Dying {
            db: &mut db,
            commits: 0,
            die_at: usize::MAX,
        };
        let done = catch_up(&log, &mut counting, 100);
        assert_eq!((done.folded, counting.commits), (batch.len(), commits));
        assert_eq!(db.applied_seq().unwrap(), log.log_seq().unwrap());
    }
    log.put_records(&records[361..], 0).unwrap();
    let before = db.applied_seq().unwrap();
    assert!(killed_at(&log, &mut db, 100, 1));
    assert_eq!(db.applied_seq().unwrap(), before);
    assert_eq!(catch_up(&log, &mut db, 100).folded, records.len() - 361);
    assert_eq!(db.applied_seq().unwrap(), log.log_seq().unwrap());
    assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
}

/// A rebuild in pages larger than a batch with undo rows hands the undo
/// tail out in batches from what it read ahead: the same state, and a
/// late record in the tail refolds from there.
#[test]
fn a_rebuild_in_large_pages_keeps_its_undo_tail() {
    let mut records = synth::trades(500, 3);
    let late = records.remove(records.len() - 300);
    let mut log = SqliteStore::in_memory().unwrap();
    let mut db = SqliteState::in_memory().unwrap();
    log.put_records(&records, 0).unwrap();
    let done = catch_up_keeping(&log, &mut db, 1_000, 600);
    assert_eq!(done.folded, records.len());
    log.put_records(std::slice::from_ref(&late), 0).unwrap();
    let done = catch_up(&log, &mut db, 1_000);
    assert!(done.rewound && !done.rebuilt, "{done:?}");
    assert!(done.folded <= 300 + 750, "{done:?}");
    records.push(late);
    assert_eq!(state_hash(&mut db).unwrap(), replay(&records).hash());
}
