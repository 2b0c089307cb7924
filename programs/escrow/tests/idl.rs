//! The IDL kept in the repo (`idl/escrow.json`, written by `idl/gen.py`
//! because `anchor build` needs the SBF toolchain) must match the
//! compiled program: discriminators, account order and flags, errors.

use anchor_lang::{Discriminator, ToAccountMetas};
use escrow::error::EscrowError;
use serde_json::Value;
use solana_sdk::instruction::AccountMeta;
use solana_sdk::pubkey::Pubkey;

fn idl() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/idl/escrow.json");
    serde_json::from_slice(&std::fs::read(p).expect("idl/escrow.json")).unwrap()
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing from the IDL"))
}

fn disc(v: &Value) -> Vec<u8> {
    v["discriminator"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect()
}

fn k() -> Pubkey {
    Pubkey::new_unique()
}

/// (writable, signer) of each account, in order.
fn flags(metas: Vec<AccountMeta>) -> Vec<(bool, bool)> {
    metas.iter().map(|m| (m.is_writable, m.is_signer)).collect()
}

fn idl_flags(ix: &Value) -> Vec<(bool, bool)> {
    ix["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["writable"] == true, a["signer"] == true))
        .collect()
}

#[test]
fn instructions_match_the_program() {
    let idl = idl();
    assert_eq!(idl["address"], escrow::ID.to_string());
    let ixs = &idl["instructions"];
    use escrow::{accounts as a, instruction as i};
    let cases: Vec<(&str, &[u8], Vec<AccountMeta>)> = vec![
        (
            "initialize_config",
            i::InitializeConfig::DISCRIMINATOR,
            a::InitializeConfig {
                config: k(),
                admin: k(),
                program_data: k(),
                system_program: k(),
            }
            .to_account_metas(None),
        ),
        (
            "create_listing",
            i::CreateListing::DISCRIMINATOR,
            a::CreateListing {
                config: k(),
                listing: k(),
                seller: k(),
                system_program: k(),
            }
            .to_account_metas(None),
        ),
        (
            "deposit",
            i::Deposit::DISCRIMINATOR,
            a::Deposit {
                listing: k(),
                escrow: k(),
                buyer: k(),
                system_program: k(),
            }
            .to_account_metas(None),
        ),
        (
            "release",
            i::Release::DISCRIMINATOR,
            a::Release {
                config: k(),
                listing: k(),
                escrow: k(),
                seller: k(),
                treasury: k(),
            }
            .to_account_metas(None),
        ),
        (
            "refund",
            i::Refund::DISCRIMINATOR,
            a::Refund {
                config: k(),
                listing: k(),
                escrow: k(),
                buyer: k(),
            }
            .to_account_metas(None),
        ),
        (
            "cancel_listing",
            i::CancelListing::DISCRIMINATOR,
            a::CancelListing {
                listing: k(),
                seller: k(),
            }
            .to_account_metas(None),
        ),
        (
            "slash",
            i::Slash::DISCRIMINATOR,
            a::Slash {
                config: k(),
                listing: k(),
                escrow: k(),
                buyer: k(),
                caller: k(),
            }
            .to_account_metas(None),
        ),
    ];
    assert_eq!(ixs.as_array().unwrap().len(), cases.len());
    for (name, d, metas) in cases {
        let ix = named(ixs, name);
        assert_eq!(disc(ix), d, "{name} discriminator");
        assert_eq!(idl_flags(ix), flags(metas), "{name} accounts");
    }
}

#[test]
fn accounts_events_and_errors_match_the_program() {
    let idl = idl();
    use escrow::events as ev;
    use escrow::state as st;
    for (name, d) in [
        ("Config", st::Config::DISCRIMINATOR),
        ("Escrow", st::Escrow::DISCRIMINATOR),
        ("Listing", st::Listing::DISCRIMINATOR),
    ] {
        assert_eq!(disc(named(&idl["accounts"], name)), d, "{name}");
    }
    for (name, d) in [
        ("Deposited", ev::Deposited::DISCRIMINATOR),
        ("ListingCancelled", ev::ListingCancelled::DISCRIMINATOR),
        ("ListingCreated", ev::ListingCreated::DISCRIMINATOR),
        ("Refunded", ev::Refunded::DISCRIMINATOR),
        ("Released", ev::Released::DISCRIMINATOR),
        ("Slashed", ev::Slashed::DISCRIMINATOR),
    ] {
        assert_eq!(disc(named(&idl["events"], name)), d, "{name}");
    }
    use EscrowError::*;
    let all = [
        FeeTooHigh,
        SlashTooHigh,
        ZeroWindow,
        BadListingId,
        ZeroPrice,
        StakeTooLow,
        ExpiryInPast,
        ListingCancelled,
        ListingExpired,
        NotSeller,
        NotBuyer,
        AlreadySettled,
        BundleHashMismatch,
        BadEnvelopeId,
        ReleaseWindowOpen,
        OpenEscrows,
        NoCause,
        AlreadySlashed,
        Overflow,
        WrongTreasury,
        WrongListing,
        NotUpgradeAuthority,
    ];
    let errors = idl["errors"].as_array().unwrap();
    assert_eq!(errors.len(), all.len());
    for (e, want) in all.into_iter().zip(errors) {
        assert_eq!(want["name"], format!("{e:?}"));
        assert_eq!(want["msg"], e.to_string());
        assert_eq!(
            want["code"],
            anchor_lang::error::ERROR_CODE_OFFSET + e as u32
        );
    }
}
