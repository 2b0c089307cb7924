//! The flood test on 127.0.0.1 (bounded in count and time), no chain:
//! the hinted records are served from memory in place of the RPC.

/// The flood test, small: honest clients all get 200s while attackers hint
/// old transactions and flood sign-in; the limits answer 429, the hints
/// that pass are folded in turns (fewer refolds than hints), and the
/// withheld records that were hinted end in the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_clients_are_served_through_a_flood_of_hints_and_challenges() {
    let r = indexer::loadtest::flood::flood(
        2_000,
        16,
        16,
        20,
        200,
        std::time::Duration::from_secs(60),
        indexer::api::RateLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(r.quiet.requests, 16 * 20);
    assert_eq!(r.flood.requests, 16 * 20);
    assert!(r.challenges.get(&429).copied().unwrap_or(0) > 0, "{r:?}");
    let accepted = r.hints.get(&200).copied().unwrap_or(0);
    assert!(accepted > 0, "{r:?}");
    assert!(r.refolds <= accepted, "{r:?}");
    assert!(r.late_folded > 0 && r.late_folded <= 2_000 / 50, "{r:?}");
    let unlimited = indexer::loadtest::flood::flood(
        2_000,
        8,
        8,
        20,
        100,
        std::time::Duration::from_secs(60),
        indexer::api::RateLimits::off(),
    )
    .await
    .unwrap();
    assert!(!unlimited.challenges.contains_key(&429), "{unlimited:?}");
    assert!(!unlimited.hints.contains_key(&429), "{unlimited:?}");
}
