-- The log's and the seen set's signatures compare as bytes (COLLATE "C"),
-- as the other state keys already do: every record's insert and every
-- batch's lookups walk these two primary keys, and a server initialised
-- under a locale (even C.UTF-8 on PostgreSQL 15) compared them with the
-- locale's collation (strcoll, no abbreviated keys). Bytewise order is
-- also the order the fold sorts ties in (indexer::record::sort_chain_order)
-- whatever the server's locale. Rewrites both tables once (minutes at
-- 10,000,000 records).
ALTER TABLE txs ALTER COLUMN signature TYPE TEXT COLLATE "C";
ALTER TABLE txs_removed ALTER COLUMN signature TYPE TEXT COLLATE "C";
ALTER TABLE state_seen ALTER COLUMN signature TYPE TEXT COLLATE "C";
