//! `quote_usd` in `solana-program-test`, natively or as its SBF build
//! (`BRAINCTL_ESCROW_SO`): a fresh, certain, fully verified price of the
//! listing's feed converts the listing's micro-dollars at the slot's clock
//! and logs the quote (`UsdQuoted`); every other price account is refused
//! with its reason: another owner than the Pyth receiver, bytes that are
//! no `PriceUpdateV2`, a stale price, a wide confidence, another feed, a
//! partially verified update.

use anchor_lang::{AnchorDeserialize, Discriminator, InstructionData, ToAccountMetas};
use escrow::error::EscrowError;
use escrow::{UsdQuoteArgs, UsdQuoted};
use escrow_math::usd::{price_update_bytes, PriceUpdate, PYTH_RECEIVER};
use solana_program_test::{BanksClientError, ProgramTest, ProgramTestContext};
use solana_sdk::account::{Account, AccountSharedData};
use solana_sdk::clock::Clock;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::Signer;
use solana_sdk::transaction::Transaction;
mod common;
use common::{code, custom};

const SOL_USD: [u8; 32] = [0xef; 32];

fn args() -> UsdQuoteArgs {
    UsdQuoteArgs {
        feed_id: SOL_USD,
        usd_micros: 15_000_000,
        decimals: 9,
        max_age_secs: 60,
        max_conf_bps: 100,
        max_units: u64::MAX,
    }
}

fn update(publish_time: i64) -> PriceUpdate {
    PriceUpdate {
        fully_verified: true,
        feed_id: SOL_USD,
        // 150.00000000 USD per SOL, ± 0.5 USD
        price: 15_000_000_000,
        conf: 50_000_000,
        exponent: -8,
        publish_time,
        posted_slot: 1,
    }
}

/// Puts a price account with `data` owned by `owner` at a new address.
fn put(ctx: &mut ProgramTestContext, owner: Pubkey, data: Vec<u8>) -> Pubkey {
    let address = Pubkey::new_unique();
    ctx.set_account(
        &address,
        &AccountSharedData::from(Account {
            lamports: 10_000_000,
            data,
            owner,
            executable: false,
            rent_epoch: 0,
        }),
    );
    address
}

/// Runs `quote_usd` on `price_update`: the quote it emitted (its self-CPI,
/// read from a simulation's inner instructions; `None` where the runtime
/// recorded none, which the SBF build must), or the error.
async fn quote(
    ctx: &mut ProgramTestContext,
    price_update: Pubkey,
    args: UsdQuoteArgs,
) -> Result<Option<UsdQuoted>, BanksClientError> {
    let ix = Instruction {
        program_id: escrow::ID,
        accounts: escrow::accounts::QuoteUsd {
            price_update,
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        }
        .to_account_metas(None),
        data: escrow::instruction::QuoteUsd { args }.data(),
    };
    let blockhash = ctx.banks_client.get_latest_blockhash().await.unwrap();
    let tx = Transaction::new_signed_with_payer(
        &[ix],
        Some(&ctx.payer.pubkey()),
        &[&ctx.payer],
        blockhash,
    );
    let keys = tx.message.account_keys.clone();
    let simulated = ctx.banks_client.simulate_transaction(tx.clone()).await?;
    let inner = simulated
        .simulation_details
        .and_then(|d| d.inner_instructions)
        .unwrap_or_default();
    let logged = inner.iter().flatten().find_map(|i| {
        let ix = &i.instruction;
        if keys[ix.program_id_index as usize] != escrow::ID {
            return None;
        }
        let bytes = ix.data.strip_prefix(anchor_lang::event::EVENT_IX_TAG_LE)?;
        assert_eq!(&bytes[..8], UsdQuoted::DISCRIMINATOR);
        Some(UsdQuoted::try_from_slice(&bytes[8..]).unwrap())
    });
    let done = ctx
        .banks_client
        .process_transaction_with_metadata(tx)
        .await?;
    done.result.map_err(BanksClientError::TransactionError)?;
    let meta = done.metadata.expect("metadata");
    if common::sbf_program().is_some() {
        // what a buy's quote costs in compute (the buy's budget holds it)
        println!("quote_usd: {} compute units", meta.compute_units_consumed);
        assert!(
            meta.compute_units_consumed < 20_000,
            "{}",
            meta.compute_units_consumed
        );
        let q = logged.as_ref().expect("the SBF build emits the quote");
        // and returns the units
        let returned = meta.return_data.expect("quote_usd returns the units");
        assert_eq!(returned.program_id, escrow::ID);
        assert_eq!(returned.data, q.units.to_le_bytes());
    }
    Ok(logged)
}

#[tokio::test]
async fn a_fresh_verified_price_converts_at_the_slot_and_others_are_refused() {
    let mut ctx = common::start(ProgramTest::default()).await;
    let now = ctx
        .banks_client
        .get_sysvar::<Clock>()
        .await
        .unwrap()
        .unix_timestamp;
    let pyth = Pubkey::new_from_array(PYTH_RECEIVER);
    let bytes = |u: &PriceUpdate| price_update_bytes(&[7; 32], u).to_vec();

    let fresh = put(&mut ctx, pyth, bytes(&update(now - 5)));
    let q = quote(&mut ctx, fresh, args()).await.unwrap();
    if let Some(q) = q {
        assert_eq!(q.units, 100_000_000, "15 USD at 150 USD/SOL: 0.1 SOL");
        assert_eq!(
            (
                q.price_update,
                q.feed_id,
                q.price,
                q.exponent,
                q.usd_micros,
                q.decimals
            ),
            (fresh, SOL_USD, 15_000_000_000, -8, 15_000_000, 9)
        );
        assert_eq!(q.publish_time, now - 5);
        assert_eq!(
            (q.max_age_secs, q.max_conf_bps),
            (60, 100),
            "the rule applied"
        );
    }
    // 1 USD rounds up to the seller's side
    let one = UsdQuoteArgs {
        usd_micros: 1_000_000,
        ..args()
    };
    if let Some(q) = quote(&mut ctx, fresh, one).await.unwrap() {
        assert_eq!(q.units, 6_666_667);
    }

    // a quote above what the buy pays fails the buy
    let bounded = UsdQuoteArgs {
        max_units: 99_999_999,
        ..args()
    };
    assert_eq!(
        custom(
            quote(&mut ctx, fresh, bounded)
                .await
                .map(|q| q.map(|q| q.units))
        ),
        code(EscrowError::PriceMoved)
    );
    let exact = UsdQuoteArgs {
        max_units: 100_000_000,
        ..args()
    };
    assert!(quote(&mut ctx, fresh, exact).await.is_ok());

    let refused = [
        (
            put(&mut ctx, Pubkey::new_unique(), bytes(&update(now))),
            EscrowError::PriceNotPyth,
            "another owner",
        ),
        (
            put(&mut ctx, pyth, vec![0; 134]),
            EscrowError::PriceNotPyth,
            "not a PriceUpdateV2",
        ),
        (
            put(&mut ctx, pyth, bytes(&update(now - 3_600))),
            EscrowError::PriceStale,
            "an hour old",
        ),
        (
            put(
                &mut ctx,
                pyth,
                bytes(&PriceUpdate {
                    conf: 300_000_000,
                    ..update(now)
                }),
            ),
            EscrowError::PriceUncertain,
            "± 2%",
        ),
        (
            put(
                &mut ctx,
                pyth,
                bytes(&PriceUpdate {
                    feed_id: [1; 32],
                    ..update(now)
                }),
            ),
            EscrowError::PriceOtherFeed,
            "another feed",
        ),
        (
            put(
                &mut ctx,
                pyth,
                bytes(&PriceUpdate {
                    fully_verified: false,
                    ..update(now)
                }),
            ),
            EscrowError::PriceUnusable,
            "partially verified",
        ),
        (
            put(
                &mut ctx,
                pyth,
                bytes(&PriceUpdate {
                    price: -1,
                    ..update(now)
                }),
            ),
            EscrowError::PriceUnusable,
            "negative",
        ),
    ];
    for (account, want, why) in refused {
        assert_eq!(
            custom(
                quote(&mut ctx, account, args())
                    .await
                    .map(|q| q.map(|q| q.units))
            ),
            code(want),
            "{why}"
        );
    }
}
