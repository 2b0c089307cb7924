-- Listings settled in an SPL token: the mint (base58) whose base units
-- `price_lamports` then holds. NULL: SOL, lamports.
ALTER TABLE listings ADD COLUMN mint TEXT;
