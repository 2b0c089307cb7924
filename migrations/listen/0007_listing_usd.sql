-- Listings priced in USD at settle time: the terms each buy's quote_usd
-- must meet (JSON of `settle::UsdTerms`). NULL: a fixed price.
ALTER TABLE listings ADD COLUMN usd_at_settle TEXT;
