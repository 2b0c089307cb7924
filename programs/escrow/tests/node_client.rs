//! The node's escrow client (`node::escrow`: builders and event decoder)
//! against the program in `solana-program-test`: a listing, a deposit
//! and a release built by the node; the decoder against the program's
//! own event encoding.

use anchor_lang::{AccountDeserialize, Event, InstructionData, ToAccountMetas};
use base64::Engine;
use node::escrow::{self as client, EscrowEvent, EscrowListing};
mod common;

use solana_program_test::ProgramTest;
use solana_sdk::account::Account;
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signature::{Keypair, Signer};
const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
use solana_sdk::transaction::Transaction;

#[tokio::test]
async fn node_builders_drive_the_program_and_decode_its_events() {
    assert_eq!(client::program_id(), escrow::ID);
    let mut pt = ProgramTest::default();
    let [seller, buyer, treasury, admin] = std::array::from_fn(|_| Keypair::new());
    for k in [&seller, &buyer, &treasury, &admin] {
        pt.add_account(k.pubkey(), Account::new(10_000_000_000, 0, &SYSTEM));
    }
    common::add_program_data(&mut pt, Some(&admin.pubkey()));
    let ctx = common::start(pt).await;
    let payer = ctx.payer.insecure_clone();
    // the node's builder is byte-identical with Anchor's own client types
    let config = client::NewConfig {
        treasury: treasury.pubkey(),
        fee_bps: 100,
        slash_bps: 1_000,
        release_window_secs: 60,
        min_stake: 0,
    };
    let init = client::initialize_config(&admin.pubkey(), &config);
    let anchors = Instruction {
        program_id: escrow::ID,
        accounts: escrow::accounts::InitializeConfig {
            config: client::config_address(),
            admin: admin.pubkey(),
            program_data: client::program_data_address(),
            system_program: SYSTEM,
        }
        .to_account_metas(None),
        data: escrow::instruction::InitializeConfig {
            treasury: treasury.pubkey(),
            fee_bps: 100,
            slash_bps: 1_000,
            release_window_secs: 60,
            min_stake: 0,
        }
        .data(),
    };
    assert_eq!(init, anchors);
    assert_eq!(
        client::program_data_address(),
        common::program_data_address()
    );
    let id = "20261123-abcdefabcdef";
    let listing = client::listing_address(&seller.pubkey(), id);
    let steps: Vec<(Instruction, &Keypair)> = vec![
        (init, &admin),
        (
            client::create_listing(
                &seller.pubkey(),
                &EscrowListing {
                    listing_id: id,
                    bundle_hash: [4; 32],
                    price_lamports: 1_000_000,
                    stake: 0,
                    expires_at: i64::MAX,
                },
            ),
            &seller,
        ),
        (client::deposit(&listing, &buyer.pubkey(), &[5; 32]), &buyer),
        (
            client::release(
                &listing,
                &buyer.pubkey(),
                &seller.pubkey(),
                &treasury.pubkey(),
                "envelope-1",
                &[4; 32],
            ),
            &seller,
        ),
    ];
    for (ix, signer) in steps {
        let tx = Transaction::new_signed_with_payer(
            &[ix],
            Some(&payer.pubkey()),
            &[&payer, signer],
            ctx.last_blockhash,
        );
        let res = ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await
            .unwrap();
        res.result.unwrap();
    }
    let escrow_key = client::escrow_address(&listing, &buyer.pubkey());
    let acc = ctx
        .banks_client
        .get_account(escrow_key)
        .await
        .unwrap()
        .unwrap();
    let e = escrow::state::Escrow::try_deserialize(&mut acc.data.as_slice()).unwrap();
    assert_eq!(
        (e.status, e.envelope_id.as_str(), e.amount, e.buyer),
        (
            escrow::state::EscrowStatus::Released,
            "envelope-1",
            1_000_000,
            buyer.pubkey()
        )
    );
    assert_eq!(
        ctx.banks_client
            .get_balance(treasury.pubkey())
            .await
            .unwrap(),
        10_000_000_000 + 10_000,
        "1% fee"
    );
    // Anchor 1.2.2 drops `emit!` off-chain (sol_log_data is a no-op on
    // native targets), so the decoder is checked against the program's own
    // event encoding, exactly as it appears after `Program data: `.
    let line = |data: Vec<u8>| {
        format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(data)
        )
    };
    let deposited = escrow::events::Deposited {
        listing,
        escrow: escrow_key,
        buyer: buyer.pubkey(),
        amount: 1_000_000,
    };
    let released = escrow::events::Released {
        escrow: escrow_key,
        envelope_id: "envelope-1".into(),
        to_seller: 990_000,
        fee: 10_000,
    };
    let refunded = escrow::events::Refunded {
        escrow: escrow_key,
        amount: 5,
    };
    let slashed = escrow::events::Slashed {
        escrow: escrow_key,
        amount: 6,
    };
    assert_eq!(
        client::decode_event(&line(deposited.data())),
        Some(EscrowEvent::Deposited {
            listing,
            escrow: escrow_key,
            buyer: buyer.pubkey(),
            amount: 1_000_000
        })
    );
    assert_eq!(
        client::decode_event(&line(released.data())),
        Some(EscrowEvent::Released {
            escrow: escrow_key,
            envelope_id: "envelope-1".into(),
            to_seller: 990_000,
            fee: 10_000
        })
    );
    assert_eq!(
        client::decode_event(&line(refunded.data())),
        Some(EscrowEvent::Refunded {
            escrow: escrow_key,
            amount: 5
        })
    );
    assert_eq!(
        client::decode_event(&line(slashed.data())),
        Some(EscrowEvent::Slashed {
            escrow: escrow_key,
            amount: 6
        })
    );
}

/// The node quotes a deposit's rent from its own copy of the account size.
#[test]
fn the_node_knows_the_escrow_account_size() {
    assert_eq!(
        client::ESCROW_ACCOUNT_SPACE,
        8 + <escrow::state::Escrow as anchor_lang::Space>::INIT_SPACE
    );
}
