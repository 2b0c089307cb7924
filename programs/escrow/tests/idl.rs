//! The IDL kept in the repo (`idl/escrow.json`, written by `idl/gen.py`
//! because `anchor build` needs the SBF toolchain) must match the
//! compiled program: discriminators; each instruction's accounts (names,
//! order, writable, signer) and PDA seeds; the Borsh layout of every
//! instruction's arguments, account and event (the IDL's field names,
//! order and types encode the same values to the same bytes as the
//! program's own types); every error code and message.

use anchor_lang::{AccountSerialize, Discriminator, Event, InstructionData, ToAccountMetas};
use escrow::error::EscrowError;
use escrow::sealed::events as ev;
use escrow::sealed::state::{self as st, SealedEscrowStatus, SealedListingStatus, SealedTerms};
use escrow::sealed::{FraudProof, LeafFields, LinkFraud, SettingsArgs, StepFraud};
use serde_json::{json, Map, Value};
use solana_sdk::pubkey::Pubkey;
use std::str::FromStr;

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

/// The names in an IDL list, in order.
fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect()
}

/// A JSON array of bytes.
fn byte_list(v: &Value) -> Vec<u8> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not a byte array"))
        .iter()
        .map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())
        .collect()
}

fn disc(v: &Value) -> Vec<u8> {
    byte_list(&v["discriminator"])
}

fn k() -> Pubkey {
    Pubkey::new_unique()
}

// ---- test values, both as the program's types and as IDL-shaped JSON ----

/// A value both as the program's Rust type and as JSON in the IDL's terms
/// (numbers, base58 keys, arrays of bytes, variant names, objects).
trait V {
    type R;
    fn rust(self) -> Self::R;
    fn json(&self) -> Value;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl V for $t {
            type R = $t;
            fn rust(self) -> $t {
                self
            }
            fn json(&self) -> Value {
                serde_json::to_value(self).unwrap()
            }
        }
    )*};
}
plain!(
    u8,
    u16,
    u32,
    u64,
    i32,
    i64,
    String,
    [u8; 32],
    Vec<u8>,
    Vec<[u8; 32]>,
    Option<[[u8; 4]; 2]>
);

impl V for Pubkey {
    type R = Pubkey;
    fn rust(self) -> Pubkey {
        self
    }
    fn json(&self) -> Value {
        Value::String(self.to_string())
    }
}

macro_rules! variant {
    ($($t:ty),*) => {$(
        impl V for $t {
            type R = $t;
            fn rust(self) -> $t {
                self
            }
            fn json(&self) -> Value {
                Value::String(format!("{:?}", self))
            }
        }
    )*};
}
variant!(SealedListingStatus, SealedEscrowStatus);

/// A struct value of the program and its JSON (built together by `both!`).
struct Pair<T>(T, Value);

impl<T> V for Pair<T> {
    type R = T;
    fn rust(self) -> T {
        self.0
    }
    fn json(&self) -> Value {
        self.1.clone()
    }
}

/// `both!(path::Struct { field: value, .. })`: the struct, and a JSON
/// object keyed by the very field names the compiler checked.
macro_rules! both {
    ($($ty:ident)::+ { $($f:ident : $v:expr),* $(,)? }) => {{
        #[allow(unused_mut)]
        let mut j = Map::new();
        $(
            let $f = $v;
            j.insert(stringify!($f).to_string(), V::json(&$f));
        )*
        Pair($($ty)::+ { $($f: V::rust($f)),* }, Value::Object(j))
    }};
}

// Distinct values per field (u64s above i64::MAX, negative i64s), so a
// swapped field, a wrong width or a signed/unsigned mix-up changes bytes
// or fails to encode.

fn terms() -> Pair<SealedTerms> {
    both!(SealedTerms {
        price_lamports: u64::MAX - 1,
        key_point: [1u8; 32],
        blob_root: [2u8; 32],
        plain_len: u64::MAX - 2,
        bundle_hash: [3u8; 32],
        seller_x25519: [4u8; 32],
        expires_at: -5i64,
    })
}

fn settings_args() -> Pair<SettingsArgs> {
    both!(SettingsArgs {
        fee_bps: 0x0102u16,
        slash_bps: 0x0304u16,
        release_window_secs: -6i64,
        dispute_window_secs: -7i64,
        min_stake: u64::MAX - 8,
    })
}

fn usd_quote_args() -> Pair<escrow::UsdQuoteArgs> {
    both!(escrow::UsdQuoteArgs {
        feed_id: [16u8; 32],
        usd_micros: u64::MAX - 17,
        decimals: 18u8,
        max_age_secs: 0x1920_2122u32,
        max_conf_bps: 0x2324u16,
        max_units: u64::MAX - 25,
    })
}

fn proof() -> Pair<FraudProof> {
    both!(FraudProof {
        k: [9u8; 32],
        index: 0x0a0b_0c0du32,
        cipher: vec![1u8, 2, 3],
        plain_hash: [10u8; 32],
        path: vec![[11u8; 32], [12u8; 32]],
    })
}

fn step_proof() -> Pair<StepFraud> {
    both!(StepFraud {
        k: [19u8; 32],
        index: 0x1a1b_1c1du32,
        cipher: vec![4u8, 5, 6, 7],
        plain_hash: [20u8; 32],
        before: [21u8; 32],
        after: [22u8; 32],
        path: vec![[23u8; 32]],
        tallies: Some([[0xa1u8, 0xa2, 0xa3, 0xa4], [0xb1, 0xb2, 0xb3, 0xb4]]),
    })
}

fn leaf_fields(seed: u8) -> Pair<LeafFields> {
    both!(LeafFields {
        before: [seed; 32],
        after: [seed + 1; 32],
        body: [seed + 2; 32],
        // one leaf of a v3 blob (tallies), one of a v2 blob (none)
        tallies: (seed % 2 == 1).then_some([[seed + 3; 4], [seed + 4; 4]]),
    })
}

fn link_proof() -> Pair<LinkFraud> {
    both!(LinkFraud {
        k: [24u8; 32],
        index: 0x2a2b_2c2du32,
        left: leaf_fields(25),
        right: leaf_fields(30),
        path: vec![[35u8; 32], [36u8; 32]],
        next: vec![[37u8; 32]],
    })
}

// ---- Borsh encoding driven by the IDL ----

/// Borsh bytes of the JSON value `v` as the IDL type `ty` lays it out.
fn encode(idl: &Value, ty: &Value, v: &Value, out: &mut Vec<u8>) {
    let int = |v: &Value| -> u64 {
        v.as_u64()
            .unwrap_or_else(|| panic!("{v} is not an unsigned integer"))
    };
    match ty {
        Value::String(name) => match name.as_str() {
            "u8" => out.push(u8::try_from(int(v)).unwrap()),
            "u16" => out.extend_from_slice(&u16::try_from(int(v)).unwrap().to_le_bytes()),
            "u32" => out.extend_from_slice(&u32::try_from(int(v)).unwrap().to_le_bytes()),
            "u64" => out.extend_from_slice(&int(v).to_le_bytes()),
            "i64" => {
                let n = v.as_i64().unwrap_or_else(|| panic!("{v} is not an i64"));
                out.extend_from_slice(&n.to_le_bytes())
            }
            "i32" => {
                let n = v.as_i64().unwrap_or_else(|| panic!("{v} is not an i32"));
                out.extend_from_slice(&i32::try_from(n).unwrap().to_le_bytes())
            }
            "string" => {
                let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a string"));
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            "pubkey" => {
                let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a key"));
                out.extend_from_slice(&Pubkey::from_str(s).unwrap().to_bytes());
            }
            "bytes" => encode_seq(idl, &json!("u8"), v, None, out),
            other => panic!("IDL type {other} is not one the program uses"),
        },
        Value::Object(o) => {
            if let Some(a) = o.get("array") {
                let n = a[1].as_u64().unwrap() as usize;
                encode_seq(idl, &a[0], v, Some(n), out)
            } else if let Some(item) = o.get("vec") {
                encode_seq(idl, item, v, None, out)
            } else if let Some(item) = o.get("option") {
                // Borsh: 0 for None, 1 and the value for Some
                match v {
                    Value::Null => out.push(0),
                    some => {
                        out.push(1);
                        encode(idl, item, some, out)
                    }
                }
            } else if let Some(d) = o.get("defined") {
                encode_defined(idl, d["name"].as_str().unwrap(), v, out)
            } else {
                panic!("IDL type {ty} is not one the program uses")
            }
        }
        other => panic!("IDL type {other} is not one the program uses"),
    }
}

/// A fixed array (`fixed`) or a length-prefixed vector.
fn encode_seq(idl: &Value, item: &Value, v: &Value, fixed: Option<usize>, out: &mut Vec<u8>) {
    let items = v
        .as_array()
        .unwrap_or_else(|| panic!("{v} is not a sequence"));
    match fixed {
        Some(n) => assert_eq!(items.len(), n, "array length"),
        None => out.extend_from_slice(&(items.len() as u32).to_le_bytes()),
    }
    for i in items {
        encode(idl, item, i, out);
    }
}

/// A type of the IDL's `types`: a struct's fields in order, or an enum's
/// variant index.
fn encode_defined(idl: &Value, name: &str, v: &Value, out: &mut Vec<u8>) {
    let def = &named(&idl["types"], name)["type"];
    match def["kind"].as_str() {
        Some("struct") => encode_fields(idl, &def["fields"], v, out, name),
        Some("enum") => {
            let variant = v
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {v} is not a variant"));
            let i = def["variants"]
                .as_array()
                .unwrap()
                .iter()
                .position(|x| x["name"] == variant)
                .unwrap_or_else(|| panic!("{name} has no variant {variant} in the IDL"));
            out.push(u8::try_from(i).unwrap());
        }
        _ => panic!("{name}: unexpected type definition {def}"),
    }
}

/// The IDL's `fields` (or instruction `args`), in the IDL's order, taken
/// from the object `v`, whose keys must be exactly those names.
fn encode_fields(idl: &Value, fields: &Value, v: &Value, out: &mut Vec<u8>, what: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: {v} is not an object"));
    let mut in_idl = names(fields);
    let mut in_program: Vec<String> = obj.keys().cloned().collect();
    in_idl.sort();
    in_program.sort();
    assert_eq!(in_idl, in_program, "{what}: field names, IDL vs program");
    for f in fields.as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        encode(idl, &f["type"], &obj[name], out);
    }
}

/// `list`'s discriminator of `name`, then its type's bytes.
fn idl_bytes(idl: &Value, list: &str, name: &str, v: &Value) -> Vec<u8> {
    let mut out = disc(named(&idl[list], name));
    encode_defined(idl, name, v, &mut out);
    out
}

fn check_instruction<T: InstructionData>(idl: &Value, name: &str, p: Pair<T>) {
    let ix = named(&idl["instructions"], name);
    assert_eq!(disc(ix), T::DISCRIMINATOR, "{name} discriminator");
    let mut want = disc(ix);
    encode_fields(idl, &ix["args"], &p.1, &mut want, name);
    assert_eq!(p.0.data(), want, "{name} arguments");
}

fn check_account<T: AccountSerialize + Discriminator>(idl: &Value, name: &str, p: Pair<T>) {
    assert_eq!(
        disc(named(&idl["accounts"], name)),
        T::DISCRIMINATOR,
        "{name} discriminator"
    );
    let mut data = Vec::new();
    p.0.try_serialize(&mut data).unwrap();
    assert_eq!(
        data,
        idl_bytes(idl, "accounts", name, &p.1),
        "{name} layout"
    );
}

fn check_event<T: Event>(idl: &Value, name: &str, p: Pair<T>) {
    assert_eq!(
        disc(named(&idl["events"], name)),
        T::DISCRIMINATOR,
        "{name} discriminator"
    );
    assert_eq!(
        p.0.data(),
        idl_bytes(idl, "events", name, &p.1),
        "{name} layout"
    );
}

// ---- accounts of each instruction ----

/// `metas!(accounts::X { a, b, .. })`: (name, writable, signer) of each
/// account in the order the program's `to_account_metas` gives them.
macro_rules! metas {
    ($($ty:ident)::+ { $($f:ident),* $(,)? }) => {{
        $( let $f = k(); )*
        let keys: Vec<(&str, Pubkey)> = vec![$((stringify!($f), $f)),*];
        let metas = $($ty)::+ { $($f),* }.to_account_metas(None);
        metas
            .iter()
            .map(|m| {
                let name = keys
                    .iter()
                    .find(|(_, key)| *key == m.pubkey)
                    .expect("a key of the struct")
                    .0;
                (name.to_string(), m.is_writable, m.is_signer)
            })
            .collect::<Vec<_>>()
    }};
}

fn idl_accounts(ix: &Value) -> Vec<(String, bool, bool)> {
    ix["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_string(),
                a["writable"] == true,
                a["signer"] == true,
            )
        })
        .collect()
}

fn pda(seeds: &[&[u8]], program: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(seeds, program).0
}

/// The address an IDL `pda` derives, `seed` giving the bytes of each
/// account or argument seed.
fn idl_pda(pda_def: &Value, seed: &impl Fn(&str, &str) -> Vec<u8>) -> Pubkey {
    let seeds: Vec<Vec<u8>> = pda_def["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| match s["kind"].as_str().unwrap() {
            "const" => byte_list(&s["value"]),
            kind => seed(kind, s["path"].as_str().unwrap()),
        })
        .collect();
    let program = match pda_def.get("program") {
        Some(p) => {
            assert_eq!(p["kind"], "const");
            Pubkey::new_from_array(byte_list(&p["value"]).try_into().unwrap())
        }
        None => escrow::ID,
    };
    let refs: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    pda(&refs, &program)
}

#[test]
fn instructions_match_the_program() {
    let idl = idl();
    assert_eq!(idl["address"], escrow::ID.to_string());
    assert_eq!(idl["metadata"]["spec"], "0.1.0");
    let ixs = &idl["instructions"];
    use escrow::{accounts as a, instruction as i};
    type Case<'a> = (&'a str, &'a [u8], Vec<(String, bool, bool)>);
    let cases: Vec<Case> = vec![
        (
            "init_settings",
            i::InitSettings::DISCRIMINATOR,
            metas!(a::InitSettings {
                settings,
                treasury,
                admin,
                program_data,
                system_program
            }),
        ),
        (
            "list_sealed",
            i::ListSealed::DISCRIMINATOR,
            metas!(a::ListSealed {
                settings,
                listing,
                seller,
                system_program,
                event_authority,
                program
            }),
        ),
        (
            "deposit_sealed",
            i::DepositSealed::DISCRIMINATOR,
            metas!(a::DepositSealed {
                settings,
                listing,
                escrow,
                buyer,
                system_program,
                event_authority,
                program
            }),
        ),
        (
            "reveal",
            i::Reveal::DISCRIMINATOR,
            metas!(a::Reveal {
                settings,
                listing,
                escrow,
                seller,
                event_authority,
                program
            }),
        ),
        (
            "decline",
            i::Decline::DISCRIMINATOR,
            metas!(a::Decline {
                settings,
                listing,
                escrow,
                seller,
                event_authority,
                program
            }),
        ),
        (
            "claim",
            i::Claim::DISCRIMINATOR,
            metas!(a::Claim {
                settings,
                listing,
                escrow,
                seller,
                treasury,
                event_authority,
                program
            }),
        ),
        (
            "refund_sealed",
            i::RefundSealed::DISCRIMINATOR,
            metas!(a::RefundSealed {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "dispute",
            i::Dispute::DISCRIMINATOR,
            metas!(a::Dispute {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "dispute_step",
            i::DisputeStep::DISCRIMINATOR,
            metas!(a::Dispute {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "dispute_link",
            i::DisputeLink::DISCRIMINATOR,
            metas!(a::Dispute {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "expire",
            i::Expire::DISCRIMINATOR,
            metas!(a::Expire {
                settings,
                listing,
                escrow,
                event_authority,
                program
            }),
        ),
        (
            "retire_sealed",
            i::RetireSealed::DISCRIMINATOR,
            metas!(a::RetireSealed {
                listing,
                seller,
                event_authority,
                program
            }),
        ),
        (
            "list_sealed_token",
            i::ListSealedToken::DISCRIMINATOR,
            metas!(a::ListSealedToken {
                settings,
                listing,
                seller,
                mint,
                treasury,
                treasury_token,
                token_program,
                associated_token_program,
                system_program,
                event_authority,
                program
            }),
        ),
        (
            "deposit_sealed_token",
            i::DepositSealedToken::DISCRIMINATOR,
            metas!(a::DepositSealedToken {
                settings,
                listing,
                escrow,
                buyer,
                mint,
                buyer_token,
                vault,
                token_program,
                associated_token_program,
                system_program,
                event_authority,
                program
            }),
        ),
        (
            "claim_token",
            i::ClaimToken::DISCRIMINATOR,
            metas!(a::ClaimToken {
                settings,
                listing,
                escrow,
                seller,
                mint,
                vault,
                seller_token,
                treasury_token,
                token_program,
                event_authority,
                program
            }),
        ),
        (
            "refund_sealed_token",
            i::RefundSealedToken::DISCRIMINATOR,
            metas!(a::ExitToken {
                settings,
                listing,
                escrow,
                buyer,
                mint,
                vault,
                buyer_token,
                token_program,
                event_authority,
                program
            }),
        ),
        (
            "dispute_token",
            i::DisputeToken::DISCRIMINATOR,
            metas!(a::DisputeToken {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "dispute_step_token",
            i::DisputeStepToken::DISCRIMINATOR,
            metas!(a::DisputeToken {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "dispute_link_token",
            i::DisputeLinkToken::DISCRIMINATOR,
            metas!(a::DisputeToken {
                settings,
                listing,
                escrow,
                buyer,
                event_authority,
                program
            }),
        ),
        (
            "quote_usd",
            i::QuoteUsd::DISCRIMINATOR,
            metas!(a::QuoteUsd {
                price_update,
                event_authority,
                program
            }),
        ),
    ];
    assert_eq!(
        names(ixs),
        cases.iter().map(|c| c.0.to_string()).collect::<Vec<_>>(),
        "instructions, in the program's order"
    );
    for (name, d, metas) in cases {
        let ix = named(ixs, name);
        assert_eq!(disc(ix), d, "{name} discriminator");
        assert_eq!(idl_accounts(ix), metas, "{name} accounts");
    }

    // arguments: the IDL's names, order and types give the program's bytes
    check_instruction(
        &idl,
        "init_settings",
        both!(i::InitSettings {
            args: settings_args()
        }),
    );
    check_instruction(
        &idl,
        "list_sealed",
        both!(i::ListSealed {
            listing_id: String::from("20261123-abcdefabcdef"),
            terms: terms(),
            stake: u64::MAX - 9,
            max_open: 0x0a0b_0c0du32,
        }),
    );
    check_instruction(
        &idl,
        "deposit_sealed",
        both!(i::DepositSealed {
            terms: terms(),
            blind_point: [13u8; 32],
            buyer_x25519: [14u8; 32],
        }),
    );
    check_instruction(
        &idl,
        "reveal",
        both!(i::Reveal {
            revealed: [15u8; 32]
        }),
    );
    check_instruction(&idl, "decline", both!(i::Decline {}));
    check_instruction(&idl, "claim", both!(i::Claim {}));
    check_instruction(&idl, "refund_sealed", both!(i::RefundSealed {}));
    check_instruction(&idl, "dispute", both!(i::Dispute { proof: proof() }));
    check_instruction(
        &idl,
        "dispute_step",
        both!(i::DisputeStep {
            proof: step_proof()
        }),
    );
    check_instruction(
        &idl,
        "dispute_link",
        both!(i::DisputeLink {
            proof: link_proof()
        }),
    );
    check_instruction(&idl, "expire", both!(i::Expire {}));
    check_instruction(&idl, "retire_sealed", both!(i::RetireSealed {}));
    check_instruction(
        &idl,
        "list_sealed_token",
        both!(i::ListSealedToken {
            listing_id: String::from("20261123-abcdefabcdef"),
            terms: terms(),
            stake: u64::MAX - 10,
            max_open: 0x0e0f_1011u32,
        }),
    );
    check_instruction(
        &idl,
        "deposit_sealed_token",
        both!(i::DepositSealedToken {
            terms: terms(),
            blind_point: [16u8; 32],
            buyer_x25519: [17u8; 32],
        }),
    );
    check_instruction(&idl, "claim_token", both!(i::ClaimToken {}));
    check_instruction(&idl, "refund_sealed_token", both!(i::RefundSealedToken {}));
    check_instruction(
        &idl,
        "dispute_token",
        both!(i::DisputeToken { proof: proof() }),
    );
    check_instruction(
        &idl,
        "dispute_step_token",
        both!(i::DisputeStepToken {
            proof: step_proof()
        }),
    );
    check_instruction(
        &idl,
        "dispute_link_token",
        both!(i::DisputeLinkToken {
            proof: link_proof()
        }),
    );
    check_instruction(
        &idl,
        "quote_usd",
        both!(i::QuoteUsd {
            args: usd_quote_args()
        }),
    );
}

/// Every PDA of the IDL derives the address the program's seeds
/// (`escrow::constants`) give; `system_program` is the System program.
#[test]
fn pda_seeds_match_the_program() {
    use escrow::constants::{SEALED_ESCROW_SEED, SEALED_LISTING_SEED, SETTINGS_SEED};
    let idl = idl();
    let (seller, buyer) = (k(), k());
    let id = "20261123-abcdefabcdef";
    let listing = pda(
        &[SEALED_LISTING_SEED, seller.as_ref(), id.as_bytes()],
        &escrow::ID,
    );
    let want = |name: &str| -> Pubkey {
        match name {
            "settings" => pda(&[SETTINGS_SEED], &escrow::ID),
            "listing" => listing,
            "escrow" => pda(
                &[SEALED_ESCROW_SEED, listing.as_ref(), buyer.as_ref()],
                &escrow::ID,
            ),
            "program_data" => pda(
                &[escrow::ID.as_ref()],
                &solana_sdk::pubkey!("BPFLoaderUpgradeab1e11111111111111111111111"),
            ),
            "event_authority" => escrow::EVENT_AUTHORITY_AND_BUMP.0,
            other => panic!("{other} is no PDA of the program"),
        }
    };
    // what each seed path names, in the state `want` describes
    let seed = |kind: &str, path: &str| -> Vec<u8> {
        match (kind, path) {
            ("account", "seller" | "listing.seller") => seller.to_bytes().to_vec(),
            ("account", "buyer" | "escrow.buyer") => buyer.to_bytes().to_vec(),
            ("account", "listing") => listing.to_bytes().to_vec(),
            ("account", "listing.listing_id") | ("arg", "listing_id") => id.as_bytes().to_vec(),
            _ => panic!("unexpected seed {kind} {path}"),
        }
    };
    let mut seen = 0;
    for ix in idl["instructions"].as_array().unwrap() {
        let ix_name = ix["name"].as_str().unwrap();
        for acc in ix["accounts"].as_array().unwrap() {
            let name = acc["name"].as_str().unwrap();
            match name {
                "settings" | "listing" | "escrow" | "program_data" | "event_authority" => {
                    assert!(acc.get("pda").is_some(), "{ix_name}.{name} has no pda");
                    assert_eq!(idl_pda(&acc["pda"], &seed), want(name), "{ix_name}.{name}");
                    seen += 1;
                }
                "program" => assert_eq!(acc["address"], escrow::ID.to_string()),
                "system_program" => {
                    assert_eq!(acc["address"], "11111111111111111111111111111111");
                    assert!(acc.get("pda").is_none(), "{ix_name}.{name}");
                }
                "associated_token_program" => {
                    assert_eq!(
                        acc["address"],
                        escrow::token::vault::ATA_PROGRAM.to_string()
                    );
                }
                _ => assert!(acc.get("pda").is_none(), "{ix_name}.{name} is no PDA"),
            }
        }
    }
    assert_eq!(seen, 71, "PDAs checked");
}

#[test]
fn accounts_events_and_types_match_the_program() {
    let idl = idl();
    assert_eq!(
        names(&idl["accounts"]),
        ["SealedEscrow", "SealedListing", "Settings"]
    );
    check_account(
        &idl,
        "Settings",
        both!(st::Settings {
            admin: k(),
            treasury: k(),
            fee_bps: 0x1112u16,
            slash_bps: 0x1314u16,
            release_window_secs: -15i64,
            dispute_window_secs: -16i64,
            min_stake: u64::MAX - 17,
            bump: 18u8,
        }),
    );
    for listing_status in [
        SealedListingStatus::Live,
        SealedListingStatus::Retired,
        SealedListingStatus::Convicted,
    ] {
        check_account(
            &idl,
            "SealedListing",
            both!(st::SealedListing {
                seller: k(),
                listing_id: String::from("20261123-abcdefabcdef"),
                terms: terms(),
                stake: u64::MAX - 19,
                status: listing_status,
                open_escrows: 0x1415_1617u32,
                bump: 24u8,
                mint: k(),
                reserved: u64::MAX - 51,
                max_open: 0x5253_5455u32,
            }),
        );
    }
    for escrow_status in [
        SealedEscrowStatus::Deposited,
        SealedEscrowStatus::Revealed,
        SealedEscrowStatus::Declined,
        SealedEscrowStatus::Claimed,
        SealedEscrowStatus::Expired,
    ] {
        check_account(
            &idl,
            "SealedEscrow",
            both!(st::SealedEscrow {
                listing: k(),
                buyer: k(),
                buyer_x25519: [25u8; 32],
                blind_point: [26u8; 32],
                amount: u64::MAX - 27,
                deposited_at: -28i64,
                status: escrow_status,
                revealed: [29u8; 32],
                revealed_at: -30i64,
                bump: 31u8,
                share: u64::MAX - 56,
            }),
        );
    }

    for (name, n) in [("SealedListingStatus", 3), ("SealedEscrowStatus", 5)] {
        let variants = &named(&idl["types"], name)["type"]["variants"];
        assert_eq!(variants.as_array().unwrap().len(), n, "{name} variants");
    }

    assert_eq!(
        names(&idl["events"]),
        [
            "DepositDeclined",
            "EscrowExpired",
            "FraudProven",
            "KeyRevealed",
            "PaymentClaimed",
            "SealedDeposited",
            "SealedListed",
            "SealedRefunded",
            "SealedRetired",
            "UsdQuoted"
        ]
    );
    check_event(
        &idl,
        "UsdQuoted",
        both!(escrow::UsdQuoted {
            price_update: k(),
            feed_id: [43u8; 32],
            price: -44i64,
            conf: u64::MAX - 45,
            exponent: -46i32,
            publish_time: -47i64,
            usd_micros: u64::MAX - 48,
            decimals: 49u8,
            max_age_secs: 0x3334_3536u32,
            max_conf_bps: 0x3738u16,
            units: u64::MAX - 50,
        }),
    );
    check_event(
        &idl,
        "SealedListed",
        both!(ev::SealedListed {
            listing: k(),
            seller: k(),
            price_lamports: u64::MAX - 32,
            stake: u64::MAX - 33,
        }),
    );
    check_event(
        &idl,
        "SealedDeposited",
        both!(ev::SealedDeposited {
            listing: k(),
            escrow: k(),
            buyer: k(),
            amount: u64::MAX - 34,
            mint: k(),
            deposited_at: i64::MIN + 35,
        }),
    );
    check_event(
        &idl,
        "KeyRevealed",
        both!(ev::KeyRevealed {
            escrow: k(),
            revealed: [35u8; 32],
        }),
    );
    check_event(
        &idl,
        "DepositDeclined",
        both!(ev::DepositDeclined { escrow: k() }),
    );
    check_event(
        &idl,
        "PaymentClaimed",
        both!(ev::PaymentClaimed {
            escrow: k(),
            to_seller: u64::MAX - 36,
            fee: u64::MAX - 37,
        }),
    );
    check_event(
        &idl,
        "SealedRefunded",
        both!(ev::SealedRefunded {
            escrow: k(),
            amount: u64::MAX - 38,
            slashed: u64::MAX - 39,
        }),
    );
    check_event(
        &idl,
        "FraudProven",
        both!(ev::FraudProven {
            escrow: k(),
            index: 0x2829_2a2bu32,
            amount: u64::MAX - 40,
            slashed: u64::MAX - 41,
        }),
    );
    check_event(
        &idl,
        "EscrowExpired",
        both!(ev::EscrowExpired {
            escrow: k(),
            slashed: u64::MAX - 57,
        }),
    );
    check_event(
        &idl,
        "SealedRetired",
        both!(ev::SealedRetired {
            listing: k(),
            stake_returned: u64::MAX - 42,
        }),
    );

    // every type the IDL defines is one checked above
    let mut types = names(&idl["types"]);
    types.sort();
    let mut want: Vec<String> = [
        "DepositDeclined",
        "EscrowExpired",
        "FraudProof",
        "FraudProven",
        "KeyRevealed",
        "LeafFields",
        "LinkFraud",
        "PaymentClaimed",
        "SealedDeposited",
        "SealedEscrow",
        "SealedEscrowStatus",
        "SealedListed",
        "SealedListing",
        "SealedListingStatus",
        "SealedRefunded",
        "SealedRetired",
        "SealedTerms",
        "Settings",
        "SettingsArgs",
        "StepFraud",
        "UsdQuoteArgs",
        "UsdQuoted",
    ]
    .map(String::from)
    .to_vec();
    want.sort();
    assert_eq!(types, want);
}

/// Never called: a variant added to the program makes one of these
/// matches non-exhaustive and the test fails to compile until the lists
/// in the tests (and the IDL) take it.
#[allow(dead_code)]
fn every_variant_is_listed(e: EscrowError, l: SealedListingStatus, s: SealedEscrowStatus) {
    use EscrowError::*;
    match e {
        FeeTooHigh
        | SlashTooHigh
        | BadListingId
        | ZeroPrice
        | StakeTooLow
        | ExpiryInPast
        | ListingClosed
        | ListingExpired
        | NotSeller
        | NotBuyer
        | ReleaseWindowOpen
        | OpenEscrows
        | Overflow
        | WrongTreasury
        | WrongListing
        | NotUpgradeAuthority
        | WindowOutOfRange
        | ZeroMinStake
        | ZeroSlash
        | BadPoint
        | LowOrderKey
        | BadPlainLen
        | TermsMismatch
        | StakeBelowFloor
        | ReleaseWindowClosed
        | WrongReveal
        | WrongEscrowState
        | DisputeWindowOpen
        | DisputeWindowClosed
        | ProofWrongKey
        | ProofBadChunk
        | ProofBadPath
        | NoFraud
        | ListingConvicted
        | PriceNotPyth
        | PriceStale
        | PriceUncertain
        | PriceOtherFeed
        | PriceUnusable
        | PriceMoved
        | ListingInToken
        | ListingInLamports
        | WrongMint
        | NotAMint
        | WrongTokenProgram
        | WrongVault
        | DepositShort
        | WrongSellerAccount
        | MintExtension
        | TooManyOpen
        | StakeReserved
        | ZeroMaxOpen
        | TreasuryNotRentExempt
        | NotExpirable
        | ZeroShare
        | TreasuryFrozen => {}
    }
    match l {
        SealedListingStatus::Live
        | SealedListingStatus::Retired
        | SealedListingStatus::Convicted => {}
    }
    match s {
        SealedEscrowStatus::Deposited
        | SealedEscrowStatus::Revealed
        | SealedEscrowStatus::Declined
        | SealedEscrowStatus::Claimed
        | SealedEscrowStatus::Expired => {}
    }
}

#[test]
fn errors_match_the_program() {
    let idl = idl();
    use EscrowError::*;
    let all = [
        FeeTooHigh,
        SlashTooHigh,
        BadListingId,
        ZeroPrice,
        StakeTooLow,
        ExpiryInPast,
        ListingClosed,
        ListingExpired,
        NotSeller,
        NotBuyer,
        ReleaseWindowOpen,
        OpenEscrows,
        Overflow,
        WrongTreasury,
        WrongListing,
        NotUpgradeAuthority,
        WindowOutOfRange,
        ZeroMinStake,
        ZeroSlash,
        BadPoint,
        LowOrderKey,
        BadPlainLen,
        TermsMismatch,
        StakeBelowFloor,
        ReleaseWindowClosed,
        WrongReveal,
        WrongEscrowState,
        DisputeWindowOpen,
        DisputeWindowClosed,
        ProofWrongKey,
        ProofBadChunk,
        ProofBadPath,
        NoFraud,
        ListingConvicted,
        PriceNotPyth,
        PriceStale,
        PriceUncertain,
        PriceOtherFeed,
        PriceUnusable,
        PriceMoved,
        ListingInToken,
        ListingInLamports,
        WrongMint,
        NotAMint,
        WrongTokenProgram,
        WrongVault,
        DepositShort,
        WrongSellerAccount,
        MintExtension,
        TooManyOpen,
        StakeReserved,
        ZeroMaxOpen,
        TreasuryNotRentExempt,
        NotExpirable,
        ZeroShare,
        TreasuryFrozen,
    ];
    let errors = idl["errors"].as_array().unwrap();
    assert_eq!(errors.len(), all.len());
    for (i, (e, want)) in all.into_iter().zip(errors).enumerate() {
        assert_eq!(want["name"], format!("{e:?}"));
        assert_eq!(want["msg"], e.to_string());
        assert_eq!(
            want["code"],
            anchor_lang::error::ERROR_CODE_OFFSET + e as u32
        );
        // the list above is the enum in order, with nothing left out
        assert_eq!(e as usize, i, "{e:?} is not the enum's variant {i}");
    }
}
