-- Per-buy retry bookkeeping: a transient problem with one buy (not yet
-- visible at the commitment, an RPC error, an upload or release that did
-- not land) is recorded on that buy and retried with capped backoff; it
-- never stops the daemon and never leaves the buy stranded.
ALTER TABLE buys ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE buys ADD COLUMN last_error TEXT;
ALTER TABLE buys ADD COLUMN retry_at INTEGER NOT NULL DEFAULT 0;  -- unix ms; due when <= now
-- Which token standard the recorded mint_address belongs to, so a restart
-- with another --token-standard reuses the mint recorded for the buy.
ALTER TABLE buys ADD COLUMN token_standard TEXT;
