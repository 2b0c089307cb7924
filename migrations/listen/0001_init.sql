-- brainctl listen daemon state, schema version 1.
-- One row per buy transaction signature, advanced through
-- seen -> verified -> envelope_uploaded -> released, or -> rejected.
CREATE TABLE buys (
    signature       TEXT PRIMARY KEY,
    listing_id      TEXT NOT NULL,
    slot            INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('seen', 'verified', 'envelope_uploaded', 'released', 'rejected')),
    buyer           TEXT,
    buyer_x25519    TEXT,
    paid_lamports   INTEGER,
    price_lamports  INTEGER,
    offer_id        TEXT,
    reason          TEXT,            -- JSON rejection, when rejected
    envelope_id     TEXT,
    mint_address    TEXT,
    release_sig     TEXT,
    seen_at         TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX buys_state ON buys(state);
CREATE INDEX buys_listing ON buys(listing_id);

CREATE TABLE checkpoints (
    address     TEXT PRIMARY KEY,    -- the watched payment address
    signature   TEXT NOT NULL,       -- newest finalized signature fully processed
    slot        INTEGER NOT NULL,
    updated_at  TEXT NOT NULL
);
