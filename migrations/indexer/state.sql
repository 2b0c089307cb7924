-- The folded state as tables (indexer::statedb). Idempotent: opened by
-- every process that reads or writes the state. Each entity row holds its
-- canonical JSON (the bytes the state hash covers); keys sort bytewise.
-- state_listings: cancelled .. price_usd are the view columns a listings
-- page filters on (statedb::sieve); a file from before them gets them from
-- state-view-columns.sql, and the index state_listings_open with them.
-- (No comments inside a CREATE TABLE: SQLite keeps its text, and a later
-- ALTER TABLE .. DROP COLUMN cannot parse it back.)
CREATE TABLE IF NOT EXISTS state_listings (
    id             TEXT PRIMARY KEY,
    seller         TEXT NOT NULL,
    escrow_account TEXT,
    body           TEXT NOT NULL,
    cancelled      BOOLEAN NOT NULL DEFAULT FALSE,
    contested      BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at     INTEGER NOT NULL DEFAULT 0,
    visibility     TEXT NOT NULL DEFAULT '',
    price_usd      REAL
);
CREATE INDEX IF NOT EXISTS state_listings_by_seller ON state_listings (seller);
CREATE INDEX IF NOT EXISTS state_listings_by_escrow ON state_listings (escrow_account);
CREATE TABLE IF NOT EXISTS state_offers (
    id         TEXT PRIMARY KEY,
    listing_id TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS state_offers_by_listing ON state_offers (listing_id);
CREATE TABLE IF NOT EXISTS state_settlements (
    signature  TEXT PRIMARY KEY,
    listing_id TEXT NOT NULL,
    slot       INTEGER NOT NULL,
    idx        INTEGER NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS state_settlements_by_listing ON state_settlements (listing_id, slot, idx);
CREATE TABLE IF NOT EXISTS state_rejected (
    signature TEXT PRIMARY KEY,
    body      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS state_escrows (
    account         TEXT PRIMARY KEY,
    listing_account TEXT NOT NULL,
    body            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS state_escrows_by_listing ON state_escrows (listing_account);
CREATE TABLE IF NOT EXISTS state_seen (
    signature TEXT PRIMARY KEY,
    slot      INTEGER NOT NULL,
    idx       INTEGER NOT NULL
);
-- the scalars, the log change number they reflect, and the undo floor
-- (the last record a batch without undo rows folded)
CREATE TABLE IF NOT EXISTS state_head (
    one          INTEGER PRIMARY KEY CHECK (one = 1),
    now          INTEGER NOT NULL,
    last_slot    INTEGER,
    last_idx     INTEGER,
    transactions INTEGER NOT NULL,
    applied_seq  INTEGER,
    floor_slot   INTEGER,
    floor_idx    INTEGER,
    -- the whole market's counts (kept per batch: answers never count rows)
    n_listings    INTEGER NOT NULL DEFAULT 0,
    n_offers      INTEGER NOT NULL DEFAULT 0,
    n_settlements INTEGER NOT NULL DEFAULT 0,
    n_rejected    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS state_batches (
    batch       INTEGER PRIMARY KEY,
    last_slot   INTEGER NOT NULL,
    last_idx    INTEGER NOT NULL,
    head_before TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS state_undo (
    batch INTEGER NOT NULL,
    kind  INTEGER NOT NULL,
    key   TEXT NOT NULL,
    body  TEXT
);
CREATE INDEX IF NOT EXISTS state_undo_by_batch ON state_undo (batch);
-- a batch reads the bodies other records carried from the log's own
-- carried_manifests; files from before kept a copy here
DROP TABLE IF EXISTS state_manifests;
