-- Whether a record was ever stored at another position (a provisional
-- record that moved): a catch-up looks up where the fold saw a changed
-- record only if it may have seen it elsewhere (before the head, moved,
-- or removed and stored again), not for every new record after the head.
-- Records stored before this migration count as moved (looked up, as
-- before); the store writes 0 for the records it inserts.
ALTER TABLE txs ADD COLUMN moved INTEGER NOT NULL DEFAULT 1;
