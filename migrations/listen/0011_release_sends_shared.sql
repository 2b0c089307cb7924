-- A release transaction may carry the releases of several buys (as many
-- as fit in a packet): it is kept under every buy it releases, all in one
-- transaction of this database, so a restart finds it from any of them.
CREATE TABLE release_sends_shared (
    signature  TEXT NOT NULL,
    buy        TEXT NOT NULL REFERENCES buys(signature),
    last_valid INTEGER NOT NULL,
    wire       BLOB NOT NULL,
    sent_at    TEXT NOT NULL,
    PRIMARY KEY (signature, buy)
);
INSERT INTO release_sends_shared(signature, buy, last_valid, wire, sent_at)
    SELECT signature, buy, last_valid, wire, sent_at FROM release_sends ORDER BY rowid;
DROP TABLE release_sends;
ALTER TABLE release_sends_shared RENAME TO release_sends;
CREATE INDEX release_sends_buy ON release_sends(buy);
