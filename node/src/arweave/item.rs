//! ANS-104 data items signed by a Solana (ed25519) key, signature type 2:
//! build and sign, parse and verify, and the item id
//! (base64url(SHA-256(signature)), 43 chars).
//!
//! Layout: sig type (u16 LE) ‖ signature (64) ‖ owner (32) ‖ target flag
//! (+32) ‖ anchor flag (+32) ‖ tag count (u64 LE) ‖ tag bytes length (u64
//! LE) ‖ Avro tags ‖ data. Parsing is strict and never panics.

use super::deep_hash::{deep_hash, Chunk};
use super::tags::{decode_tags, encode_tags, Tag, TagError};
use crate::crypto::sha256;
use crate::wallet::Wallet;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};

/// Signature type of ed25519 (Solana) signers.
pub const SIG_TYPE_ED25519: u16 = 2;
/// Largest item we build or accept (the protocol's blobs are ≤ 80 KiB).
pub const MAX_ITEM_BYTES: usize = 16 * 1024 * 1024;

/// Data item errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    /// Shorter than its header says.
    #[error("data item is truncated: {0}")]
    Truncated(&'static str),
    /// A signature type other than ed25519.
    #[error("unsupported signature type {0} (only 2, ed25519, is accepted)")]
    SigType(u16),
    /// Bad presence flag.
    #[error("bad {0} presence flag (must be 0 or 1)")]
    Flag(&'static str),
    /// Tags.
    #[error(transparent)]
    Tags(#[from] TagError),
    /// Tag count field disagrees with the tags.
    #[error("tag count field says {0}, tags hold {1}")]
    TagCount(u64, usize),
    /// Signature does not verify.
    #[error("data item signature does not verify")]
    BadSignature,
    /// Over [`MAX_ITEM_BYTES`].
    #[error("data item is {0} bytes, over the {MAX_ITEM_BYTES}-byte limit")]
    TooLarge(usize),
}

/// A signed data item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataItem {
    /// Ed25519 signature.
    pub signature: [u8; 64],
    /// Signer's public key.
    pub owner: [u8; 32],
    /// Optional target.
    pub target: Option<[u8; 32]>,
    /// Optional anchor.
    pub anchor: Option<[u8; 32]>,
    /// Tags.
    pub tags: Vec<Tag>,
    /// Payload.
    pub data: Vec<u8>,
}

fn signing_message(
    owner: &[u8; 32],
    target: Option<&[u8; 32]>,
    anchor: Option<&[u8; 32]>,
    tag_bytes: &[u8],
    data: &[u8],
) -> [u8; 48] {
    deep_hash(&Chunk::List(vec![
        Chunk::Blob(b"dataitem"),
        Chunk::Blob(b"1"),
        Chunk::Blob(b"2"),
        Chunk::Blob(owner),
        Chunk::Blob(target.map_or(&[][..], |t| &t[..])),
        Chunk::Blob(anchor.map_or(&[][..], |a| &a[..])),
        Chunk::Blob(tag_bytes),
        Chunk::Blob(data),
    ]))
}

impl DataItem {
    /// Builds and signs an item with `wallet`.
    pub fn sign(
        wallet: &Wallet,
        data: Vec<u8>,
        tags: Vec<Tag>,
        target: Option<[u8; 32]>,
        anchor: Option<[u8; 32]>,
    ) -> Result<DataItem, ItemError> {
        let tag_bytes = encode_tags(&tags)?;
        let owner = wallet.pubkey();
        let msg = signing_message(&owner, target.as_ref(), anchor.as_ref(), &tag_bytes, &data);
        let item = DataItem {
            signature: wallet.sign(&msg),
            owner,
            target,
            anchor,
            tags,
            data,
        };
        if item.size() > MAX_ITEM_BYTES {
            return Err(ItemError::TooLarge(item.size()));
        }
        Ok(item)
    }

    fn size(&self) -> usize {
        2 + 64
            + 32
            + 1
            + 32 * usize::from(self.target.is_some())
            + 1
            + 32 * usize::from(self.anchor.is_some())
            + 16
            + self.data.len()
            + self
                .tags
                .iter()
                .map(|t| t.name.len() + t.value.len() + 4)
                .sum::<usize>()
    }

    /// The item id: base64url(SHA-256(signature)), 43 characters.
    pub fn id(&self) -> String {
        URL_SAFE_NO_PAD.encode(sha256(&self.signature))
    }

    /// The owner as a base58 address.
    pub fn owner_address(&self) -> String {
        bs58::encode(self.owner).into_string()
    }

    /// Value of the first tag named `name`.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.value.as_str())
    }

    /// The binary item.
    pub fn to_bytes(&self) -> Vec<u8> {
        let tag_bytes = encode_tags(&self.tags).expect("tags were checked when the item was made");
        let mut out = Vec::with_capacity(self.size());
        out.extend_from_slice(&SIG_TYPE_ED25519.to_le_bytes());
        out.extend_from_slice(&self.signature);
        out.extend_from_slice(&self.owner);
        for opt in [&self.target, &self.anchor] {
            match opt {
                Some(v) => {
                    out.push(1);
                    out.extend_from_slice(v);
                }
                None => out.push(0),
            }
        }
        out.extend_from_slice(&(self.tags.len() as u64).to_le_bytes());
        out.extend_from_slice(&(tag_bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&tag_bytes);
        out.extend_from_slice(&self.data);
        out
    }

    /// Checks the signature over this item's fields (tags Avro-encoded as
    /// [`encode_tags`] does, the encoding every uploader uses): for an
    /// item assembled from a gateway's header and data. Never panics.
    pub fn verify(&self) -> Result<(), ItemError> {
        if self.size() > MAX_ITEM_BYTES {
            return Err(ItemError::TooLarge(self.size()));
        }
        let tag_bytes = encode_tags(&self.tags)?;
        let msg = signing_message(
            &self.owner,
            self.target.as_ref(),
            self.anchor.as_ref(),
            &tag_bytes,
            &self.data,
        );
        check_signature(&self.owner, &self.signature, &msg)
    }

    /// Parses and verifies a binary item. Never panics.
    pub fn from_bytes(b: &[u8]) -> Result<DataItem, ItemError> {
        if b.len() > MAX_ITEM_BYTES {
            return Err(ItemError::TooLarge(b.len()));
        }
        let mut r = Reader { b, pos: 0 };
        let sig_type = u16::from_le_bytes(r.take::<2>("signature type")?);
        if sig_type != SIG_TYPE_ED25519 {
            return Err(ItemError::SigType(sig_type));
        }
        let signature = r.take::<64>("signature")?;
        let owner = r.take::<32>("owner")?;
        let target = r.optional("target")?;
        let anchor = r.optional("anchor")?;
        let tag_count = u64::from_le_bytes(r.take::<8>("tag count")?);
        let tag_len = u64::from_le_bytes(r.take::<8>("tag bytes length")?);
        let tag_len = usize::try_from(tag_len).map_err(|_| ItemError::Truncated("tag bytes"))?;
        let tag_bytes = r.slice(tag_len, "tag bytes")?;
        let tags = decode_tags(tag_bytes)?;
        if tag_count != tags.len() as u64 {
            return Err(ItemError::TagCount(tag_count, tags.len()));
        }
        let data = b[r.pos..].to_vec();
        let msg = signing_message(&owner, target.as_ref(), anchor.as_ref(), tag_bytes, &data);
        check_signature(&owner, &signature, &msg)?;
        Ok(DataItem {
            signature,
            owner,
            target,
            anchor,
            tags,
            data,
        })
    }
}

/// Strict Ed25519 verification (no small-order key or `R`, canonical
/// `S`): a signature then binds one key and one message.
fn check_signature(
    owner: &[u8; 32],
    signature: &[u8; 64],
    msg: &[u8; 48],
) -> Result<(), ItemError> {
    let key = VerifyingKey::from_bytes(owner).map_err(|_| ItemError::BadSignature)?;
    key.verify_strict(msg, &Signature::from_bytes(signature))
        .map_err(|_| ItemError::BadSignature)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn slice(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ItemError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or(ItemError::Truncated(what))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ItemError> {
        Ok(self.slice(N, what)?.try_into().expect("slice of N bytes"))
    }

    fn optional(&mut self, what: &'static str) -> Result<Option<[u8; 32]>, ItemError> {
        match self.take::<1>(what)?[0] {
            0 => Ok(None),
            1 => Ok(Some(self.take::<32>(what)?)),
            _ => Err(ItemError::Flag(what)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = DataItem::from_bytes(&b);
        }

        #[test]
        fn sign_parse_round_trip(data in proptest::collection::vec(any::<u8>(), 0..300), n in 0usize..4) {
            let w = Wallet::from_seed(&[4u8; 32]);
            let tags = (0..n).map(|i| Tag::new(format!("k{i}"), "v")).collect();
            let item = DataItem::sign(&w, data, tags, None, Some([9u8; 32])).unwrap();
            prop_assert_eq!(DataItem::from_bytes(&item.to_bytes()).unwrap(), item.clone());
            prop_assert!(item.verify().is_ok());
            let mut other = item;
            other.data.push(0);
            prop_assert_eq!(other.verify(), Err(ItemError::BadSignature));
        }
    }
}
