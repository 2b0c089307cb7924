-- The columns a listings page filters on, beside each listing's body
-- (indexer::statedb::sieve): the API sieves a page in the database
-- instead of decoding every listing it passes over. The writer fills
-- them from the listing (statedb::listing_row); listings stored before
-- this migration are filled from their bodies now.
ALTER TABLE state_listings
    ADD COLUMN cancelled  BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN contested  BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN visibility TEXT NOT NULL DEFAULT '',
    ADD COLUMN price_usd  DOUBLE PRECISION;
UPDATE state_listings s SET
    cancelled  = coalesce(jsonb_typeof(j.b -> 'cancelled'), 'null') <> 'null',
    contested  = coalesce(jsonb_array_length(j.b -> 'contested_by'), 0) > 0,
    expires_at = (j.b ->> 'expires_at')::bigint,
    visibility = j.b ->> 'visibility',
    price_usd  = (j.b ->> 'price_usd')::double precision
FROM (SELECT id, body::jsonb AS b FROM state_listings) j
WHERE j.id = s.id;
-- a live page (the default) walks this index: expired listings are
-- skipped inside it
CREATE INDEX state_listings_open ON state_listings (id, expires_at)
    WHERE NOT cancelled AND NOT contested;
