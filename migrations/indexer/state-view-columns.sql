-- The view columns of state_listings (see indexer-pg/0005), added to a
-- state file from before them and filled from the listings' bodies.
-- Run once, by the first process to open such a file (statedb::sqlite).
ALTER TABLE state_listings ADD COLUMN cancelled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE state_listings ADD COLUMN contested BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE state_listings ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state_listings ADD COLUMN visibility TEXT NOT NULL DEFAULT '';
ALTER TABLE state_listings ADD COLUMN price_usd REAL;
UPDATE state_listings SET
    cancelled  = coalesce(json_type(body, '$.cancelled'), 'null') <> 'null',
    contested  = coalesce(json_array_length(body, '$.contested_by'), 0) > 0,
    expires_at = json_extract(body, '$.expires_at'),
    visibility = json_extract(body, '$.visibility'),
    price_usd  = json_extract(body, '$.price_usd');
