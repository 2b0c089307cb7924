-- The treasury's share a buy's release must carry (an x402 payment where
-- the protocol fee applies: x402 pays the seller the whole price, and the
-- seller's release pays the treasury). 0 for every other buy.
ALTER TABLE buys ADD COLUMN fee_at_release INTEGER NOT NULL DEFAULT 0;
