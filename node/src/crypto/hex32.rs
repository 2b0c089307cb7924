//! A 32-byte id (a Pyth feed id) as 64 hex characters in JSON (`0x`
//! accepted on read), for `#[serde(with = "crate::crypto::hex32")]`.

/// Writes it.
pub fn serialize<S: serde::Serializer>(b: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

/// Reads it.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    parse(&s).ok_or_else(|| serde::de::Error::custom("not 32 bytes of hex"))
}

/// 32 bytes from 64 hex characters (`0x` allowed).
pub fn parse(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim().trim_start_matches("0x"), &mut out).ok()?;
    Some(out)
}
