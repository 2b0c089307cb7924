//! ANS-104 tags: Avro `array<record{name: bytes, value: bytes}>`, with the
//! ANS-104 limits (≤128 tags, names ≤1024 bytes, values ≤3072 bytes, both
//! non-empty names). No tags encode as zero bytes (as arbundles does).

/// A tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

impl Tag {
    /// A tag from two strings.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Tag {
        Tag {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Most tags an item may carry.
pub const MAX_TAGS: usize = 128;
/// Longest tag name.
pub const MAX_NAME: usize = 1024;
/// Longest tag value.
pub const MAX_VALUE: usize = 3072;

/// Tag errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    /// Over a limit.
    #[error("tags over the ANS-104 limits: {0}")]
    Limit(&'static str),
    /// Bytes that are not valid Avro for tags.
    #[error("malformed tag bytes: {0}")]
    Malformed(&'static str),
}

fn check(tags: &[Tag]) -> Result<(), TagError> {
    if tags.len() > MAX_TAGS {
        return Err(TagError::Limit("more than 128 tags"));
    }
    for t in tags {
        if t.name.is_empty() || t.name.len() > MAX_NAME {
            return Err(TagError::Limit("a tag name is empty or over 1024 bytes"));
        }
        if t.value.len() > MAX_VALUE {
            return Err(TagError::Limit("a tag value is over 3072 bytes"));
        }
    }
    Ok(())
}

fn put_long(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get_long(b: &[u8], pos: &mut usize) -> Result<i64, TagError> {
    let mut z: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or(TagError::Malformed("truncated varint"))?;
        *pos += 1;
        z |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
        }
    }
    Err(TagError::Malformed("varint longer than 10 bytes"))
}

/// Avro-encodes tags (empty slice → empty bytes).
pub fn encode_tags(tags: &[Tag]) -> Result<Vec<u8>, TagError> {
    check(tags)?;
    if tags.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    put_long(&mut out, tags.len() as i64);
    for t in tags {
        for s in [&t.name, &t.value] {
            put_long(&mut out, s.len() as i64);
            out.extend_from_slice(s.as_bytes());
        }
    }
    out.push(0);
    Ok(out)
}

/// Decodes Avro tag bytes, strictly: every byte consumed, limits enforced.
pub fn decode_tags(b: &[u8]) -> Result<Vec<Tag>, TagError> {
    if b.is_empty() {
        return Ok(Vec::new());
    }
    let mut pos = 0;
    let mut tags = Vec::new();
    loop {
        let count = get_long(b, &mut pos)?;
        if count == 0 {
            break;
        }
        if count < 0 || count as usize > MAX_TAGS - tags.len() {
            return Err(TagError::Malformed("bad block count"));
        }
        for _ in 0..count {
            let mut two = [String::new(), String::new()];
            for s in two.iter_mut() {
                let len = get_long(b, &mut pos)?;
                let len =
                    usize::try_from(len).map_err(|_| TagError::Malformed("negative length"))?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= b.len())
                    .ok_or(TagError::Malformed("length past end"))?;
                *s = String::from_utf8(b[pos..end].to_vec())
                    .map_err(|_| TagError::Malformed("tag is not UTF-8"))?;
                pos = end;
            }
            let [name, value] = two;
            tags.push(Tag { name, value });
        }
    }
    if pos != b.len() {
        return Err(TagError::Malformed("trailing bytes"));
    }
    check(&tags)?;
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encoding() {
        // 1 tag, "a" → "b": count 1 (0x02), len 1 (0x02) 'a', len 1 'b', end 0
        assert_eq!(
            encode_tags(&[Tag::new("a", "b")]).unwrap(),
            vec![2, 2, b'a', 2, b'b', 0]
        );
        assert!(encode_tags(&[]).unwrap().is_empty());
        assert!(decode_tags(&[2, 2, b'a', 2, b'b']).is_err());
        assert!(decode_tags(&[2, 2, b'a', 2, b'b', 0, 0]).is_err());
        assert!(decode_tags(&[1]).is_err());
        assert!(encode_tags(&[Tag::new("", "x")]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(tags in proptest::collection::vec(("[a-zA-Z\u{e9}]{1,20}", ".{0,40}"), 0..10)) {
            let tags: Vec<Tag> = tags.into_iter().map(|(n, v)| Tag::new(n, v)).collect();
            prop_assert_eq!(decode_tags(&encode_tags(&tags).unwrap()).unwrap(), tags);
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_tags(&b);
        }
    }
}
