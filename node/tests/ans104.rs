//! ANS-104 items against vectors from the independent `arbundles`
//! implementation (tests/fixtures/ans104/vectors.json, made by
//! tools/ans104-vectors.js): same bytes, same ids, both directions.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use node::arweave::{DataItem, ItemError, Tag};
use node::wallet::Wallet;
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/ans104/vectors.json"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["vectors"].as_array().unwrap().clone()
}

fn arr32(v: &Value, hex_field: bool) -> Option<[u8; 32]> {
    let s = v.as_str()?;
    let bytes = if hex_field {
        hex::decode(s).unwrap()
    } else {
        s.as_bytes().to_vec()
    };
    Some(bytes.try_into().unwrap())
}

#[test]
fn arbundles_items_parse_and_verify() {
    for v in vectors() {
        let raw = STANDARD.decode(v["raw_b64"].as_str().unwrap()).unwrap();
        let item = DataItem::from_bytes(&raw).unwrap_or_else(|e| panic!("{}: {e}", v["name"]));
        assert_eq!(item.id(), v["id"].as_str().unwrap(), "{}", v["name"]);
        assert_eq!(item.owner_address(), v["owner_b58"].as_str().unwrap());
        assert_eq!(STANDARD.encode(&item.data), v["data_b64"].as_str().unwrap());
        assert_eq!(item.tags.len(), v["tags"].as_array().unwrap().len());
        assert_eq!(item.to_bytes(), raw, "{}: re-serialization", v["name"]);
    }
}

#[test]
fn our_items_equal_arbundles_bytes() {
    for v in vectors() {
        let seed: [u8; 32] = hex::decode(v["seed_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let wallet = Wallet::from_seed(&seed);
        let tags = v["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| Tag::new(t["name"].as_str().unwrap(), t["value"].as_str().unwrap()))
            .collect();
        let data = STANDARD.decode(v["data_b64"].as_str().unwrap()).unwrap();
        let item = DataItem::sign(
            &wallet,
            data,
            tags,
            arr32(&v["target_hex"], true),
            arr32(&v["anchor"], false),
        )
        .unwrap();
        assert_eq!(
            STANDARD.encode(item.to_bytes()),
            v["raw_b64"].as_str().unwrap(),
            "{}",
            v["name"]
        );
        assert_eq!(item.id(), v["id"].as_str().unwrap());
    }
}

#[test]
fn tampered_and_truncated_items_are_typed_errors() {
    let raw = STANDARD
        .decode(vectors()[1]["raw_b64"].as_str().unwrap())
        .unwrap();
    let mut flipped = raw.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert_eq!(
        DataItem::from_bytes(&flipped).unwrap_err(),
        ItemError::BadSignature
    );
    for cut in [0, 1, 2, 60, 98, 100, 140, raw.len() - 200] {
        assert!(DataItem::from_bytes(&raw[..cut]).is_err(), "cut at {cut}");
    }
    let mut other_type = raw.clone();
    other_type[0] = 1;
    assert_eq!(
        DataItem::from_bytes(&other_type).unwrap_err(),
        ItemError::SigType(1)
    );
}
