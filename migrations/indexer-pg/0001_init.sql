-- The indexer's log on PostgreSQL: the same tables as the SQLite store
-- (migrations/indexer/), shared by one writer (`run --pg`) and any number
-- of read replicas (`serve --pg`). State is never stored: each process
-- folds this log; the writer NOTIFYs `brainctl_indexer_log` on change.
CREATE TABLE txs (
    signature TEXT PRIMARY KEY,
    slot      BIGINT NOT NULL,
    idx       BIGINT NOT NULL,
    final     BOOLEAN NOT NULL,
    record    TEXT NOT NULL          -- JSON indexer::record::TxRecord
);
CREATE INDEX txs_chain_order ON txs (slot, idx, signature);
CREATE INDEX txs_provisional ON txs (final) WHERE NOT final;

CREATE TABLE manifests (
    id   TEXT PRIMARY KEY,
    body TEXT NOT NULL
);

CREATE TABLE checkpoints (
    address   TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    slot      BIGINT NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Auth, shared by every replica: a session made on one works on all.
CREATE TABLE nonces (
    seq        BIGSERIAL,
    nonce      TEXT PRIMARY KEY,
    pubkey     TEXT NOT NULL,
    message    TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX nonces_pubkey ON nonces (pubkey, seq);
CREATE INDEX nonces_seq ON nonces (seq);
CREATE TABLE sessions (
    token_sha256 TEXT PRIMARY KEY,
    pubkey       TEXT NOT NULL,
    expires_at   BIGINT NOT NULL
);
