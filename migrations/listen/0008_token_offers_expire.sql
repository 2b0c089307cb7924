-- Offers recorded on token listings before terms could be priced in a
-- token held lamports (an offer's SOL price), which would now bind as the
-- token's base units: they expire here (offers live 24 h at most; the
-- buyer offers again, in the token).
UPDATE offers SET expires_at = 0
 WHERE listing_id IN (SELECT listing_id FROM listings WHERE mint IS NOT NULL);
