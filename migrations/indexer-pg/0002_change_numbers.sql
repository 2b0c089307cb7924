-- Change numbers, so a read replica catches up from the last change it
-- applied instead of refolding the whole log on every NOTIFY: every insert
-- or update of a record takes the next number, and a removed record is
-- logged with one. The writer takes LOG_LOCK in every transaction that
-- changes the log, so numbers commit in order (a replica reading
-- `seq > n` never skips a change that commits later with a smaller one).
CREATE SEQUENCE txs_seq;
ALTER TABLE txs ADD COLUMN seq BIGINT NOT NULL DEFAULT nextval('txs_seq');
CREATE INDEX txs_by_seq ON txs (seq);
CREATE TABLE txs_removed (
    seq       BIGINT NOT NULL DEFAULT nextval('txs_seq'),
    signature TEXT NOT NULL
);
CREATE INDEX txs_removed_by_seq ON txs_removed (seq);
