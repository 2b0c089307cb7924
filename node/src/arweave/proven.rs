//! Gateway downloads proven to be the ANS-104 item asked for.
//! `GET <gateway>/<id>` answers an item's data and nothing that ties it to
//! the id, so a lying or glitching gateway can answer any bytes. The
//! item's signed header is asked of the same gateway's GraphQL
//! (`transaction(id:) { signature owner { key } recipient anchor tags {
//! name value } }`, served alike by arlocal, which keeps every item of the
//! bundles it is posted, and by ar.io gateways), and the data counts as
//! item `id` only when
//! 1. `id` = base64url(SHA-256(signature)), and
//! 2. the signature is type 2 (a 32-byte Ed25519 owner, 64-byte
//!    signature) and verifies strictly under the owner over the deep hash
//!    of `["dataitem","1","2", owner, target, anchor, Avro(tags), data]`
//!    (PROTOCOL.md §5), the tags Avro-encoded as every uploader does.
//!
//! Why this is sound although the gateway answers both halves: the id is
//! a SHA-256 preimage commitment to the signature bytes, so the gateway
//! cannot choose another signature; strict Ed25519 verification (no
//! small-order key or `R`, canonical `S`) binds a signature to one key and
//! one message, so it cannot choose another owner, tags or anchor either;
//! and the message is a SHA-384 deep hash over the data, so no other data
//! passes. Whatever else the gateway lies about (tags, owner, anchor) can
//! only make the check fail, never pass with other data. What this cannot
//! prove is refused, never guessed: an item whose tags are not UTF-8 or
//! were encoded otherwise, one the GraphQL does not index yet (reported
//! as not found: ask again later), or other signature types.
//!
//! Owns the proof only: never caches, never reads what the data means.

use super::http::{body_capped, client};
use super::item::DataItem;
use super::tags::Tag;
use super::StorageError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use serde_json::{json, Value};

/// Largest GraphQL answer read (a header with its tags).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The GraphQL query of one item's signed header.
fn query(id: &str) -> Value {
    json!({
        "query": format!(
            "query {{ transaction(id: \"{id}\") {{ signature owner {{ key }} recipient anchor tags {{ name value }} }} }}"
        )
    })
}

fn valid_id(id: &str) -> bool {
    id.len() == 43
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Item `id` from `gateway`: its signed header (GraphQL) and its data
/// (`GET /{id}`, at most `max_bytes`), proven to be that item.
pub async fn download_item(
    gateway: &str,
    id: &str,
    max_bytes: usize,
) -> Result<DataItem, StorageError> {
    if !valid_id(id) {
        return Err(StorageError::BadId(id.chars().take(64).collect()));
    }
    let url = format!("{}/graphql", gateway.trim_end_matches('/'));
    let req = client()?.post(&url).json(&query(id));
    let answer = body_capped(&url, req, MAX_HEADER_BYTES).await?;
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| StorageError::Http(format!("{url}: not a GraphQL answer: {e}")))?;
    // the header first: a wrong signature is refused before any data moves
    let header = header(id, &answer)?;
    let data = super::http::download(gateway, id, max_bytes).await?;
    prove(id, header, data)
}

/// The signed header of `id` in a GraphQL answer, its signature already
/// checked against the id; `NotFound` when the gateway has none (yet).
pub fn header(id: &str, answer: &Value) -> Result<DataItem, StorageError> {
    let tx = answer.pointer("/data/transaction").unwrap_or(&Value::Null);
    let not_yet = || {
        StorageError::NotFound(format!(
            "{id} (the gateway's GraphQL has no signed header for it yet)"
        ))
    };
    if tx.is_null() || tx.get("signature").is_none_or(Value::is_null) {
        return Err(not_yet());
    }
    let bad = |why: String| StorageError::NotTheItem { id: id.into(), why };
    let bytes = |field: &str| -> Result<Vec<u8>, StorageError> {
        let text = match tx.pointer(field) {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s,
            Some(other) => return Err(bad(format!("`{field}` is not a string: {other}"))),
        };
        B64URL
            .decode(text.trim_end_matches('='))
            .map_err(|_| bad(format!("`{field}` is not base64url")))
    };
    let signature: [u8; 64] = bytes("/signature")?.try_into().map_err(|s: Vec<u8>| {
        bad(format!(
            "the signature is {} bytes: only Ed25519 items (signature type 2, 64 bytes) are accepted",
            s.len()
        ))
    })?;
    let got = B64URL.encode(crate::crypto::sha256(&signature));
    if got != id {
        return Err(StorageError::IdMismatch {
            want: id.into(),
            got,
        });
    }
    let owner: [u8; 32] = bytes("/owner/key")?.try_into().map_err(|o: Vec<u8>| {
        bad(format!(
            "the owner key is {} bytes: only Ed25519 items (signature type 2, 32-byte owner) are accepted",
            o.len()
        ))
    })?;
    let optional = |field: &str| -> Result<Option<[u8; 32]>, StorageError> {
        match bytes(field)? {
            b if b.is_empty() => Ok(None),
            b => b
                .try_into()
                .map(Some)
                .map_err(|b: Vec<u8>| bad(format!("`{field}` is {} bytes, not 32", b.len()))),
        }
    };
    let tags = match tx.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tags)) => tags
            .iter()
            .map(|t| match (t["name"].as_str(), t["value"].as_str()) {
                (Some(n), Some(v)) => Ok(Tag::new(n, v)),
                _ => Err(bad(format!("a tag is not a name/value pair: {t}"))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(bad(format!("`tags` is not a list: {other}"))),
    };
    Ok(DataItem {
        signature,
        owner,
        target: optional("/recipient")?,
        anchor: optional("/anchor")?,
        tags,
        data: Vec::new(),
    })
}

/// `header` (from [`header`]) with `data`, if its signature covers them.
pub fn prove(id: &str, header: DataItem, data: Vec<u8>) -> Result<DataItem, StorageError> {
    let item = DataItem { data, ..header };
    item.verify().map_err(|e| StorageError::NotTheItem {
        id: id.into(),
        why: format!("{e} over the data served (a different body, or a header it does not sign)"),
    })?;
    Ok(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wallet::Wallet;

    /// What arlocal answers for an item (the shape seen on arlocal 1.1.66).
    fn graphql(item: &DataItem) -> Value {
        json!({"data": {"transaction": {
            "signature": B64URL.encode(item.signature),
            "owner": {"key": B64URL.encode(item.owner)},
            "recipient": item.target.map(|t| B64URL.encode(t)).unwrap_or_default(),
            "anchor": item.anchor.map(|a| B64URL.encode(a)).unwrap_or_default(),
            "tags": item.tags.iter().map(|t| json!({"name": t.name, "value": t.value})).collect::<Vec<_>>(),
        }}})
    }

    fn item(data: &[u8], anchor: Option<[u8; 32]>) -> DataItem {
        let w = Wallet::from_seed(&[7u8; 32]);
        let tags = vec![
            Tag::new("Content-Type", "application/json"),
            Tag::new("App-Name", "brainctl"),
        ];
        DataItem::sign(&w, data.to_vec(), tags, None, anchor).unwrap()
    }

    #[test]
    fn the_items_own_header_and_data_prove_it() {
        for it in [item(b"{\"a\":1}", None), item(b"{}", Some([3u8; 32]))] {
            let id = it.id();
            let h = header(&id, &graphql(&it)).unwrap();
            assert_eq!(prove(&id, h, it.data.clone()).unwrap(), it);
        }
    }

    #[test]
    fn another_body_another_header_or_a_doctored_tag_is_refused() {
        let (honest, other) = (item(b"{\"price\":1}", None), item(b"{\"price\":2}", None));
        let id = honest.id();
        // the right header with another body
        let h = header(&id, &graphql(&honest)).unwrap();
        let e = prove(&id, h, other.data.clone()).unwrap_err();
        assert!(matches!(e, StorageError::NotTheItem { .. }), "{e}");
        assert!(e.to_string().contains(&id), "{e}");
        // another item's header and body under this id
        assert!(matches!(
            header(&id, &graphql(&other)),
            Err(StorageError::IdMismatch { .. })
        ));
        // a doctored tag or anchor in the right header
        let mut doctored = graphql(&honest);
        doctored["data"]["transaction"]["tags"][1]["value"] = json!("evil");
        let h = header(&id, &doctored).unwrap();
        assert!(prove(&id, h, honest.data.clone()).is_err());
        let mut anchored = graphql(&honest);
        anchored["data"]["transaction"]["anchor"] = json!(B64URL.encode([1u8; 32]));
        let h = header(&id, &anchored).unwrap();
        assert!(prove(&id, h, honest.data.clone()).is_err());
    }

    #[test]
    fn missing_or_malformed_headers_are_typed_errors_never_panics() {
        let it = item(b"{}", None);
        let id = it.id();
        for answer in [
            json!({"data": {"transaction": null}}),
            json!({"data": {"transaction": {"signature": null}}}),
            json!({}),
        ] {
            assert!(
                matches!(header(&id, &answer), Err(StorageError::NotFound(_))),
                "{answer}"
            );
        }
        let mut g = graphql(&it);
        for (field, value) in [
            ("signature", json!("!!")),
            ("signature", json!(B64URL.encode([1u8; 512]))),
            ("signature", json!(5)),
            ("tags", json!("x")),
            ("tags", json!([{"name": 1}])),
            ("recipient", json!(B64URL.encode([1u8; 5]))),
        ] {
            let keep = g["data"]["transaction"][field].clone();
            g["data"]["transaction"][field] = value;
            assert!(header(&id, &g).is_err(), "{field}");
            g["data"]["transaction"][field] = keep;
        }
        g["data"]["transaction"]["owner"]["key"] = json!(B64URL.encode([1u8; 512]));
        assert!(matches!(
            header(&id, &g),
            Err(StorageError::NotTheItem { .. })
        ));
    }
}
