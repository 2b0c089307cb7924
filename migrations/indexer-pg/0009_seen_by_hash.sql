-- Where the fold saw each signature is looked up by equality only and
-- written once per folded record, one random key each: a hash index (a
-- 4-byte code and a row pointer an entry) instead of the primary key's
-- b-tree of whole signatures, about a fifth of its size, so the pages a
-- batch touches stay in memory as the log grows. One row per signature
-- is kept by the one writer (`statedb::postgres`: an update of the rows
-- it has, an insert of the rest, under the writer's lock).
ALTER TABLE state_seen DROP CONSTRAINT state_seen_pkey;
CREATE INDEX state_seen_by_signature ON state_seen USING hash (signature);
