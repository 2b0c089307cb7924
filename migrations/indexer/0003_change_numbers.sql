-- Change numbers, so a read replica (`serve --db`) catches up from the
-- last change it applied instead of refolding the whole log: every insert
-- or update of a record takes the next number (the last one taken is
-- meta `log_seq`), and a removed record is logged with one. Rows stored
-- before this migration keep 0: a replica's opening fold includes them.
ALTER TABLE txs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX txs_by_seq ON txs (seq);
CREATE TABLE txs_removed (
    seq       INTEGER NOT NULL,
    signature TEXT NOT NULL
);
CREATE INDEX txs_removed_by_seq ON txs_removed (seq);
INSERT OR IGNORE INTO meta (key, value) VALUES ('log_seq', '0');
