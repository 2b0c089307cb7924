//! The Light compressed-token builders on a real validator loaded with the
//! Light programs and tree accounts (npm `@lightprotocol/zk-compression-cli`
//! 0.28.3, installed by `localnet/install`): create an SPL mint with its
//! token pool, then `mint_to` one compressed token to a recipient. The
//! pool then holds the 1 SPL unit backing the compressed token, and the
//! recipient's compressed account decodes from the transaction alone.

use node::chain::{Keypair, Signer};
use node::mint::light::{self, LOCALNET_STATE_TREE};
use node::mint::token2022::{read_mint, MintState, NftSpec};
use solana_sdk::instruction::Instruction;

/// Held by each test of this binary for its whole run: they share one
/// validator and its output queues, which one of them fills by sending to
/// them directly (what the room accounting of this process does not see)
/// while the others' sends go through it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// An SPL mint (authority `payer`) with its compressed-token pool.
fn pool_mint(rt: &tokio::runtime::Runtime, chain: &node::chain::Chain, payer: &Keypair) -> Keypair {
    let mint = Keypair::new();
    let rent = rt
        .block_on(
            chain
                .rpc()
                .get_minimum_balance_for_rent_exemption(light::MINT_LEN as usize),
        )
        .unwrap();
    let create = light::create_mint(
        &payer.pubkey(),
        &mint.pubkey(),
        &payer.pubkey(),
        rent,
        false,
    );
    rt.block_on(chain.send(&create, &[payer, &mint])).unwrap();
    mint
}

#[test]
fn compressed_mint_to_a_recipient_on_the_validator() {
    let _queue = one_at_a_time();
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let payer = v.funded_keypair(2);
    let mint = pool_mint(&rt, &chain, &payer);
    let recipient = Keypair::new().pubkey();
    let pool = light::token_pool(&mint.pubkey());
    let pool_acc = rt.block_on(chain.rpc().get_account(&pool)).unwrap();
    assert_eq!(pool_acc.owner, light::SPL_TOKEN, "token pool registered");

    let mut limit = vec![2u8];
    limit.extend_from_slice(&1_000_000u32.to_le_bytes());
    let budget = Instruction {
        program_id: solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111"),
        accounts: vec![],
        data: limit,
    };
    let mint_to = light::mint_to(
        &payer.pubkey(),
        &payer.pubkey(),
        &mint.pubkey(),
        &recipient,
        1,
        &LOCALNET_STATE_TREE,
        false,
    );
    // to the first queue with room (the default one unless it is full)
    let sent = rt
        .block_on(light::send_to_open_tree(
            &chain,
            &[budget, mint_to],
            &[&payer],
            1,
        ))
        .unwrap();
    // the pool holds the SPL unit that backs the compressed token
    let pool_acc = rt.block_on(chain.rpc().get_account(&pool)).unwrap();
    let amount = u64::from_le_bytes(pool_acc.data[64..72].try_into().unwrap());
    assert_eq!(amount, 1);
    // the transaction ran the compressed-token program and succeeded
    let tx = rt
        .block_on(chain.transaction(&sent.signature))
        .unwrap()
        .unwrap();
    assert!(tx.succeeded);
    // the recipient's compressed account, decoded from the instruction the
    // compressed-token program sent the Light system program
    let outputs = rt
        .block_on(light::minted_outputs(&chain, &sent.signature))
        .unwrap();
    assert_eq!(
        outputs,
        vec![light::TokenOutput {
            mint: mint.pubkey(),
            owner: recipient,
            amount: 1,
            delegate: None,
        }]
    );
}

#[test]
fn one_transaction_compressed_mint_carries_its_uri_is_once_only_and_capped() {
    let _queue = one_at_a_time();
    let v = e2e::validator();
    let rt = e2e::runtime();
    let chain = v.chain();
    let payer = node::wallet::Wallet::generate();
    v.fund(&payer.solana_keypair().pubkey(), 2);
    let recipient = Keypair::new().pubkey();
    let spec = NftSpec {
        name: "brainctl bundle 1a2b".into(),
        symbol: "BRAIN".into(),
        uri: "ar://Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr".into(),
    };
    let minted = rt
        .block_on(light::mint_compressed(
            &chain,
            &payer,
            "bundle-seed-1",
            &recipient,
            1,
            &spec,
            vec![],
        ))
        .unwrap();
    assert_eq!(
        minted.mint,
        light::mint_keypair(&payer, "bundle-seed-1").pubkey()
    );
    // a Token-2022 mint carrying its own metadata: the URI is on chain,
    // supply 1 (in the pool), 0 decimals, authority revoked
    let state = rt.block_on(read_mint(&chain, &minted.mint)).unwrap();
    assert_eq!(
        state,
        MintState {
            supply: 1,
            decimals: 0,
            mint_authority: None,
            metadata_address: Some(minted.mint),
            uri: spec.uri.clone(),
            name: spec.name.clone(),
        }
    );
    let outputs = rt
        .block_on(light::minted_outputs(&chain, &minted.sent.signature))
        .unwrap();
    assert_eq!(
        outputs,
        vec![light::TokenOutput {
            mint: minted.mint,
            owner: recipient,
            amount: 1,
            delegate: None,
        }],
        "the recipient holds exactly 1"
    );
    // the old authority cannot mint more compressed tokens
    let more = light::mint_to(
        &payer.solana_keypair().pubkey(),
        &payer.solana_keypair().pubkey(),
        &minted.mint,
        &recipient,
        1,
        &LOCALNET_STATE_TREE,
        true,
    );
    let kp = payer.solana_keypair();
    assert!(
        rt.block_on(light::send_to_open_tree(&chain, &[more], &[&kp], 1))
            .is_err(),
        "supply can't grow"
    );
    // the same seed again: the mint exists, the transaction fails, nothing more is minted
    assert!(rt
        .block_on(light::mint_compressed(
            &chain,
            &payer,
            "bundle-seed-1",
            &recipient,
            1,
            &spec,
            vec![]
        ))
        .is_err());
    assert_eq!(
        rt.block_on(read_mint(&chain, &minted.mint)).unwrap().supply,
        1
    );
}

/// The room a batched output queue has left, read from its account.
fn room(
    rt: &tokio::runtime::Runtime,
    chain: &node::chain::Chain,
    queue: &node::chain::Pubkey,
) -> u64 {
    let account = rt.block_on(chain.rpc().get_account(queue)).unwrap();
    node::mint::output_room::room_in(&account.data).expect("a batched output queue")
}

/// No forester runs on the localnet, so each batched output queue takes
/// 100 outputs and then refuses more: a burst of releases' mints (what
/// `listen` sends, all at once) larger than the first queue's room moves
/// on to the next queue as the room runs out, with no send refused (before,
/// every mint in flight when the queue filled failed, paid its fee, and
/// was sent again one or two slots later). Once all five are full, a mint
/// lands on a V1 state tree, which appends on chain, and its output decodes
/// as before. Before that, a localnet stopped releasing after 500
/// compressed mints.
#[test]
fn mints_go_on_to_a_v1_tree_once_every_batched_queue_is_full() {
    let _queue = one_at_a_time();
    let v = e2e::validator();
    let rt = e2e::multi_thread_runtime();
    let chain = v.chain();
    let payer = v.funded_keypair(20);
    let (first, second) = (
        &light::LOCALNET_OUTPUT_TREES[0],
        &light::LOCALNET_OUTPUT_TREES[1],
    );
    assert_eq!(
        room(&rt, &chain, second),
        100,
        "nothing sent to {second} yet"
    );
    let seller = node::wallet::Wallet::generate();
    let seller_key = seller.solana_keypair().pubkey();
    v.fund(&seller_key, 20);
    let burst = room(&rt, &chain, first) + 20;
    let spec = NftSpec {
        name: "burst".into(),
        symbol: "BRAIN".into(),
        uri: "ar://burst".into(),
    };
    let mints = (0..burst).map(|i| {
        let (chain, seller, spec) = (&chain, &seller, &spec);
        async move {
            let to = Keypair::new().pubkey();
            light::send_compressed_mint(chain, seller, &format!("burst-{i}"), &to, 1, spec, vec![])
                .await
                .expect("a mint of the burst")
        }
    });
    rt.block_on(futures_util::future::join_all(mints));
    let history = rt
        .block_on(chain.signatures_for(&seller_key, None))
        .unwrap();
    let failed: Vec<_> = history.iter().filter(|s| s.err.is_some()).collect();
    assert!(failed.is_empty(), "sends refused in the burst: {failed:?}");
    assert_eq!(
        history.len() as u64,
        burst + 1,
        "its funding, then one send per mint"
    );
    assert_eq!(room(&rt, &chain, first), 0, "{first} filled");
    assert_eq!(
        room(&rt, &chain, second),
        80,
        "the burst's last 20 went on to {second}"
    );
    let mint = pool_mint(&rt, &chain, &payer);
    let budget = {
        let mut limit = vec![2u8];
        limit.extend_from_slice(&1_400_000u32.to_le_bytes());
        Instruction {
            program_id: solana_sdk::pubkey!("ComputeBudget111111111111111111111111111111"),
            accounts: vec![],
            data: limit,
        }
    };
    let batched = &light::LOCALNET_OUTPUT_TREES[..5];
    // what each queue still took: none after the burst, the second the
    // 80 the burst left, the three others all 100
    for (queue, room_left) in batched.iter().zip([0, 80, 100, 100, 100]) {
        // ten outputs a transaction while they fit, then one at a time
        let mut filled = 0;
        for per_tx in [10, 1] {
            loop {
                let recipients: Vec<_> =
                    (0..per_tx).map(|_| (Keypair::new().pubkey(), 1)).collect();
                let ix = light::mint_to_many(
                    &payer.pubkey(),
                    &payer.pubkey(),
                    &mint.pubkey(),
                    &recipients,
                    queue,
                    false,
                );
                match rt.block_on(chain.send(&[budget.clone(), ix], &[&payer])) {
                    Ok(_) => filled += recipients.len(),
                    Err(e) => {
                        assert!(
                            e.to_string().contains("0x37dd"),
                            "{queue}: refused for another reason than a full queue: {e}"
                        );
                        break;
                    }
                }
                assert!(filled <= 100, "{queue} took more than 100 outputs");
            }
        }
        assert_eq!(filled, room_left, "{queue} took what its room said");
        assert_eq!(room(&rt, &chain, queue), 0, "{queue} is full");
    }
    let v1_tree = light::LOCALNET_OUTPUT_TREES[5];
    let tree_before = rt.block_on(chain.rpc().get_account(&v1_tree)).unwrap();
    let seller = node::wallet::Wallet::generate();
    v.fund(&seller.solana_keypair().pubkey(), 2);
    let recipient = Keypair::new().pubkey();
    let spec = NftSpec {
        name: "after the queues".into(),
        symbol: "BRAIN".into(),
        uri: "ar://v1-tree".into(),
    };
    let minted = rt
        .block_on(light::mint_compressed(
            &chain,
            &seller,
            "v1-tree",
            &recipient,
            1,
            &spec,
            Vec::new(),
        ))
        .expect("a mint after every batched queue is full");
    let outputs = rt
        .block_on(light::minted_outputs(&chain, &minted.sent.signature))
        .unwrap();
    assert_eq!(
        outputs,
        vec![light::TokenOutput {
            mint: minted.mint,
            owner: recipient,
            amount: 1,
            delegate: None,
        }]
    );
    // the leaf was appended to the first V1 tree
    let raw: serde_json::Value = rt
        .block_on(chain.rpc().send(
            solana_rpc_client_api::request::RpcRequest::GetTransaction,
            serde_json::json!([minted.sent.signature.to_string(), {
                "encoding": "json", "commitment": "confirmed",
                "maxSupportedTransactionVersion": 0
            }]),
        ))
        .unwrap();
    let keys = raw["transaction"]["message"]["accountKeys"].to_string();
    assert!(
        keys.contains(&v1_tree.to_string()),
        "{v1_tree} not in {keys}"
    );
    let tree_after = rt.block_on(chain.rpc().get_account(&v1_tree)).unwrap();
    assert!(
        tree_before.data != tree_after.data,
        "{v1_tree} did not change"
    );
}
