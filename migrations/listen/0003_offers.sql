-- Offers on the seller's listings, as the seller decided them.
CREATE TABLE offers (
    offer_id            TEXT PRIMARY KEY,
    listing_id          TEXT NOT NULL,
    buyer               TEXT NOT NULL,
    offer_manifest_id   TEXT NOT NULL,
    price_lamports      INTEGER NOT NULL,   -- the price that applies (the counter's once countered)
    expires_at          INTEGER NOT NULL,
    counter_manifest_id TEXT,
    state               TEXT NOT NULL CHECK (state IN ('open', 'countered', 'accepted', 'rejected')),
    updated_at          TEXT NOT NULL
);
CREATE INDEX offers_listing_buyer ON offers(listing_id, buyer);
