//! The localnet's SOL/USD price: a Pyth `PriceUpdateV2` account (fully
//! verified, Pyth's SOL/USD feed id, owned by the Pyth receiver program)
//! at the address of Pyth's sponsored SOL/USD price feed account, loaded
//! into a local validator's genesis so that listings priced in USD at
//! settle time trade offline.
//!
//! The account is written once, at genesis, and no receiver program runs
//! on the localnet to update it: its price is fixed and it ages with the
//! validator, so localnet listings state a maximum age that covers the
//! validator's life (`list --price-max-age-secs`). Never used against a
//! public cluster, where Pyth's receiver keeps that account fresh.

use escrow_math::usd::{
    price_update_bytes, PriceUpdate, PRICE_UPDATE_V2_LEN, PYTH_RECEIVER, SOL_USD_FEED,
};
use solana_sdk::pubkey::Pubkey;

/// The address (Pyth's sponsored SOL/USD price feed account, shard 0).
pub const ADDRESS: Pubkey = solana_sdk::pubkey!("7UVimffxr9ow1uXYxsr4LHAcV58mLzhmwaeKvJ1pjLiE");

/// The account's price update: `usd_per_sol` (8 decimals kept), a 0.1%
/// confidence, published at `publish_time`.
pub fn update(usd_per_sol: f64, publish_time: i64) -> PriceUpdate {
    let price = (usd_per_sol * 1e8).round() as i64;
    PriceUpdate {
        fully_verified: true,
        feed_id: SOL_USD_FEED,
        price,
        conf: (price / 1_000).max(0) as u64,
        exponent: -8,
        publish_time,
        posted_slot: 0,
    }
}

/// The account as a `solana-test-validator --account ADDRESS FILE` file.
pub fn genesis_account_json(usd_per_sol: f64, publish_time: i64) -> serde_json::Value {
    use base64::Engine as _;
    let data = price_update_bytes(&[0; 32], &update(usd_per_sol, publish_time));
    // the rent-exempt minimum: (128 + len) bytes × 3,480 lamports × 2 years
    let lamports = (128 + PRICE_UPDATE_V2_LEN as u64) * 3_480 * 2;
    serde_json::json!({
        "pubkey": ADDRESS.to_string(),
        "account": {
            "lamports": lamports,
            "data": [base64::engine::general_purpose::STANDARD.encode(data), "base64"],
            "owner": Pubkey::new_from_array(PYTH_RECEIVER).to_string(),
            "executable": false,
            "rentEpoch": u64::MAX,
            "space": PRICE_UPDATE_V2_LEN,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_reads_as_the_price_it_was_given() {
        use base64::Engine as _;
        let j = genesis_account_json(150.25, 1_800_000_000);
        assert_eq!(
            j["account"]["owner"],
            "rec5EKMGg6MxZYaMdyBfgwp4d5rB9T1VQH5pJv5LtFJ"
        );
        let data = base64::engine::general_purpose::STANDARD
            .decode(j["account"]["data"][0].as_str().unwrap())
            .unwrap();
        let u = escrow_math::usd::parse_price_update(&data).unwrap();
        assert_eq!(
            (u.price, u.exponent, u.publish_time),
            (15_025_000_000, -8, 1_800_000_000)
        );
        assert!(u.fully_verified);
        assert_eq!(u.feed_id, SOL_USD_FEED);
    }
}
