-- Bounded nonce storage prunes by pubkey on every challenge.
CREATE INDEX nonces_pubkey ON nonces(pubkey);
