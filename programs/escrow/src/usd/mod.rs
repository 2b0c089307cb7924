//! `quote_usd`: a listing priced in USD at settle time names a Pyth price
//! account, and the buy runs this instruction beside its payment. It reads
//! the account (owned by the Pyth receiver, a fully verified update of the
//! listing's feed, fresh and certain enough by the listing's rule at this
//! slot's clock), converts the listing's micro-dollars with
//! `escrow_math::usd`, and emits [`UsdQuoted`]: the conversion at the buy's
//! slot, in the buy's own logs, for `listen` and the indexer to check the
//! payment against (within the listing's tolerance). Moves nothing, writes
//! nothing: a buyer's transaction fails if the price cannot be taken.

use crate::error::EscrowError;
use crate::instructions::now;
use anchor_lang::prelude::*;
use escrow_math::usd::{self, UsdRule};

/// What the quote converts, as the listing states it.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsdQuoteArgs {
    /// The feed (e.g. SOL/USD's id).
    pub feed_id: [u8; 32],
    /// The listing's price in micro-dollars.
    pub usd_micros: u64,
    /// Decimals of the currency paid (9 for SOL).
    pub decimals: u8,
    /// Oldest price taken, in seconds.
    pub max_age_secs: u32,
    /// Widest confidence taken, in basis points of the price.
    pub max_conf_bps: u16,
    /// The most base units the buy's payment covers (its slippage bound):
    /// a larger quote fails the buy, so nothing is paid that would be
    /// refused.
    pub max_units: u64,
}

/// Accounts of `quote_usd`.
#[event_cpi]
#[derive(Accounts)]
pub struct QuoteUsd<'info> {
    /// CHECK: a Pyth `PriceUpdateV2` account: its owner (the Pyth
    /// receiver) and bytes are checked by the handler.
    pub price_update: UncheckedAccount<'info>,
}

/// The conversion a buy ran at its slot.
#[event]
pub struct UsdQuoted {
    /// The price account read.
    pub price_update: Pubkey,
    /// Its feed.
    pub feed_id: [u8; 32],
    /// Its price (× 10^exponent USD per whole unit).
    pub price: i64,
    /// Its confidence.
    pub conf: u64,
    /// Its exponent.
    pub exponent: i32,
    /// When it was published.
    pub publish_time: i64,
    /// The micro-dollars converted.
    pub usd_micros: u64,
    /// The currency's decimals.
    pub decimals: u8,
    /// The oldest price the quote took (the listing's rule).
    pub max_age_secs: u32,
    /// The widest confidence the quote took (the listing's rule).
    pub max_conf_bps: u16,
    /// Base units owed, rounded up.
    pub units: u64,
}

impl QuoteUsd<'_> {
    /// Reads, checks and converts; emits the quote and returns the units.
    pub fn handler(ctx: Context<QuoteUsd>, args: UsdQuoteArgs) -> Result<u64> {
        let account = &ctx.accounts.price_update;
        require_keys_eq!(
            *account.owner,
            Pubkey::new_from_array(usd::PYTH_RECEIVER),
            EscrowError::PriceNotPyth
        );
        let update = usd::parse_price_update(&account.try_borrow_data()?)
            .map_err(|_| error!(EscrowError::PriceNotPyth))?;
        let rule = UsdRule {
            feed_id: args.feed_id,
            max_age_secs: args.max_age_secs,
            max_conf_bps: args.max_conf_bps,
        };
        rule.check(&update, now()?).map_err(|e| match e {
            usd::UsdError::Stale { .. } => error!(EscrowError::PriceStale),
            usd::UsdError::Uncertain { .. } => error!(EscrowError::PriceUncertain),
            usd::UsdError::OtherFeed => error!(EscrowError::PriceOtherFeed),
            _ => error!(EscrowError::PriceUnusable),
        })?;
        let units = usd::usd_micros_to_units(
            args.usd_micros,
            update.price,
            update.exponent,
            args.decimals,
        )
        .map_err(|_| error!(EscrowError::PriceUnusable))?;
        require!(units <= args.max_units, EscrowError::PriceMoved);
        crate::sealed::events::emit(
            &ctx.accounts.event_authority,
            &UsdQuoted {
                price_update: account.key(),
                feed_id: update.feed_id,
                price: update.price,
                conf: update.conf,
                exponent: update.exponent,
                publish_time: update.publish_time,
                usd_micros: args.usd_micros,
                decimals: args.decimals,
                max_age_secs: args.max_age_secs,
                max_conf_bps: args.max_conf_bps,
                units,
            },
        )?;
        Ok(units)
    }
}
