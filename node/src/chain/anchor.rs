//! Anchor wire helpers shared by the program clients (`escrow`,
//! `mint::light`): 8-byte discriminators and a strict Borsh reader that
//! never panics on short or hostile input.
//!
//! Owns byte-level decoding only; each client knows its own layouts.

use crate::crypto::sha256;
use solana_sdk::pubkey::Pubkey;

/// The 8-byte Anchor discriminator of `kind:name` (`global`, `account`, `event`).
pub fn discriminator(kind: &str, name: &str) -> [u8; 8] {
    sha256(format!("{kind}:{name}").as_bytes())[..8]
        .try_into()
        .expect("8 bytes")
}

/// Why Borsh bytes did not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Fewer bytes than the layout needs.
    #[error("truncated")]
    Truncated,
    /// An `Option` tag other than 0 or 1.
    #[error("bad option tag")]
    BadOptionTag,
    /// A length over the caller's cap.
    #[error("length over its cap")]
    TooLong,
    /// A string that is not UTF-8.
    #[error("string is not UTF-8")]
    NotUtf8,
}

/// A cursor over Borsh bytes.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        if self.0.len() < n {
            return Err(ReadError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    /// A `u8`.
    pub fn u8(&mut self) -> Result<u8, ReadError> {
        Ok(self.take(1)?[0])
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, ReadError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, ReadError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A 32-byte key.
    pub fn key(&mut self) -> Result<Pubkey, ReadError> {
        Ok(Pubkey::new_from_array(
            self.take(32)?.try_into().expect("32"),
        ))
    }

    /// An `Option` tag: whether a value follows.
    pub fn option(&mut self) -> Result<bool, ReadError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(ReadError::BadOptionTag),
        }
    }

    /// A length-prefixed UTF-8 string of at most `max` bytes.
    pub fn string(&mut self, max: usize) -> Result<String, ReadError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(ReadError::TooLong);
        }
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| ReadError::NotUtf8)
    }
}
