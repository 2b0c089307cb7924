//! Arweave deep-hash (SHA-384) of nested byte lists, as ANS-104 signs it.
//!
//! blob: SHA-384(SHA-384("blob" ‖ len) ‖ SHA-384(bytes));
//! list: acc = SHA-384("list" ‖ len), then acc = SHA-384(acc ‖ deep(item)).

use sha2::{Digest, Sha384};

/// A deep-hash input: bytes or a list of inputs.
pub enum Chunk<'a> {
    /// Raw bytes.
    Blob(&'a [u8]),
    /// Nested list.
    List(Vec<Chunk<'a>>),
}

/// The 48-byte deep hash.
pub fn deep_hash(chunk: &Chunk<'_>) -> [u8; 48] {
    match chunk {
        Chunk::Blob(data) => {
            let tag = Sha384::digest(format!("blob{}", data.len()).as_bytes());
            let body = Sha384::digest(data);
            let mut h = Sha384::new();
            h.update(tag);
            h.update(body);
            h.finalize().into()
        }
        Chunk::List(items) => {
            let mut acc: [u8; 48] =
                Sha384::digest(format!("list{}", items.len()).as_bytes()).into();
            for item in items {
                let mut h = Sha384::new();
                h.update(acc);
                h.update(deep_hash(item));
                acc = h.finalize().into();
            }
            acc
        }
    }
}
