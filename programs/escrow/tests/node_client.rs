//! The node's escrow client (`node::escrow`) against the program's own
//! types, with no chain needed: every builder is byte-identical with the
//! instruction Anchor's client types build (accounts in order with their
//! flags, discriminator, Borsh arguments); every account decoder reads
//! what Anchor serializes for the program's accounts; the event decoder
//! reads every event as the program emits it; the node's addresses, sizes
//! and offsets are the program's.

use anchor_lang::{AccountSerialize, Event, InstructionData, Space, ToAccountMetas};
use escrow::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
use escrow::sealed::events as ev;
use escrow::sealed::state::{
    SealedEscrow, SealedEscrowStatus, SealedListing, SealedListingStatus, SealedTerms, Settings,
};
use escrow::sealed::{FraudProof, LeafFields, LinkFraud, SettingsArgs, StepFraud};
use node::escrow::{self as client, EscrowEvent};
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;

const SYSTEM: Pubkey = solana_sdk::pubkey!("11111111111111111111111111111111");
const UPGRADEABLE_LOADER: Pubkey =
    solana_sdk::pubkey!("BPFLoaderUpgradeab1e11111111111111111111111");
const ID: &str = "20261123-abcdefabcdef";

fn k() -> Pubkey {
    Pubkey::new_unique()
}

fn pda(seeds: &[&[u8]], program: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(seeds, program).0
}

/// The instruction Anchor's own client types build.
fn anchor(accounts: impl ToAccountMetas, data: impl InstructionData) -> Instruction {
    Instruction {
        program_id: escrow::ID,
        accounts: accounts.to_account_metas(None),
        data: data.data(),
    }
}

fn with_data(accounts: &impl ToAccountMetas, data: Vec<u8>) -> Instruction {
    Instruction {
        program_id: escrow::ID,
        accounts: accounts.to_account_metas(None),
        data,
    }
}

/// Terms with a distinct value in every field (a swapped field shows).
fn terms() -> client::Terms {
    client::Terms {
        price_lamports: 0x0102_0304_0506_0708,
        key_point: [1; 32],
        blob_root: [2; 32],
        plain_len: 0x1112_1314_1516_1718,
        bundle_hash: [3; 32],
        seller_x25519: [4; 32],
        expires_at: -0x2122_2324_2526_2728,
    }
}

/// The node's terms as the program's type.
fn sealed(t: &client::Terms) -> SealedTerms {
    SealedTerms {
        price_lamports: t.price_lamports,
        key_point: t.key_point,
        blob_root: t.blob_root,
        plain_len: t.plain_len,
        bundle_hash: t.bundle_hash,
        seller_x25519: t.seller_x25519,
        expires_at: t.expires_at,
    }
}

/// An account's bytes as the program writes them (discriminator + Borsh).
/// The program's instruction for a proof, lamport or token.
enum Want {
    Chunk(FraudProof),
    Step(StepFraud),
    Link(LinkFraud),
}

impl Want {
    fn lamports(self) -> Vec<u8> {
        use escrow::instruction as i;
        match self {
            Want::Chunk(proof) => i::Dispute { proof }.data(),
            Want::Step(proof) => i::DisputeStep { proof }.data(),
            Want::Link(proof) => i::DisputeLink { proof }.data(),
        }
    }
    fn token(self) -> Vec<u8> {
        use escrow::instruction as i;
        match self {
            Want::Chunk(proof) => i::DisputeToken { proof }.data(),
            Want::Step(proof) => i::DisputeStepToken { proof }.data(),
            Want::Link(proof) => i::DisputeLinkToken { proof }.data(),
        }
    }
}

/// The node's three proofs from the same parts, each with the program's.
fn proof_pairs(
    k: [u8; 32],
    index: u32,
    cipher: &[u8],
    plain_hash: [u8; 32],
    path: &[[u8; 32]],
) -> Vec<(client::FraudProof, Want)> {
    // one v3 leaf (tallies) and one v2 leaf (none)
    let tallies = |b: u8| (b == 0x10).then_some([[b + 3; 4], [b + 4; 4]]);
    let leaf = |b: u8| LeafFields {
        before: [b; 32],
        after: [b + 1; 32],
        body: [b + 2; 32],
        tallies: tallies(b),
    };
    let parts = |b: u8| escrow_math::fraud::LeafParts {
        before: [b; 32],
        after: [b + 1; 32],
        body: [b + 2; 32],
        tallies: tallies(b),
    };
    let next: Vec<[u8; 32]> = path.iter().rev().copied().collect();
    vec![
        (
            client::FraudProof::Chunk {
                k,
                index,
                cipher: cipher.to_vec(),
                plain_hash,
                path: path.to_vec(),
            },
            Want::Chunk(FraudProof {
                k,
                index,
                cipher: cipher.to_vec(),
                plain_hash,
                path: path.to_vec(),
            }),
        ),
        (
            client::FraudProof::Step {
                k,
                index,
                cipher: cipher.to_vec(),
                plain_hash,
                states: ([0x74; 32], [0x75; 32]),
                path: path.to_vec(),
                tallies: Some([[0x76; 4], [0x77; 4]]),
            },
            Want::Step(StepFraud {
                k,
                index,
                cipher: cipher.to_vec(),
                plain_hash,
                before: [0x74; 32],
                after: [0x75; 32],
                path: path.to_vec(),
                tallies: Some([[0x76; 4], [0x77; 4]]),
            }),
        ),
        (
            client::FraudProof::Link {
                k,
                index,
                leaves: [parts(0x10), parts(0x20)],
                path: path.to_vec(),
                next: next.clone(),
            },
            Want::Link(LinkFraud {
                k,
                index,
                left: leaf(0x10),
                right: leaf(0x20),
                path: path.to_vec(),
                next,
            }),
        ),
    ]
}

fn bytes<T: AccountSerialize>(account: &T) -> Vec<u8> {
    let mut data = Vec::new();
    account.try_serialize(&mut data).unwrap();
    data
}

#[test]
fn the_node_derives_the_programs_addresses() {
    assert_eq!(client::program_id(), escrow::ID);
    assert_eq!(client::PROGRAM_ID, escrow::ID.to_string());
    let (seller, buyer) = (k(), k());
    assert_eq!(
        client::settings_address(),
        pda(&[SETTINGS_SEED], &escrow::ID)
    );
    let listing = pda(
        &[SEALED_LISTING_SEED, seller.as_ref(), ID.as_bytes()],
        &escrow::ID,
    );
    assert_eq!(client::listing_address(&seller, ID), listing);
    assert_eq!(
        client::escrow_address(&listing, &buyer),
        pda(
            &[SEALED_ESCROW_SEED, listing.as_ref(), buyer.as_ref()],
            &escrow::ID
        )
    );
    assert_eq!(
        client::program_data_address(),
        pda(&[escrow::ID.as_ref()], &UPGRADEABLE_LOADER)
    );
}

#[test]
fn the_node_builds_what_anchor_builds() {
    use escrow::{accounts as a, instruction as i};
    let [admin, treasury, seller, buyer] = std::array::from_fn(|_| k());
    let settings = client::settings_address();
    let listing = client::listing_address(&seller, ID);
    let escrow = client::escrow_address(&listing, &buyer);

    let new = client::NewSettings {
        treasury,
        fee_bps: 0x0102,
        slash_bps: 0x0304,
        release_window_secs: -0x0506,
        dispute_window_secs: 0x0708,
        min_stake: 0x090a_0b0c_0d0e_0f10,
    };
    assert_eq!(
        client::init_settings(&admin, &new),
        anchor(
            a::InitSettings {
                settings,
                treasury,
                admin,
                program_data: client::program_data_address(),
                system_program: SYSTEM,
            },
            i::InitSettings {
                args: SettingsArgs {
                    fee_bps: new.fee_bps,
                    slash_bps: new.slash_bps,
                    release_window_secs: new.release_window_secs,
                    dispute_window_secs: new.dispute_window_secs,
                    min_stake: new.min_stake,
                },
            },
        ),
        "init_settings"
    );

    let t = terms();
    let stake = 0x3132_3334_3536_3738;
    assert_eq!(
        client::list_sealed(&seller, ID, &t, stake, 0x4142_4344),
        anchor(
            a::ListSealed {
                settings,
                listing,
                seller,
                system_program: SYSTEM,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::ListSealed {
                listing_id: ID.into(),
                terms: sealed(&t),
                stake,
                max_open: 0x4142_4344,
            },
        ),
        "list_sealed"
    );

    let (blind_point, buyer_x25519) = ([0x41u8; 32], [0x42u8; 32]);
    let deposit = anchor(
        a::DepositSealed {
            settings,
            listing,
            escrow,
            buyer,
            system_program: SYSTEM,
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        },
        i::DepositSealed {
            terms: sealed(&t),
            blind_point,
            buyer_x25519,
        },
    );
    assert_eq!(
        client::deposit(&listing, &buyer, &t, &blind_point, &buyer_x25519),
        deposit,
        "deposit_sealed"
    );

    let s = [0x51u8; 32];
    assert_eq!(
        client::reveal(&listing, &buyer, &seller, &s),
        anchor(
            a::Reveal {
                settings,
                listing,
                escrow,
                seller,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::Reveal { revealed: s },
        ),
        "reveal"
    );

    assert_eq!(
        client::decline(&listing, &buyer, &seller),
        anchor(
            a::Decline {
                settings,
                listing,
                escrow,
                seller,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::Decline {},
        ),
        "decline"
    );

    assert_eq!(
        client::claim(&listing, &buyer, &seller, &treasury),
        anchor(
            a::Claim {
                settings,
                listing,
                escrow,
                seller,
                treasury,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::Claim {},
        ),
        "claim"
    );

    assert_eq!(
        client::refund(&listing, &buyer),
        anchor(
            a::RefundSealed {
                settings,
                listing,
                escrow,
                buyer,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::RefundSealed {},
        ),
        "refund_sealed"
    );

    let dispute_accounts = a::Dispute {
        settings,
        listing,
        escrow,
        buyer,
        event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
        program: escrow::ID,
    };
    // each proof, and each with empty vectors, as Anchor's types build it
    for empty in [false, true] {
        let (cipher, path) = if empty {
            (vec![], vec![])
        } else {
            (vec![0x66, 0x67, 0x68], vec![[0x6a; 32], [0x6b; 32]])
        };
        let (k, index, plain_hash) = ([0x61; 32], 0x6263_6465, [0x69; 32]);
        for (proof, want) in proof_pairs(k, index, &cipher, plain_hash, &path) {
            assert_eq!(
                client::dispute(&listing, &buyer, &proof),
                with_data(&dispute_accounts, want.lamports()),
                "dispute ({}), empty vectors: {empty}",
                proof.kind()
            );
        }
    }

    assert_eq!(
        client::retire(&seller, ID),
        anchor(
            a::RetireSealed {
                listing,
                seller,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::RetireSealed {}
        ),
        "retire_sealed"
    );
    assert_eq!(
        client::expire(&listing, &buyer),
        anchor(
            a::Expire {
                settings,
                listing,
                escrow,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::Expire {},
        ),
        "expire"
    );

    // in a token: the vault is the escrow's associated account of the mint,
    // the parties' accounts their associated accounts
    for program in [
        node::chain::token::TOKEN_PROGRAM_ID,
        escrow::token::vault::TOKEN_2022_PROGRAM,
    ] {
        let mint = node::chain::token::TokenMint {
            address: k(),
            program,
            decimals: 6,
        };
        let ata =
            |owner: &Pubkey| escrow::token::vault::associated(owner, &mint.address, &mint.program);
        let vault = ata(&escrow);
        assert_eq!(client::vault_address(&listing, &buyer, &mint), vault);
        assert_eq!(
            client::list_sealed_token(&seller, ID, &t, stake, 0x5152_5354, &mint, &treasury),
            anchor(
                a::ListSealedToken {
                    settings,
                    listing,
                    seller,
                    mint: mint.address,
                    treasury,
                    treasury_token: ata(&treasury),
                    token_program: program,
                    associated_token_program: escrow::token::vault::ATA_PROGRAM,
                    system_program: SYSTEM,
                    event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                    program: escrow::ID,
                },
                i::ListSealedToken {
                    listing_id: ID.into(),
                    terms: sealed(&t),
                    stake,
                    max_open: 0x5152_5354,
                },
            ),
            "list_sealed_token"
        );
        let deposit = anchor(
            a::DepositSealedToken {
                settings,
                listing,
                escrow,
                buyer,
                mint: mint.address,
                buyer_token: ata(&buyer),
                vault,
                token_program: program,
                associated_token_program: escrow::token::vault::ATA_PROGRAM,
                system_program: SYSTEM,
                event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                program: escrow::ID,
            },
            i::DepositSealedToken {
                terms: sealed(&t),
                blind_point,
                buyer_x25519,
            },
        );
        assert_eq!(
            client::deposit_token(&listing, &buyer, &t, &blind_point, &buyer_x25519, &mint),
            deposit,
            "deposit_sealed_token"
        );
        assert_eq!(
            client::claim_token(&listing, &buyer, &seller, &treasury, &mint),
            anchor(
                a::ClaimToken {
                    settings,
                    listing,
                    escrow,
                    seller,
                    mint: mint.address,
                    vault,
                    seller_token: ata(&seller),
                    treasury_token: ata(&treasury),
                    token_program: program,
                    event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
                    program: escrow::ID,
                },
                i::ClaimToken {},
            ),
            "claim_token"
        );
        let exit = a::ExitToken {
            settings,
            listing,
            escrow,
            buyer,
            mint: mint.address,
            vault,
            buyer_token: ata(&buyer),
            token_program: program,
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        };
        assert_eq!(
            client::refund_token(&listing, &buyer, &mint),
            anchor(exit, i::RefundSealedToken {}),
            "refund_sealed_token"
        );
        let dispute = a::DisputeToken {
            settings,
            listing,
            escrow,
            buyer,
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        };
        for (proof, want) in proof_pairs([0x71; 32], 7, &[1, 2], [0x72; 32], &[[0x73; 32]]) {
            assert_eq!(
                client::dispute_token(&listing, &buyer, &proof),
                with_data(&dispute, want.token()),
                "dispute_token ({})",
                proof.kind()
            );
        }
    }
}

#[test]
fn the_node_reads_the_programs_settings() {
    let s = Settings {
        admin: k(),
        treasury: k(),
        fee_bps: 0x0102,
        slash_bps: 0x0304,
        release_window_secs: -0x0506,
        dispute_window_secs: 0x0708,
        min_stake: 0x090a_0b0c_0d0e_0f10,
        bump: 0xfe,
    };
    let data = bytes(&s);
    assert_eq!(
        client::SettingsAccount::decode(&escrow::ID, &data),
        Ok(client::SettingsAccount {
            admin: s.admin,
            treasury: s.treasury,
            fee_bps: s.fee_bps,
            slash_bps: s.slash_bps,
            release_window_secs: s.release_window_secs,
            dispute_window_secs: s.dispute_window_secs,
            min_stake: s.min_stake,
        })
    );
    // another owner, or another account type, is refused
    let other = k();
    assert_eq!(
        client::SettingsAccount::decode(&other, &data),
        Err(client::AccountError::WrongOwner(other))
    );
    assert_eq!(
        client::EscrowAccount::decode(&escrow::ID, &data),
        Err(client::AccountError::WrongType("SealedEscrow"))
    );
}

fn listing_with(status: SealedListingStatus) -> SealedListing {
    SealedListing {
        seller: k(),
        listing_id: ID.into(),
        terms: sealed(&terms()),
        stake: 0x7172_7374_7576_7778,
        status,
        open_escrows: 0x797a_7b7c,
        bump: 0xfd,
        mint: match status {
            // a listing in a token, and one in lamports (the default key)
            SealedListingStatus::Retired => Pubkey::default(),
            _ => k(),
        },
        reserved: 0x6162_6364_6566_6768,
        max_open: 0x696a_6b6c,
    }
}

/// The node's decoding of a listing in `status` has the program's values
/// (statuses compared by variant name: the two enums are separate types).
fn check_listing(status: SealedListingStatus) {
    let l = listing_with(status);
    let got = client::ListingAccount::decode(&escrow::ID, &bytes(&l))
        .unwrap_or_else(|e| panic!("a {status:?} listing: {e}"));
    assert_eq!(
        (
            got.seller,
            got.listing_id.as_str(),
            sealed(&got.terms),
            got.stake,
            format!("{:?}", got.status),
            got.open_escrows,
            got.mint,
            got.reserved,
            got.max_open,
        ),
        (
            l.seller,
            l.listing_id.as_str(),
            l.terms,
            l.stake,
            format!("{:?}", l.status),
            l.open_escrows,
            Some(l.mint).filter(|m| *m != Pubkey::default()),
            l.reserved,
            l.max_open,
        ),
        "a {status:?} listing"
    );
}

#[test]
fn the_node_reads_the_programs_listings() {
    check_listing(SealedListingStatus::Live);
    check_listing(SealedListingStatus::Retired);
}

/// A listing a fraud proof held against (`SealedListingStatus::Convicted`,
/// set by `dispute`) must read too: it is what a buyer checks before
/// depositing and a seller before retiring.
#[test]
fn the_node_reads_a_convicted_listing() {
    check_listing(SealedListingStatus::Convicted);
}

#[test]
fn the_node_reads_the_programs_escrows() {
    for status in [
        SealedEscrowStatus::Deposited,
        SealedEscrowStatus::Revealed,
        SealedEscrowStatus::Declined,
        SealedEscrowStatus::Claimed,
        SealedEscrowStatus::Expired,
    ] {
        let e = SealedEscrow {
            listing: k(),
            buyer: k(),
            buyer_x25519: [0x81; 32],
            blind_point: [0x82; 32],
            amount: 0x8384_8586_8788_898a,
            deposited_at: -0x0b0c_0d0e_0f10_1112,
            status,
            revealed: [0x8b; 32],
            revealed_at: 0x1314_1516_1718_191a,
            bump: 0xfc,
            share: 0x2122_2324_2526_2728,
        };
        let data = bytes(&e);
        assert_eq!(data.len(), client::ESCROW_ACCOUNT_SPACE, "{status:?}");
        let got = client::EscrowAccount::decode(&escrow::ID, &data)
            .unwrap_or_else(|err| panic!("a {status:?} escrow: {err}"));
        assert_eq!(
            (
                got.listing,
                got.buyer,
                got.buyer_x25519,
                got.blind_point,
                got.amount,
                got.deposited_at,
                format!("{:?}", got.status),
                got.revealed,
                got.revealed_at,
                got.share,
            ),
            (
                e.listing,
                e.buyer,
                e.buyer_x25519,
                e.blind_point,
                e.amount,
                e.deposited_at,
                format!("{:?}", e.status),
                e.revealed,
                e.revealed_at,
                e.share,
            ),
            "a {status:?} escrow"
        );
        // the offsets and tag the node filters escrows by (memcmp)
        assert_eq!(
            data[client::ESCROW_STATUS_OFFSET],
            client::status_tag(got.status),
            "{status:?} tag"
        );
        assert_eq!(
            &data[client::ESCROW_LISTING_OFFSET..client::ESCROW_LISTING_OFFSET + 32],
            &e.listing.to_bytes()[..],
            "listing offset"
        );
    }
}

/// The node quotes a deposit's rent from its own copy of the account size.
#[test]
fn the_node_knows_the_escrow_account_size() {
    assert_eq!(
        client::ESCROW_ACCOUNT_SPACE,
        8 + <SealedEscrow as Space>::INIT_SPACE
    );
}

/// The decoder is checked against the program's own event encoding
/// (Anchor's `Event::data`), exactly as it appears in a self-CPI after the
/// event tag; the end-to-end tests read the same from the validator.
#[test]
fn the_node_decodes_the_programs_events() {
    let (listing, escrow, seller, buyer) = (k(), k(), k(), k());
    let cases: Vec<(Vec<u8>, EscrowEvent)> = vec![
        (
            ev::SealedListed {
                listing,
                seller,
                price_lamports: 0x0102_0304_0506_0708,
                stake: 0x1112_1314_1516_1718,
            }
            .data(),
            EscrowEvent::Other("SealedListed"),
        ),
        (
            ev::SealedDeposited {
                listing,
                escrow,
                buyer,
                amount: 0x2122_2324_2526_2728,
                mint: seller,
                deposited_at: -0x3132_3334_3536_3738,
            }
            .data(),
            EscrowEvent::Deposited {
                listing,
                escrow,
                buyer,
                amount: 0x2122_2324_2526_2728,
                mint: seller,
                deposited_at: -0x3132_3334_3536_3738,
            },
        ),
        (
            ev::KeyRevealed {
                escrow,
                revealed: [0x31; 32],
            }
            .data(),
            EscrowEvent::Revealed { escrow },
        ),
        (
            ev::DepositDeclined { escrow }.data(),
            EscrowEvent::Declined { escrow },
        ),
        (
            ev::PaymentClaimed {
                escrow,
                to_seller: 0x4142_4344_4546_4748,
                fee: 0x4950_5152_5354_5556,
            }
            .data(),
            EscrowEvent::Claimed {
                escrow,
                to_seller: 0x4142_4344_4546_4748,
                fee: 0x4950_5152_5354_5556,
            },
        ),
        (
            ev::SealedRefunded {
                escrow,
                amount: 0x6162_6364_6566_6768,
                slashed: 0x6970_7172_7374_7576,
            }
            .data(),
            EscrowEvent::Refunded {
                escrow,
                amount: 0x6162_6364_6566_6768,
                slashed: 0x6970_7172_7374_7576,
            },
        ),
        (
            ev::FraudProven {
                escrow,
                index: 0x7778_797a,
                amount: 0x8182_8384_8586_8788,
                slashed: 0x8990_9192_9394_9596,
            }
            .data(),
            EscrowEvent::FraudProven {
                escrow,
                index: 0x7778_797a,
                amount: 0x8182_8384_8586_8788,
                slashed: 0x8990_9192_9394_9596,
            },
        ),
        (
            ev::EscrowExpired {
                escrow,
                slashed: 0x9192_9394_9596_9798,
            }
            .data(),
            EscrowEvent::Expired {
                escrow,
                slashed: 0x9192_9394_9596_9798,
            },
        ),
        (
            ev::SealedRetired {
                listing,
                stake_returned: 0x9798_999a_9b9c_9d9e,
            }
            .data(),
            EscrowEvent::Other("SealedRetired"),
        ),
        (
            escrow::UsdQuoted {
                price_update: listing,
                feed_id: [0xa1; 32],
                price: -0x0102_0304_0506_0708,
                conf: 0xa2a3_a4a5_a6a7_a8a9,
                exponent: -8,
                publish_time: -0x1112_1314,
                usd_micros: 0xb1b2_b3b4_b5b6_b7b8,
                decimals: 9,
                max_age_secs: 0xc1c2_c3c4,
                max_conf_bps: 0xd1d2,
                units: 0xe1e2_e3e4_e5e6_e7e8,
            }
            .data(),
            EscrowEvent::UsdQuoted(node::escrow::UsdQuote {
                price_update: listing,
                feed_id: [0xa1; 32],
                price: -0x0102_0304_0506_0708,
                conf: 0xa2a3_a4a5_a6a7_a8a9,
                exponent: -8,
                publish_time: -0x1112_1314,
                usd_micros: 0xb1b2_b3b4_b5b6_b7b8,
                decimals: 9,
                max_age_secs: 0xc1c2_c3c4,
                max_conf_bps: 0xd1d2,
                units: 0xe1e2_e3e4_e5e6_e7e8,
            }),
        ),
    ];
    let mut calls = Vec::new();
    for (data, want) in &cases {
        assert_eq!(client::decode_event(data), Some(want.clone()), "{want:?}");
        let mut tagged = anchor_lang::event::EVENT_IX_TAG_LE.to_vec();
        tagged.extend_from_slice(data);
        calls.push(node::chain::ProgramCall {
            program_id: escrow::ID.to_string(),
            accounts: vec![escrow::EVENT_AUTHORITY_AND_BUMP.0.to_string()],
            data: tagged,
        });
    }
    // and as a transaction's inner instructions, in order: the event
    // authority the node derives is the program's
    assert_eq!(
        client::event_authority_address(),
        escrow::EVENT_AUTHORITY_AND_BUMP.0
    );
    assert_eq!(client::EVENT_IX_TAG, anchor_lang::event::EVENT_IX_TAG_LE);
    let tx = node::chain::ParsedTx {
        inner_calls: calls,
        ..Default::default()
    };
    assert_eq!(
        client::events_in(&tx),
        cases.into_iter().map(|c| c.1).collect::<Vec<_>>()
    );
}

/// The node's `quote_usd` (a buy of a listing priced in USD at settle
/// time) is the instruction Anchor's client types build, its `max_units`
/// the largest quote the payment covers within the listing's tolerance.
#[test]
fn the_node_builds_the_programs_usd_quote() {
    let terms = node::settle::UsdTerms {
        price_account: k().to_string(),
        feed_id: [0x5a; 32],
        usd_micros: 15_000_000,
        max_age_secs: 60,
        max_conf_bps: 100,
        tolerance_bps: 100,
        decimals: 9,
    };
    let paid = 99_000_000;
    let ours = node::market::usd_price::quote_instruction(&terms, paid).unwrap();
    let theirs = anchor(
        escrow::accounts::QuoteUsd {
            price_update: terms.price_account.parse().unwrap(),
            event_authority: escrow::EVENT_AUTHORITY_AND_BUMP.0,
            program: escrow::ID,
        },
        escrow::instruction::QuoteUsd {
            args: escrow::UsdQuoteArgs {
                feed_id: [0x5a; 32],
                usd_micros: 15_000_000,
                decimals: 9,
                max_age_secs: 60,
                max_conf_bps: 100,
                max_units: 100_000_000,
            },
        },
    );
    assert_eq!(ours, theirs);
}
