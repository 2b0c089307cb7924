//! `listen` finds escrow deposits in the program's state, not in memos
//! (issue 15): on a real validator holding escrow-program accounts (loaded
//! at genesis: the program itself is not deployable on this validator),
//! `held_deposits` returns exactly the listing's `Deposited` escrows
//! through the node's own `getProgramAccounts` filters.

use base64::Engine;
use e2e::runtime;
use node::chain::Pubkey;
use node::escrow::{discriminator, escrow_address, listing_address, program_id};
use node::listen::deposits::held_deposits;

/// An `Escrow` account's bytes as the program writes them (191 bytes).
fn escrow_bytes(listing: &Pubkey, buyer: &Pubkey, x25519: [u8; 32], status: u8) -> Vec<u8> {
    let mut d = discriminator("account", "Escrow").to_vec();
    d.extend_from_slice(listing.as_ref());
    d.extend_from_slice(buyer.as_ref());
    d.extend_from_slice(&x25519);
    d.extend_from_slice(&250_000_000u64.to_le_bytes());
    d.extend_from_slice(&1_700_000_000i64.to_le_bytes());
    d.push(status);
    let envelope = if status == 1 {
        "e".repeat(43)
    } else {
        String::new()
    };
    d.extend_from_slice(&(envelope.len() as u32).to_le_bytes());
    d.extend_from_slice(envelope.as_bytes());
    d.resize(8 + 32 * 3 + 8 * 2 + 1 + 4 + 64 + 1, 0);
    d.push(254); // bump
    d
}

fn account_file(dir: &std::path::Path, address: &Pubkey, owner: &Pubkey, data: &[u8]) {
    let v = serde_json::json!({
        "pubkey": address.to_string(),
        "account": {
            "lamports": 2_000_000,
            "data": [base64::engine::general_purpose::STANDARD.encode(data), "base64"],
            "owner": owner.to_string(),
            "executable": false,
            "rentEpoch": 0,
            "space": data.len(),
        }
    });
    std::fs::write(
        dir.join(format!("{address}.json")),
        serde_json::to_vec(&v).unwrap(),
    )
    .unwrap();
}

#[test]
fn held_deposits_are_read_from_the_programs_state_on_a_validator() {
    let seller = Pubkey::new_unique();
    let listing = listing_address(&seller, "20261123-e5c0000000d4");
    let other_listing = listing_address(&seller, "20261123-e5c0000000d5");
    let buyers: Vec<Pubkey> = (0..4).map(|_| Pubkey::new_unique()).collect();
    let dir = tempfile::tempdir().unwrap();
    let program = program_id();
    // two held, one released, one held on another listing, one held
    // escrow's bytes at an address that is not its PDA
    let rows = [
        (
            escrow_address(&listing, &buyers[0]),
            &listing,
            0,
            [1; 32],
            0u8,
        ),
        (
            escrow_address(&listing, &buyers[1]),
            &listing,
            1,
            [2; 32],
            0,
        ),
        (
            escrow_address(&listing, &buyers[2]),
            &listing,
            2,
            [3; 32],
            1,
        ),
        (
            escrow_address(&other_listing, &buyers[3]),
            &other_listing,
            3,
            [4; 32],
            0,
        ),
        (Pubkey::new_unique(), &listing, 3, [5; 32], 0),
    ];
    for (at, l, b, key, status) in rows {
        account_file(
            dir.path(),
            &at,
            &program,
            &escrow_bytes(l, &buyers[b], key, status),
        );
    }
    let v = e2e::start(&[
        "--account-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ]);
    let held = runtime()
        .block_on(held_deposits(&v.chain(), &listing))
        .unwrap();
    let got: Vec<(Pubkey, Pubkey, [u8; 32])> = held
        .iter()
        .map(|h| (h.escrow, h.account.buyer, h.account.buyer_x25519))
        .collect();
    let mut want = vec![
        (escrow_address(&listing, &buyers[0]), buyers[0], [1; 32]),
        (escrow_address(&listing, &buyers[1]), buyers[1], [2; 32]),
    ];
    want.sort_by_key(|w| w.0);
    let mut got_sorted = got.clone();
    got_sorted.sort_by_key(|g| g.0);
    assert_eq!(got_sorted, want);
    let none = runtime()
        .block_on(held_deposits(&v.chain(), &Pubkey::new_unique()))
        .unwrap();
    assert!(none.is_empty());
}
