//! USD at settle time: a listing priced in USD that settles in a currency
//! that is not a dollar converts with this one rule, from a Pyth pull
//! oracle price account (`PriceUpdateV2`, as the Pyth Solana receiver
//! program writes it), in the program's `quote_usd` (which the buy runs, so
//! the conversion at the buy's slot is in its logs for `listen` and the
//! indexer) and in the buyer's client (which quotes before paying).
//!
//! - [`parse_price_update`]: the account's bytes (Anchor discriminator,
//!   write authority, verification level, the price message, posted slot).
//! - [`UsdRule::check`]: fully verified, the listing's feed, no older than
//!   the listing's maximum age, confidence within its bound, price above 0.
//! - [`usd_micros_to_units`]: micro-dollars to base units of a currency of
//!   `decimals` at that price, rounded up (the seller is never paid less).
//! - [`accepts`]: what a buy must pay against a quote, within the listing's
//!   tolerance (the buyer pays its own conversion, made before the slot).
//!
//! Integer math only (u128), the same on SBF and the host. Never reads
//! accounts or the clock: callers pass the bytes and the time.

/// The Pyth Solana receiver program (`rec5EKMGg6MxZYaMdyBfgwp4d5rB9T1VQH5pJv5LtFJ`),
/// the owner of every `PriceUpdateV2` account.
pub const PYTH_RECEIVER: [u8; 32] = [
    12, 183, 250, 187, 82, 247, 166, 72, 187, 91, 49, 125, 154, 1, 139, 144, 87, 203, 2, 71, 116,
    250, 254, 1, 230, 196, 223, 152, 204, 56, 88, 129,
];

/// Pyth's SOL/USD feed id.
pub const SOL_USD_FEED: [u8; 32] = [
    0xef, 0x0d, 0x8b, 0x6f, 0xda, 0x2c, 0xeb, 0xa4, 0x1d, 0xa1, 0x5d, 0x40, 0x95, 0xd1, 0xda, 0x39,
    0x2a, 0x0d, 0x2f, 0x8e, 0xd0, 0xc6, 0xc7, 0xbc, 0x0f, 0x4c, 0xfa, 0xc8, 0xc2, 0x80, 0xb5, 0x6d,
];

/// `sha256("account:PriceUpdateV2")[..8]`.
pub const PRICE_UPDATE_V2_DISCRIMINATOR: [u8; 8] = [34, 241, 35, 99, 157, 126, 244, 205];

/// Bytes of a `PriceUpdateV2` account (the receiver allocates the larger,
/// partial, verification level).
pub const PRICE_UPDATE_V2_LEN: usize = 8 + 32 + 2 + 32 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 8;

/// Most micro-dollars a listing may ask (the reference's cap, 10,000 USD).
pub const MAX_USD_MICROS: u64 = 10_000 * 1_000_000;

/// Why a price cannot convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UsdError {
    /// Not a `PriceUpdateV2` account's bytes.
    #[error("not a Pyth PriceUpdateV2 account")]
    NotAPriceUpdate,
    /// Only partially verified by the Wormhole guardians.
    #[error("the price update is only partially verified")]
    PartiallyVerified,
    /// Another feed than the listing's.
    #[error("the price account carries another feed than the listing's")]
    OtherFeed,
    /// Older than the listing's maximum age (or from the future).
    #[error("the price is {age} s old; the listing takes at most {max} s")]
    Stale {
        /// Seconds since it was published.
        age: i64,
        /// The listing's maximum.
        max: u32,
    },
    /// The confidence interval is too wide.
    #[error("the price's confidence is {bps} bps of it; the listing takes at most {max} bps")]
    Uncertain {
        /// Confidence over price, in basis points (rounded up).
        bps: u64,
        /// The listing's maximum.
        max: u16,
    },
    /// Zero or negative.
    #[error("the price is not positive")]
    NotPositive,
    /// An exponent or amount out of the range the rule converts.
    #[error("the price or amount is out of the range converted")]
    OutOfRange,
}

/// The price message of a `PriceUpdateV2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriceUpdate {
    /// Fully verified (all guardian signatures checked).
    pub fully_verified: bool,
    /// The feed (e.g. SOL/USD).
    pub feed_id: [u8; 32],
    /// The price, times 10^exponent USD per whole unit.
    pub price: i64,
    /// Its confidence, in the same units.
    pub conf: u64,
    /// The exponent.
    pub exponent: i32,
    /// When it was published (unix seconds).
    pub publish_time: i64,
    /// The Solana slot it was posted at.
    pub posted_slot: u64,
}

/// Reads a `PriceUpdateV2` account's data (its owner is the caller's to
/// check against [`PYTH_RECEIVER`]).
pub fn parse_price_update(data: &[u8]) -> Result<PriceUpdate, UsdError> {
    let bad = UsdError::NotAPriceUpdate;
    if data.get(..8) != Some(&PRICE_UPDATE_V2_DISCRIMINATOR[..]) {
        return Err(bad);
    }
    // discriminator, write authority, then the verification level: an
    // enum, `Partial { num_signatures: u8 }` (tag 0) or `Full` (tag 1)
    let (fully_verified, mut at) = match data.get(40) {
        Some(0) => (false, 42),
        Some(1) => (true, 41),
        _ => return Err(bad),
    };
    let mut take = |n: usize| -> Result<&[u8], UsdError> {
        let s = data.get(at..at + n).ok_or(UsdError::NotAPriceUpdate)?;
        at += n;
        Ok(s)
    };
    let feed_id: [u8; 32] = take(32)?.try_into().map_err(|_| bad)?;
    let i64_at = |b: &[u8]| i64::from_le_bytes(b.try_into().expect("8 bytes"));
    let u64_at = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let price = i64_at(take(8)?);
    let conf = u64_at(take(8)?);
    let exponent = i32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    let publish_time = i64_at(take(8)?);
    let _prev_publish_time = take(8)?;
    let _ema_price = take(8)?;
    let _ema_conf = take(8)?;
    let posted_slot = u64_at(take(8)?);
    Ok(PriceUpdate {
        fully_verified,
        feed_id,
        price,
        conf,
        exponent,
        publish_time,
        posted_slot,
    })
}

/// A `PriceUpdateV2` account's data for `update` (fully verified, or
/// partially with 5 signatures), as the receiver writes it: for fixtures
/// and tests.
pub fn price_update_bytes(
    write_authority: &[u8; 32],
    update: &PriceUpdate,
) -> [u8; PRICE_UPDATE_V2_LEN] {
    let mut out = [0u8; PRICE_UPDATE_V2_LEN];
    let mut at = 0;
    let mut put = |b: &[u8]| {
        out[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    };
    put(&PRICE_UPDATE_V2_DISCRIMINATOR);
    put(write_authority);
    if update.fully_verified {
        put(&[1]);
    } else {
        put(&[0, 5]);
    }
    put(&update.feed_id);
    put(&update.price.to_le_bytes());
    put(&update.conf.to_le_bytes());
    put(&update.exponent.to_le_bytes());
    put(&update.publish_time.to_le_bytes());
    put(&update.publish_time.saturating_sub(1).to_le_bytes());
    put(&update.price.to_le_bytes());
    put(&update.conf.to_le_bytes());
    put(&update.posted_slot.to_le_bytes());
    out
}

/// What a listing priced in USD at settle time asks of a price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsdRule {
    /// The feed (e.g. SOL/USD's id).
    pub feed_id: [u8; 32],
    /// Oldest price taken, in seconds.
    pub max_age_secs: u32,
    /// Widest confidence taken, in basis points of the price.
    pub max_conf_bps: u16,
}

/// Seconds a price may be published after the clock that reads it (the
/// cluster's clock and Pythnet's drift apart a little).
pub const MAX_CLOCK_SKEW_SECS: i64 = 10;

impl UsdRule {
    /// Whether `update` may price a buy at `now` (unix seconds).
    pub fn check(&self, update: &PriceUpdate, now: i64) -> Result<(), UsdError> {
        if !update.fully_verified {
            return Err(UsdError::PartiallyVerified);
        }
        if update.feed_id != self.feed_id {
            return Err(UsdError::OtherFeed);
        }
        let age = now.saturating_sub(update.publish_time);
        if age > i64::from(self.max_age_secs) || age < -MAX_CLOCK_SKEW_SECS {
            return Err(UsdError::Stale {
                age,
                max: self.max_age_secs,
            });
        }
        if update.price <= 0 {
            return Err(UsdError::NotPositive);
        }
        let price = update.price as u128;
        let bps = (u128::from(update.conf) * 10_000).div_ceil(price);
        if bps > u128::from(self.max_conf_bps) {
            return Err(UsdError::Uncertain {
                bps: u64::try_from(bps).unwrap_or(u64::MAX),
                max: self.max_conf_bps,
            });
        }
        Ok(())
    }
}

/// `usd_micros` micro-dollars in base units of a currency of `decimals`
/// at `price × 10^exponent` USD per whole unit, rounded up.
pub fn usd_micros_to_units(
    usd_micros: u64,
    price: i64,
    exponent: i32,
    decimals: u8,
) -> Result<u64, UsdError> {
    if price <= 0 {
        return Err(UsdError::NotPositive);
    }
    if usd_micros > MAX_USD_MICROS || decimals > 18 || !(-18..=18).contains(&exponent) {
        return Err(UsdError::OutOfRange);
    }
    let pow = |e: u32| 10u128.checked_pow(e).ok_or(UsdError::OutOfRange);
    // units = usd_micros / 10^6 / (price × 10^exponent) × 10^decimals
    let mut num = u128::from(usd_micros) * pow(u32::from(decimals))?;
    let mut den = (price as u128) * pow(6)?;
    if exponent < 0 {
        num = num
            .checked_mul(pow(exponent.unsigned_abs())?)
            .ok_or(UsdError::OutOfRange)?;
    } else {
        den = den
            .checked_mul(pow(exponent.unsigned_abs())?)
            .ok_or(UsdError::OutOfRange)?;
    }
    u64::try_from(num.div_ceil(den)).map_err(|_| UsdError::OutOfRange)
}

/// Whether `paid` base units pay a quote of `quoted` within
/// `tolerance_bps` (the buyer converts before its slot, the program at
/// it): `paid ≥ quoted − ⌊quoted × tolerance / 10,000⌋`.
pub fn accepts(paid: u64, quoted: u64, tolerance_bps: u16) -> bool {
    let slack = u128::from(quoted) * u128::from(tolerance_bps) / 10_000;
    u128::from(paid) + slack >= u128::from(quoted)
}

/// The largest quote `paid` base units still pay within `tolerance_bps`
/// ([`accepts`]): a buy states it (`quote_usd`'s `max_units`), so a price
/// that moved further before its slot fails the buy instead of leaving a
/// payment the seller would refuse.
pub fn max_quote_paid_by(paid: u64, tolerance_bps: u16) -> u64 {
    let tol = u128::from(tolerance_bps.min(9_999));
    let mut q = (u128::from(paid) * 10_000 / (10_000 - tol)).min(u128::from(u64::MAX)) as u64;
    while q > paid && !accepts(paid, q, tolerance_bps) {
        q -= 1;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SOL_USD: [u8; 32] = [0xef; 32];

    fn update(price: i64, conf: u64, publish_time: i64) -> PriceUpdate {
        PriceUpdate {
            fully_verified: true,
            feed_id: SOL_USD,
            price,
            conf,
            exponent: -8,
            publish_time,
            posted_slot: 7,
        }
    }

    #[test]
    fn the_account_layout_round_trips() {
        for full in [true, false] {
            let u = PriceUpdate {
                fully_verified: full,
                ..update(15_012_345_678, 4_000_000, 1_800_000_000)
            };
            let bytes = price_update_bytes(&[9; 32], &u);
            assert_eq!(parse_price_update(&bytes), Ok(u));
        }
        let mut bad = price_update_bytes(&[9; 32], &update(1, 0, 0));
        bad[0] ^= 1;
        assert_eq!(parse_price_update(&bad), Err(UsdError::NotAPriceUpdate));
        assert_eq!(
            parse_price_update(&PRICE_UPDATE_V2_DISCRIMINATOR),
            Err(UsdError::NotAPriceUpdate)
        );
        let mut level = price_update_bytes(&[9; 32], &update(1, 0, 0));
        level[40] = 2;
        assert_eq!(parse_price_update(&level), Err(UsdError::NotAPriceUpdate));
    }

    #[test]
    fn the_rule_takes_fresh_certain_verified_prices_of_its_feed() {
        let rule = UsdRule {
            feed_id: SOL_USD,
            max_age_secs: 60,
            max_conf_bps: 100,
        };
        let now = 1_800_000_000;
        let good = update(15_000_000_000, 150_000_000, now - 60);
        assert_eq!(rule.check(&good, now), Ok(()));
        assert_eq!(
            rule.check(&update(15_000_000_000, 150_000_000, now - 61), now),
            Err(UsdError::Stale { age: 61, max: 60 })
        );
        assert!(matches!(
            rule.check(&update(15_000_000_000, 0, now + 11), now),
            Err(UsdError::Stale { .. })
        ));
        assert_eq!(
            rule.check(&update(15_000_000_000, 150_000_001, now), now),
            Err(UsdError::Uncertain { bps: 101, max: 100 })
        );
        assert_eq!(
            rule.check(&update(0, 0, now), now),
            Err(UsdError::NotPositive)
        );
        let other = PriceUpdate {
            feed_id: [1; 32],
            ..good
        };
        assert_eq!(rule.check(&other, now), Err(UsdError::OtherFeed));
        let partial = PriceUpdate {
            fully_verified: false,
            ..good
        };
        assert_eq!(rule.check(&partial, now), Err(UsdError::PartiallyVerified));
    }

    #[test]
    fn conversions_round_up_to_the_sellers_side() {
        // 15 USD at 150.00000000 USD/SOL: 0.1 SOL exactly
        assert_eq!(
            usd_micros_to_units(15_000_000, 15_000_000_000, -8, 9),
            Ok(100_000_000)
        );
        // 1 USD at 150 USD/SOL: 6,666,666.67 lamports, rounded up
        assert_eq!(
            usd_micros_to_units(1_000_000, 15_000_000_000, -8, 9),
            Ok(6_666_667)
        );
        // a positive exponent, a 6-decimal token at 2 USD
        assert_eq!(usd_micros_to_units(5_000_000, 2, 0, 6), Ok(2_500_000));
        assert_eq!(
            usd_micros_to_units(MAX_USD_MICROS + 1, 1, 0, 9),
            Err(UsdError::OutOfRange)
        );
        assert_eq!(usd_micros_to_units(1, -1, 0, 9), Err(UsdError::NotPositive));
        assert_eq!(usd_micros_to_units(1, 1, 19, 9), Err(UsdError::OutOfRange));
    }

    #[test]
    fn tolerance_is_a_floor_below_the_quote() {
        assert!(accepts(100, 100, 0));
        assert!(!accepts(99, 100, 0));
        assert!(accepts(99, 100, 100));
        assert!(!accepts(98, 100, 100));
        assert!(accepts(u64::MAX, u64::MAX, 10_000));
    }

    proptest! {
        /// `max_quote_paid_by` is the exact edge of what a payment pays.
        #[test]
        fn the_max_quote_is_the_edge_of_acceptance(paid in 0u64..=u64::MAX / 2, tol in 0u16..=500) {
            let q = max_quote_paid_by(paid, tol);
            prop_assert!(q >= paid);
            prop_assert!(accepts(paid, q, tol));
            prop_assert!(!accepts(paid, q + 1, tol));
        }

        /// The conversion pays at least the USD asked: units × price ≥ USD,
        /// and one unit less would not.
        #[test]
        fn units_cover_the_price_and_no_more(
            usd in 1u64..=MAX_USD_MICROS,
            price in 1i64..=1_000_000_000_000,
            exponent in -10i32..=0,
            decimals in 0u8..=9,
        ) {
            let units = usd_micros_to_units(usd, price, exponent, decimals).unwrap();
            // value in micro-dollars × 10^(decimals − exponent) (both sides scaled)
            let scale = |u: u64| u128::from(u) * price as u128 * 1_000_000;
            let want = u128::from(usd) * 10u128.pow(u32::from(decimals)) * 10u128.pow(exponent.unsigned_abs());
            prop_assert!(scale(units) >= want);
            prop_assert!(units == 0 || scale(units - 1) < want);
        }
    }
}
