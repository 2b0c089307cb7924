-- Releases the chain would not refuse to repeat (a unit of the listing's
-- receipt mint, or no receipt): each transaction signed for one is kept
-- here before it is sent, so a restart finishes it (or learns it can no
-- longer land) before signing another. `wire` is the signed transaction.
CREATE TABLE release_sends (
    signature  TEXT PRIMARY KEY,
    buy        TEXT NOT NULL REFERENCES buys(signature),
    last_valid INTEGER NOT NULL,
    wire       BLOB NOT NULL,
    sent_at    TEXT NOT NULL
);
CREATE INDEX release_sends_buy ON release_sends(buy);
