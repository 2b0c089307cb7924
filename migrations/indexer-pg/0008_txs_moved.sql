-- Whether a record was ever stored at another position (a provisional
-- record that moved): a catch-up looks up where the fold saw a changed
-- record only if it may have seen it elsewhere (before the head, moved,
-- or removed and stored again), not for every new record after the head.
-- The default stays TRUE (looked up, as before): records stored before
-- this migration, or by an older writer still running, count as moved;
-- the store writes FALSE for the records it inserts.
ALTER TABLE txs ADD COLUMN moved BOOLEAN NOT NULL DEFAULT TRUE;
