-- The seller's own listings: what `listen` sells and at which terms.
CREATE TABLE listings (
    listing_id          TEXT PRIMARY KEY,
    manifest_id         TEXT NOT NULL,
    bundle_hash         TEXT NOT NULL,
    blob_id             TEXT NOT NULL,
    metadata_uri        TEXT NOT NULL,
    payment_address     TEXT NOT NULL,
    price_lamports      INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,   -- unix seconds
    cancelled_at_slot   INTEGER,
    list_signature      TEXT NOT NULL,
    created_at          TEXT NOT NULL
);
