-- The log is looked up by signature with equality only (a batch's upsert,
-- `has`, removals), one random key a record: a hash index (a 4-byte code
-- and a row pointer an entry) instead of the primary key's b-tree of
-- whole base58 signatures (about 1.2 GB at 10,000,000 records): a
-- fraction of the shared buffers. A cold rebuild, which reads the whole
-- log, still pushes it out; the writer reads it back after one
-- (LogStore::warm_lookups). One row per signature is kept by the log's
-- writers, which all hold the log's lock (`store::postgres`: an update
-- of the rows it has, an insert of the rest, one statement). As 0009 did
-- for the seen set.
ALTER TABLE txs DROP CONSTRAINT txs_pkey;
CREATE INDEX txs_by_signature ON txs USING hash (signature);
