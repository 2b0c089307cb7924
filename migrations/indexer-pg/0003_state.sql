-- The folded state as tables (indexer::statedb::postgres): the writer
-- commits each batch of the fold here with the log change number it
-- reflects; API servers on the primary or a hot standby read them. Each
-- entity row holds its canonical JSON (the bytes the state hash covers);
-- keys sort bytewise (COLLATE "C"), as the state hash walks them.
CREATE TABLE state_listings (
    id             TEXT COLLATE "C" PRIMARY KEY,
    seller         TEXT NOT NULL,
    escrow_account TEXT,
    body           TEXT NOT NULL
);
CREATE INDEX state_listings_by_seller ON state_listings (seller);
CREATE INDEX state_listings_by_escrow ON state_listings (escrow_account);
CREATE TABLE state_offers (
    id         TEXT COLLATE "C" PRIMARY KEY,
    listing_id TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX state_offers_by_listing ON state_offers (listing_id);
CREATE TABLE state_settlements (
    signature  TEXT COLLATE "C" PRIMARY KEY,
    listing_id TEXT NOT NULL,
    slot       BIGINT NOT NULL,
    idx        BIGINT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX state_settlements_by_listing ON state_settlements (listing_id, slot, idx);
CREATE TABLE state_rejected (
    signature TEXT COLLATE "C" PRIMARY KEY,
    body      TEXT NOT NULL
);
CREATE TABLE state_escrows (
    account         TEXT COLLATE "C" PRIMARY KEY,
    listing_account TEXT NOT NULL,
    body            TEXT NOT NULL
);
CREATE INDEX state_escrows_by_listing ON state_escrows (listing_account);
CREATE TABLE state_seen (
    signature TEXT PRIMARY KEY,
    slot      BIGINT NOT NULL,
    idx       BIGINT NOT NULL
);
CREATE TABLE state_head (
    one          INTEGER PRIMARY KEY CHECK (one = 1),
    now          BIGINT NOT NULL,
    last_slot    BIGINT,
    last_idx     BIGINT,
    transactions BIGINT NOT NULL,
    applied_seq  BIGINT,
    floor_slot   BIGINT,
    floor_idx    BIGINT,
    -- the whole market's counts (kept per batch: answers never count rows)
    n_listings    BIGINT NOT NULL DEFAULT 0,
    n_offers      BIGINT NOT NULL DEFAULT 0,
    n_settlements BIGINT NOT NULL DEFAULT 0,
    n_rejected    BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE state_batches (
    batch       BIGSERIAL PRIMARY KEY,
    last_slot   BIGINT NOT NULL,
    last_idx    BIGINT NOT NULL,
    head_before TEXT NOT NULL
);
CREATE TABLE state_undo (
    batch BIGINT NOT NULL,
    kind  SMALLINT NOT NULL,
    key   TEXT NOT NULL,
    body  TEXT
);
CREATE INDEX state_undo_by_batch ON state_undo (batch);
CREATE TABLE state_manifests (
    id   TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
