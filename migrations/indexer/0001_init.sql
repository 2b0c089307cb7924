-- The indexer's durable log: every marketplace transaction it has seen,
-- in chain order, provisional (newer than the finalized slot) or final.
-- State is never stored: it is a fold of this log (indexer::fold).
CREATE TABLE txs (
    signature TEXT PRIMARY KEY,
    slot      INTEGER NOT NULL,
    idx       INTEGER NOT NULL,
    final     INTEGER NOT NULL CHECK (final IN (0, 1)),
    record    TEXT NOT NULL          -- JSON indexer::record::TxRecord
);
CREATE INDEX txs_chain_order ON txs (slot, idx, signature);
CREATE INDEX txs_provisional ON txs (final) WHERE final = 0;

-- Manifest bodies fetched from the gateway, by Arweave item id (a cache:
-- records carry the bodies they use).
CREATE TABLE manifests (
    id   TEXT PRIMARY KEY,
    body TEXT NOT NULL
);

-- Newest final signature per watched address (getSignaturesForAddress `until`).
CREATE TABLE checkpoints (
    address   TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    slot      INTEGER NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Auth: single-use challenge nonces and sessions (token stored hashed).
CREATE TABLE nonces (
    nonce      TEXT PRIMARY KEY,
    pubkey     TEXT NOT NULL,
    message    TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE sessions (
    token_sha256 TEXT PRIMARY KEY,
    pubkey       TEXT NOT NULL,
    expires_at   INTEGER NOT NULL
);
