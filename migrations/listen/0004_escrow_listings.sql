-- Listings settled through the escrow program: buyers deposit into it,
-- and the release transaction pays the seller out of the escrow.
ALTER TABLE listings ADD COLUMN escrow INTEGER NOT NULL DEFAULT 0;
