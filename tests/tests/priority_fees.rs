//! Every transaction the node sends carries a compute-unit limit from its
//! simulation and a price that follows the cluster's recent fees for the
//! accounts it writes, stopped at the user's cap: against the real
//! validator (fees raised with paid transactions) and behind the fault
//! proxy (a congested cluster's answers).

use e2e::proxy::{Fault, FaultProxy};
use e2e::{runtime, validator};
use node::chain::instructions::{default_registry, discovery, memo, transfer};
use node::chain::priority::{PriorityPolicy, COMPUTE_BUDGET};
use node::chain::{Chain, Keypair, Signature, Signer};

/// The (limit, price) a landed transaction set, and the units it used.
fn budget_of(rt: &tokio::runtime::Runtime, chain: &Chain, sig: &Signature) -> (u32, u64, u64) {
    let tx = rt
        .block_on(chain.transaction_json(sig))
        .unwrap()
        .expect("landed");
    // jsonParsed: the compute budget program has no parser, so its
    // instructions keep their program id and base58 data
    let (mut limit, mut price) = (0u32, 0u64);
    for ix in tx["transaction"]["message"]["instructions"]
        .as_array()
        .unwrap()
    {
        if ix["programId"] != COMPUTE_BUDGET.to_string() {
            continue;
        }
        let data = bs58::decode(ix["data"].as_str().unwrap())
            .into_vec()
            .unwrap();
        match data[0] {
            2 => limit = u32::from_le_bytes(data[1..5].try_into().unwrap()),
            3 => price = u64::from_le_bytes(data[1..9].try_into().unwrap()),
            _ => {}
        }
    }
    let used = tx["meta"]["computeUnitsConsumed"].as_u64().unwrap();
    (limit, price, used)
}

/// A marketplace-shaped transaction (memo + discovery reference) writing
/// `to` (a transfer of 1 lamport), sent through `chain`.
fn send(rt: &tokio::runtime::Runtime, chain: &Chain, actor: &Keypair, to: &Keypair) -> Signature {
    let ixs = [
        transfer(&actor.pubkey(), &to.pubkey(), 1),
        memo(
            "brainctl-marketplace/v1:cancel:20261128-0123456789ab",
            &actor.pubkey(),
        ),
        discovery(&default_registry(), 200_000),
    ];
    rt.block_on(chain.send(&ixs, &[actor]))
        .expect("lands")
        .signature
}

#[test]
fn the_price_follows_the_clusters_recent_fees_and_stops_at_the_cap() {
    let v = validator();
    let rt = runtime();
    let (actor, hot) = (v.funded_keypair(2), v.funded_keypair(1));

    // a quiet cluster: the limit from the simulation (a little above what
    // it used, far under the 200,000 the discovery reference asked), no price
    let chain = v.chain();
    let (limit, price, used) = budget_of(&rt, &chain, &send(&rt, &chain, &actor, &hot));
    assert!(
        used < u64::from(limit) && u64::from(limit) < 200_000,
        "limit {limit}, used {used}"
    );
    assert_eq!(
        limit,
        node::chain::priority::limit_for(used),
        "15% and 1,000 units of margin"
    );
    assert_eq!(price, 0, "nobody pays for these accounts");

    // fees raised with paid transactions writing the same account, one a
    // slot: the node's next price is what they paid (the highest recent
    // fee: percentile 100), read from the validator itself
    let payer = v.funded_keypair(2);
    for _ in 0..8 {
        let ixs = [
            node::chain::priority::set_price(7_777),
            transfer(&payer.pubkey(), &hot.pubkey(), 1),
        ];
        rt.block_on(chain.send_skip_preflight(&ixs, &[&payer]))
            .unwrap();
    }
    let following = v.chain().with_priority(PriorityPolicy {
        percentile: 100,
        window_slots: 150,
        ..Default::default()
    });
    let recent = rt.block_on(following.recent_fees(&[hot.pubkey()])).unwrap();
    // the validator reports the fee those transactions paid per unit of
    // their (default) limit: about what they set
    let highest = recent.iter().map(|(_, f)| *f).max().unwrap_or(0);
    assert!((7_777..8_000).contains(&highest), "{recent:?}");
    let (_, price, _) = budget_of(&rt, &following, &send(&rt, &following, &actor, &hot));
    assert_eq!(price, highest, "the price follows the recent fees");

    // a congested cluster (the proxy answers every slot at 50,000): the
    // default policy pays it; then a cap of 1 lamport stops it
    let proxy = FaultProxy::start(&v.rpc_url);
    proxy.set(Fault::PriorityFees(50_000));
    let congested = proxy.chain();
    let (limit, price, _) = budget_of(&rt, &congested, &send(&rt, &congested, &actor, &hot));
    assert_eq!(price, 50_000, "limit {limit}");
    let capped = proxy.chain().with_priority(PriorityPolicy {
        max_lamports: 1,
        ..Default::default()
    });
    let (limit, price, _) = budget_of(&rt, &capped, &send(&rt, &capped, &actor, &hot));
    assert_eq!(
        price,
        1_000_000 / u64::from(limit),
        "at the cap: 1 lamport in all"
    );
    assert!(price * u64::from(limit) <= 1_000_000);
    // a fixed price is taken as given, under the same cap
    let fixed = proxy.chain().with_priority(PriorityPolicy {
        fixed_micro_lamports: Some(3),
        ..Default::default()
    });
    let (_, price, _) = budget_of(&rt, &fixed, &send(&rt, &fixed, &actor, &hot));
    assert_eq!(price, 3);
}
