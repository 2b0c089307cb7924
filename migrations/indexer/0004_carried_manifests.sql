-- The manifest bodies the log's records carried, by Arweave id, written
-- with each record (LogStore::put_records): a rebuild of the state tables
-- learns every body a memo may name from this table alone instead of
-- reading the whole log twice. Never taken back (an id names one body).
-- Records stored before this migration are copied in now.
CREATE TABLE carried_manifests (
    id   TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
INSERT OR IGNORE INTO carried_manifests (id, body)
    SELECT m.key, m.value FROM txs, json_each(txs.record, '$.manifests') AS m;
