//! USD at settle time, as clients see it: a listing's Pyth price account
//! read at our commitment and checked by the listing's rule
//! (`escrow_math::usd`, the rule the program's `quote_usd` runs), the
//! base units (lamports for SOL) the listing's USD comes to now (what the buyer pays, and what
//! its quote shows: the source, the price, its age), and the `quote_usd`
//! instruction a buy runs beside its payment so that the conversion at
//! its slot is in its own logs.
//!
//! Never judges a buy (that is `crate::settle::UsdTerms`'s, from the
//! buy's logs), never sends anything.

use crate::chain::{Chain, ChainError, Pubkey};
use crate::settle::UsdTerms;
use escrow_math::usd::{self, PriceUpdate, UsdRule};
use solana_sdk::instruction::{AccountMeta, Instruction};

/// Pyth's SOL/USD feed id (the default of `list --usd-at-settle`).
pub use escrow_math::usd::SOL_USD_FEED;

/// A feed id from its 64 hex characters (`0x` allowed).
pub fn parse_feed_id(hex_id: &str) -> Option<[u8; 32]> {
    crate::crypto::hex32::parse(hex_id)
}

/// Why a price cannot be taken now.
#[derive(Debug, thiserror::Error)]
pub enum UsdPriceError {
    /// No account there.
    #[error("price account {0}: no such account on this cluster")]
    Missing(String),
    /// Not the Pyth receiver's.
    #[error("price account {account}: owned by {owner}, not by the Pyth receiver program (rec5EKMGg6MxZYaMdyBfgwp4d5rB9T1VQH5pJv5LtFJ)")]
    NotPyth {
        /// The account.
        account: String,
        /// Its owner.
        owner: String,
    },
    /// Not usable by the listing's rule.
    #[error("price account {account}: {why}")]
    Unusable {
        /// The account.
        account: String,
        /// The rule's refusal.
        why: usd::UsdError,
    },
    /// A malformed address.
    #[error("price account {0:?} is not a base58 address")]
    BadAddress(String),
    /// Not the push oracle's account of the feed.
    #[error("price account {account} is not Pyth's push-oracle account of the listing's feed ({expected}); refusing a price from an account the seller chose")]
    NotFeedAccount {
        /// The listing's account.
        account: String,
        /// The feed's.
        expected: String,
    },
    /// The listing takes prices less certain than a buyer's client does.
    #[error("the listing takes a price with a confidence interval up to {stated} bps; a buyer's client takes at most {MAX_CONF_BPS}")]
    ConfidenceTooWide {
        /// What the listing states.
        stated: u16,
    },
    /// Older than the public clusters' feeds ever are.
    #[error("the price is {age_secs} s old; on this cluster the feed publishes at least every 60 s, so a buyer takes at most {MAX_PUBLIC_AGE_SECS} s")]
    Stale {
        /// Its age.
        age_secs: i64,
    },
    /// A SOL price read from another feed than SOL/USD.
    #[error("the listing converts its USD to SOL at feed {0}, not Pyth's SOL/USD feed; refusing to pay at another asset's price")]
    NotSolFeed(String),
    /// RPC.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// The listing's USD now: what a buyer pays and its quote shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UsdQuoteNow {
    /// The price account read.
    pub price_account: String,
    /// Its feed (hex).
    #[serde(serialize_with = "crate::crypto::hex32::serialize")]
    pub feed_id: [u8; 32],
    /// The price (× 10^exponent USD per whole SOL or token).
    pub price: i64,
    /// Its confidence.
    pub conf: u64,
    /// Its exponent.
    pub exponent: i32,
    /// When it was published (unix seconds).
    pub publish_time: i64,
    /// Its age by the cluster's clock.
    pub age_secs: i64,
    /// The listing's micro-dollars.
    pub usd_micros: u64,
    /// Base units of the currency paid they come to at this price
    /// (lamports for SOL; rounded up).
    pub units: u64,
    /// Decimals of that currency (9: SOL).
    pub decimals: u8,
    /// The least the seller takes against the buy's own quote (bps below it).
    pub tolerance_bps: u16,
    /// The implied rate, shown before paying: USD per whole SOL or token
    /// (price × 10^exponent, as a decimal).
    pub usd_per_whole: String,
    /// Its confidence interval in USD (conf × 10^exponent).
    pub usd_conf: String,
}

/// `mantissa` × 10^`exponent` written out exactly (`15000000000`, -8 →
/// `150.00000000`).
pub fn decimal(mantissa: i128, exponent: i32) -> String {
    let sign = if mantissa < 0 { "-" } else { "" };
    let digits = mantissa.unsigned_abs().to_string();
    if exponent >= 0 {
        return format!("{sign}{digits}{}", "0".repeat(exponent as usize));
    }
    let places = exponent.unsigned_abs() as usize;
    let padded = format!("{digits:0>width$}", width = places + 1);
    let (whole, frac) = padded.split_at(padded.len() - places);
    format!("{sign}{whole}.{frac}")
}

/// Pyth's push-oracle program, which keeps each sponsored feed's
/// `PriceUpdateV2` account fresh on the public clusters.
pub const PUSH_ORACLE: Pubkey = solana_sdk::pubkey!("pythWSnswVUd12oZpeFP8e9CVaEqJg25g1Vtc2biRsT");

/// The push oracle's account of `feed_id` (shard 0): the one account a
/// buyer takes a price from. Any other receiver-owned `PriceUpdateV2`
/// (anyone may post one, of any past moment, into an account of their
/// own) could hold an old price the seller picked.
pub fn feed_account(feed_id: &[u8; 32]) -> Pubkey {
    Pubkey::find_program_address(&[&0u16.to_le_bytes(), feed_id], &PUSH_ORACLE).0
}

/// The widest confidence interval a buyer's client takes, whatever the
/// listing states (basis points of the price).
pub const MAX_CONF_BPS: u16 = 200;

/// The oldest price a buyer's client takes on a public cluster, whatever
/// the listing states: the sponsored feeds publish at least every 60 s
/// (their heartbeat), and a price lands within seconds of it. (On a local
/// validator nothing updates the account; the listing's own bound holds.)
pub const MAX_PUBLIC_AGE_SECS: i64 = 90;

/// Refuses terms a buyer must not pay by: a price account other than the
/// push oracle's for the feed ([`feed_account`]), a confidence bound over
/// [`MAX_CONF_BPS`], and a conversion to SOL at another feed than SOL/USD
/// (a listing could name any asset's feed, and so any price). (A token's
/// feed is the listing's to state; the quote shows it, and a spend policy
/// bounds what a buy in the token may take.)
pub fn check_feed(
    terms: &UsdTerms,
    currency: &crate::settle::Currency,
) -> Result<(), UsdPriceError> {
    if currency.is_sol() && terms.feed_id != SOL_USD_FEED {
        return Err(UsdPriceError::NotSolFeed(hex::encode(terms.feed_id)));
    }
    let expected = feed_account(&terms.feed_id);
    if terms.price_account != expected.to_string() {
        return Err(UsdPriceError::NotFeedAccount {
            account: terms.price_account.clone(),
            expected: expected.to_string(),
        });
    }
    if terms.max_conf_bps > MAX_CONF_BPS {
        return Err(UsdPriceError::ConfidenceTooWide {
            stated: terms.max_conf_bps,
        });
    }
    Ok(())
}

/// Reads the `PriceUpdateV2` at `account` (owner checked).
pub async fn read_price(chain: &Chain, account: &str) -> Result<PriceUpdate, UsdPriceError> {
    let address: Pubkey = account
        .parse()
        .map_err(|_| UsdPriceError::BadAddress(account.into()))?;
    let got = crate::chain::retry::with_retry("getAccountInfo", || async {
        chain
            .rpc()
            .get_account_with_commitment(&address, chain.commitment())
            .await
            .map(|r| r.value)
    })
    .await?
    .ok_or_else(|| UsdPriceError::Missing(account.into()))?;
    if got.owner.to_bytes() != usd::PYTH_RECEIVER {
        return Err(UsdPriceError::NotPyth {
            account: account.into(),
            owner: got.owner.to_string(),
        });
    }
    usd::parse_price_update(&got.data).map_err(|why| UsdPriceError::Unusable {
        account: account.into(),
        why,
    })
}

/// The listing's USD in base units of its currency now, by its rule at
/// the cluster's clock (SOL only at the SOL/USD feed: [`check_feed`]).
pub async fn quote_now(
    chain: &Chain,
    terms: &UsdTerms,
    currency: &crate::settle::Currency,
) -> Result<UsdQuoteNow, UsdPriceError> {
    check_feed(terms, currency)?;
    let update = read_price(chain, &terms.price_account).await?;
    let now = chain.cluster_time().await?;
    let age_secs = now - update.publish_time;
    if age_secs > MAX_PUBLIC_AGE_SECS
        && chain.cluster_kind().await? != crate::chain::ClusterKind::Local
    {
        return Err(UsdPriceError::Stale { age_secs });
    }
    let unusable = |why| UsdPriceError::Unusable {
        account: terms.price_account.clone(),
        why,
    };
    UsdRule {
        feed_id: terms.feed_id,
        max_age_secs: terms.max_age_secs,
        max_conf_bps: terms.max_conf_bps,
    }
    .check(&update, now)
    .map_err(unusable)?;
    let units = usd::usd_micros_to_units(
        terms.usd_micros,
        update.price,
        update.exponent,
        terms.decimals,
    )
    .map_err(unusable)?;
    Ok(UsdQuoteNow {
        price_account: terms.price_account.clone(),
        feed_id: update.feed_id,
        price: update.price,
        conf: update.conf,
        exponent: update.exponent,
        publish_time: update.publish_time,
        age_secs,
        usd_micros: terms.usd_micros,
        units,
        decimals: terms.decimals,
        tolerance_bps: terms.tolerance_bps,
        usd_per_whole: decimal(i128::from(update.price), update.exponent),
        usd_conf: decimal(i128::from(update.conf), update.exponent),
    })
}

/// The escrow program's `quote_usd` of `terms` (in its currency's
/// decimals), which a buy paying `paid` base units runs before its payment: its `max_units` is
/// the largest quote `paid` covers within the listing's tolerance, so a
/// price that moved further fails the buy instead of paying a refusal.
pub fn quote_instruction(terms: &UsdTerms, paid: u64) -> Result<Instruction, UsdPriceError> {
    let account: Pubkey = terms
        .price_account
        .parse()
        .map_err(|_| UsdPriceError::BadAddress(terms.price_account.clone()))?;
    let program: Pubkey = crate::escrow::PROGRAM_ID.parse().expect("the program id");
    let mut data = crate::chain::anchor::discriminator("global", "quote_usd").to_vec();
    data.extend_from_slice(&terms.feed_id);
    data.extend_from_slice(&terms.usd_micros.to_le_bytes());
    data.push(terms.decimals);
    data.extend_from_slice(&terms.max_age_secs.to_le_bytes());
    data.extend_from_slice(&terms.max_conf_bps.to_le_bytes());
    data.extend_from_slice(&usd::max_quote_paid_by(paid, terms.tolerance_bps).to_le_bytes());
    Ok(Instruction {
        program_id: program,
        // the price account, then `#[event_cpi]`'s two: the quote is an event
        accounts: vec![
            AccountMeta::new_readonly(account, false),
            AccountMeta::new_readonly(crate::escrow::event_authority_address(), false),
            AccountMeta::new_readonly(program, false),
        ],
        data,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_implied_rate_is_written_out_exactly() {
        assert_eq!(super::decimal(15_000_000_000, -8), "150.00000000");
        assert_eq!(super::decimal(5, -3), "0.005");
        assert_eq!(super::decimal(-123, -1), "-12.3");
        assert_eq!(super::decimal(42, 2), "4200");
    }

    use super::*;
    use crate::settle::Currency;

    fn terms(feed_id: [u8; 32]) -> UsdTerms {
        UsdTerms {
            price_account: feed_account(&feed_id).to_string(),
            feed_id,
            usd_micros: 1_000_000,
            max_age_secs: 60,
            max_conf_bps: 100,
            tolerance_bps: 100,
            decimals: 9,
        }
    }

    /// SOL is converted at SOL/USD only; a token's feed is its listing's.
    #[test]
    fn sol_is_priced_by_the_sol_usd_feed_only() {
        let other = [0x11; 32];
        assert!(check_feed(&terms(SOL_USD_FEED), &Currency::Sol).is_ok());
        assert!(matches!(
            check_feed(&terms(other), &Currency::Sol),
            Err(UsdPriceError::NotSolFeed(f)) if f == hex::encode(other)
        ));
        let token = Currency::Token {
            mint: "So11111111111111111111111111111111111111112".into(),
        };
        assert!(check_feed(&terms(other), &token).is_ok());
    }

    /// The push oracle's SOL/USD account is Pyth's sponsored SOL/USD
    /// feed account (where the localnet loads its price).
    #[test]
    fn the_sol_usd_feed_account_is_the_sponsored_one() {
        assert_eq!(
            feed_account(&SOL_USD_FEED),
            crate::chain::test_price::ADDRESS
        );
    }

    /// A price account the seller chose (any receiver-owned update, of
    /// any past moment) and a confidence bound wider than a buyer takes
    /// are refused before any read.
    #[test]
    fn a_seller_chosen_price_account_or_a_wide_confidence_is_refused() {
        let chosen = UsdTerms {
            price_account: "11111111111111111111111111111111".into(),
            ..terms(SOL_USD_FEED)
        };
        assert!(matches!(
            check_feed(&chosen, &Currency::Sol),
            Err(UsdPriceError::NotFeedAccount { expected, .. })
                if expected == crate::chain::test_price::ADDRESS.to_string()
        ));
        let wide = UsdTerms {
            max_conf_bps: MAX_CONF_BPS + 1,
            ..terms(SOL_USD_FEED)
        };
        assert!(matches!(
            check_feed(&wide, &Currency::Sol),
            Err(UsdPriceError::ConfidenceTooWide { stated: 201 })
        ));
        let at_cap = UsdTerms {
            max_conf_bps: MAX_CONF_BPS,
            ..terms(SOL_USD_FEED)
        };
        assert!(check_feed(&at_cap, &Currency::Sol).is_ok());
    }
}
