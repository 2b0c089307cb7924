//! The fast verify path: a signed bundle file's text read once, straight
//! into the canonical bytes of its inner bundle (sorted keys, Python's
//! number and string forms), with no JSON tree in between.
//!
//! It claims a verdict only on documents it fully understands: well-formed
//! JSON, no duplicate keys, every required field of the right type, scalar
//! memory fields. Anything else (invalid JSON, a malformed bundle, deep
//! nesting, duplicate keys) is left to the tree path (`signed::verify_value`),
//! which owns the exact error texts; so both paths give the same verdicts
//! and reports, and the tests compare them on hostile inputs.
//!
//! Numbers and escaped strings are decoded by `serde_json` itself, one
//! token at a time, so their values are exactly what the tree path sees.
//! Never panics on any input; recursion is bounded.

use super::canonical::{write_number, write_str};
use super::model::BUNDLE_COLUMNS;
use std::borrow::Cow;

/// Deepest nesting handled here (the tree path takes deeper documents).
const MAX_DEPTH: usize = 64;

/// What the fast path cannot judge: the caller takes the tree path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsure;

type R<T> = Result<T, Unsure>;

/// The outer document as read: the canonical inner bundle and the fields
/// verification needs.
#[derive(Debug, Default)]
pub(crate) struct Outer {
    /// Canonical bytes of `bundle`.
    pub bundle_canonical: Vec<u8>,
    /// Rows in `bundle.memories`.
    pub memories_count: usize,
    /// `version` as an integer.
    pub version: Option<i64>,
    /// The string fields, when present.
    pub bundle_hash_hex: Option<String>,
    /// Base58 signature.
    pub signature_b58: Option<String>,
    /// Base58 signer.
    pub signer_pubkey_b58: Option<String>,
    /// Signing time.
    pub signed_at: Option<String>,
}

/// Where in the document a value sits (what it must look like).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Anywhere without rules.
    Free,
    /// The inner bundle object.
    Bundle,
    /// `bundle.memories`.
    Memories,
    /// One element of `bundle.memories`.
    Row,
    /// A field of a row named by a bundle column: must be a scalar.
    Column,
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    memories: Option<usize>,
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && is_ws(self.b[self.i]) {
            self.i += 1;
        }
    }

    fn peek(&self) -> R<u8> {
        self.b.get(self.i).copied().ok_or(Unsure)
    }

    fn eat(&mut self, c: u8) -> R<()> {
        if self.peek()? == c {
            self.i += 1;
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// A string token (quotes included) and whether it can be copied as
    /// is into canonical output (printable ASCII, no escapes).
    fn string_token(&mut self) -> R<(&'a [u8], bool)> {
        let start = self.i;
        self.eat(b'"')?;
        let mut plain = true;
        loop {
            let rest = &self.b[self.i..];
            let off = rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || !(0x20..=0x7e).contains(&c))
                .ok_or(Unsure)?;
            self.i += off;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok((&self.b[start..self.i], plain));
                }
                b'\\' => {
                    plain = false;
                    // skip the escaped byte; `\u` digits are checked on decode
                    self.i += 2;
                    if self.i > self.b.len() {
                        return Err(Unsure);
                    }
                }
                c if c < 0x20 => return Err(Unsure),
                _ => {
                    plain = false;
                    self.i += 1;
                }
            }
        }
    }

    /// A string's value.
    fn string(&mut self) -> R<Cow<'a, str>> {
        let (tok, plain) = self.string_token()?;
        if plain {
            // printable ASCII is UTF-8
            let inner = &tok[1..tok.len() - 1];
            Ok(Cow::Borrowed(
                std::str::from_utf8(inner).map_err(|_| Unsure)?,
            ))
        } else {
            serde_json::from_slice::<String>(tok)
                .map(Cow::Owned)
                .map_err(|_| Unsure)
        }
    }

    /// A string, written canonically.
    fn write_string(&mut self, out: &mut Vec<u8>) -> R<()> {
        let (tok, plain) = self.string_token()?;
        if plain {
            out.extend_from_slice(tok);
        } else {
            let s: String = serde_json::from_slice(tok).map_err(|_| Unsure)?;
            write_str(out, &s);
        }
        Ok(())
    }

    /// A number token, strictly JSON's grammar, decoded by serde_json.
    fn number(&mut self) -> R<serde_json::Number> {
        let start = self.i;
        let digits = |r: &mut Self| {
            let from = r.i;
            while r.i < r.b.len() && r.b[r.i].is_ascii_digit() {
                r.i += 1;
            }
            r.i > from
        };
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return Err(Unsure),
        }
        if self.peek().ok() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(Unsure);
            }
        }
        if matches!(self.peek().ok(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek().ok(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(Unsure);
            }
        }
        let tok = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| Unsure)?;
        serde_json::from_str(tok).map_err(|_| Unsure)
    }

    /// One value, written canonically to `out`.
    fn value(&mut self, out: &mut Vec<u8>, at: At, depth: usize) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(Unsure);
        }
        self.ws();
        match self.peek()? {
            b'{' => match at {
                At::Column | At::Memories => Err(Unsure),
                _ => self.object(out, at, depth),
            },
            b'[' => match at {
                At::Column | At::Bundle | At::Row => Err(Unsure),
                _ => self.array(out, at, depth),
            },
            _ if matches!(at, At::Bundle | At::Row | At::Memories) => Err(Unsure),
            b'"' => self.write_string(out),
            b't' => self.bool_word(out, b"true", at),
            b'f' => self.bool_word(out, b"false", at),
            b'n' => {
                self.literal(b"null")?;
                out.extend_from_slice(b"null");
                Ok(())
            }
            _ => {
                let n = self.number()?;
                // a memory field holds null, text, an i64 or a float
                if at == At::Column && !(n.is_i64() || n.is_f64()) {
                    return Err(Unsure);
                }
                write_number(out, &n);
                Ok(())
            }
        }
    }

    fn bool_word(&mut self, out: &mut Vec<u8>, word: &[u8], at: At) -> R<()> {
        if at == At::Column {
            return Err(Unsure);
        }
        self.literal(word)?;
        out.extend_from_slice(word);
        Ok(())
    }

    fn array(&mut self, out: &mut Vec<u8>, at: At, depth: usize) -> R<()> {
        self.eat(b'[')?;
        out.push(b'[');
        let element = if at == At::Memories {
            At::Row
        } else {
            At::Free
        };
        let mut n = 0usize;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
        } else {
            loop {
                if n > 0 {
                    out.push(b',');
                }
                self.value(out, element, depth + 1)?;
                n += 1;
                self.ws();
                match self.peek()? {
                    b',' => self.i += 1,
                    b']' => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(Unsure),
                }
            }
        }
        out.push(b']');
        if at == At::Memories {
            self.memories = Some(n);
        }
        Ok(())
    }

    /// An object, its members sorted by key (code point order = UTF-8
    /// byte order); a duplicate key is left to the tree path.
    fn object(&mut self, out: &mut Vec<u8>, at: At, depth: usize) -> R<()> {
        self.eat(b'{')?;
        let mut members: Vec<(Cow<'a, str>, std::ops::Range<usize>)> = Vec::new();
        let mut values: Vec<u8> = Vec::new();
        if at == At::Bundle {
            // the rows: about as long as the text left
            values.reserve(self.b.len() - self.i);
        }
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            loop {
                self.ws();
                let key = self.string()?;
                self.ws();
                self.eat(b':')?;
                let child = match at {
                    At::Bundle if key == "memories" => At::Memories,
                    At::Row if BUNDLE_COLUMNS.contains(&key.as_ref()) => At::Column,
                    _ => At::Free,
                };
                let start = values.len();
                self.value(&mut values, child, depth + 1)?;
                members.push((key, start..values.len()));
                self.ws();
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(Unsure),
                }
            }
        }
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if members.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Unsure);
        }
        if at == At::Bundle && !members.iter().any(|(k, _)| k == "memories") {
            return Err(Unsure);
        }
        out.push(b'{');
        for (n, (key, range)) in members.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_str(out, key);
            out.push(b':');
            out.extend_from_slice(&values[range.clone()]);
        }
        out.push(b'}');
        Ok(())
    }
}

/// Reads a signed bundle file's text; [`Unsure`] unless the document is
/// one this path fully understands.
pub(crate) fn read_outer(text: &[u8]) -> Result<Outer, Unsure> {
    let mut r = Reader {
        b: text,
        i: 0,
        memories: None,
    };
    let mut outer = Outer::default();
    let mut seen: Vec<Cow<'_, str>> = Vec::new();
    let mut bundle = None;
    r.ws();
    r.eat(b'{')?;
    r.ws();
    if r.peek()? == b'}' {
        return Err(Unsure);
    }
    loop {
        r.ws();
        let key = r.string()?;
        if seen.contains(&key) {
            return Err(Unsure);
        }
        r.ws();
        r.eat(b':')?;
        r.ws();
        match key.as_ref() {
            "bundle" => {
                let mut canonical = Vec::with_capacity(text.len());
                r.value(&mut canonical, At::Bundle, 1)?;
                bundle = Some(canonical);
            }
            "version" => outer.version = Some(r.number()?.as_i64().ok_or(Unsure)?),
            "bundle_hash_hex" | "signature_b58" | "signer_pubkey_b58" | "signed_at" => {
                if r.peek()? != b'"' {
                    return Err(Unsure);
                }
                let v = Some(r.string()?.into_owned());
                match key.as_ref() {
                    "bundle_hash_hex" => outer.bundle_hash_hex = v,
                    "signature_b58" => outer.signature_b58 = v,
                    "signer_pubkey_b58" => outer.signer_pubkey_b58 = v,
                    _ => outer.signed_at = v,
                }
            }
            // anything else is read (it must be JSON) and ignored
            _ => r.value(&mut Vec::new(), At::Free, 1)?,
        }
        seen.push(key);
        r.ws();
        match r.peek()? {
            b',' => r.i += 1,
            b'}' => {
                r.i += 1;
                break;
            }
            _ => return Err(Unsure),
        }
    }
    r.ws();
    if r.i != text.len() {
        return Err(Unsure);
    }
    outer.bundle_canonical = bundle.ok_or(Unsure)?;
    outer.memories_count = r.memories.ok_or(Unsure)?;
    if outer.version.is_none() || outer.signature_b58.is_none() || outer.signer_pubkey_b58.is_none()
    {
        return Err(Unsure);
    }
    Ok(outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::canonical::canonical;
    use serde_json::{json, Value};

    fn inner(text: &str) -> Result<Vec<u8>, Unsure> {
        let doc = format!(
            r#"{{"version": 1, "bundle": {text}, "signature_b58": "s", "signer_pubkey_b58": "p"}}"#
        );
        read_outer(doc.as_bytes()).map(|o| o.bundle_canonical)
    }

    #[test]
    fn canonical_bytes_equal_the_tree_paths() {
        let cases = [
            r#"{"memories": [], "b": 1, "a": [1.0, 2, -0, 1e2, 1E-7, 12345678901234567890]}"#,
            r#"{"memories": [{"content": "caf\u00e9 \ud83d\ude00 \"q\" \\ \n", "id": 3}], "x": {"z": null, "y": true, "\u00e9": false}}"#,
            r#"{"memories": [{"content": "raw é ☃ 😀", "tags": "[\"a\"]", "confidence": 0.1}]}"#,
            r#"{ "memories" : [ { "trust_score" : 1.5e300 , "other" : [ {"k": [] } ] } ] }"#,
        ];
        for case in cases {
            let tree: Value = serde_json::from_str(case).unwrap();
            assert_eq!(inner(case).unwrap(), canonical(&tree), "{case}");
        }
    }

    #[test]
    fn what_it_does_not_fully_understand_is_left_to_the_tree_path() {
        for case in [
            r#"{"memories": [], "a": 1, "a": 2}"#,
            r#"{"memories": [{"content": ["list"]}]}"#,
            r#"{"memories": [{"content": true}]}"#,
            r#"{"memories": [{"id": 18446744073709551615}]}"#,
            r#"{"memories": [7]}"#,
            r#"{"memories": {}}"#,
            r#"{"no_memories": []}"#,
            r#"[]"#,
            r#"{"memories": [], "bad": "\ud800"}"#,
            r#"{"memories": [], "bad": 01}"#,
            r#"{"memories": [], "bad": NaN}"#,
            r#"{"memories": [], "bad": "tab	in string"}"#,
            r#"{"memories": [] "#,
        ] {
            assert_eq!(inner(case), Err(Unsure), "{case}");
        }
        let deep = format!(
            r#"{{"memories": [], "d": {}0{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(inner(&deep), Err(Unsure));
        for doc in [
            "",
            "{}",
            r#"{"version": 1, "bundle": {"memories": []}, "signature_b58": "s", "signer_pubkey_b58": "p"} x"#,
            r#"{"version": 1.0, "bundle": {"memories": []}, "signature_b58": "s", "signer_pubkey_b58": "p"}"#,
            r#"{"version": 1, "bundle": {"memories": []}, "signature_b58": 5, "signer_pubkey_b58": "p"}"#,
            r#"{"version": 1, "version": 1, "bundle": {"memories": []}, "signature_b58": "s", "signer_pubkey_b58": "p"}"#,
        ] {
            assert!(read_outer(doc.as_bytes()).is_err(), "{doc}");
        }
        let ok = json!({"version": 1, "bundle": {"memories": [{"id": 1}]}, "signature_b58": "s",
            "signer_pubkey_b58": "p", "extra": [{"x": 1}]});
        let o = read_outer(ok.to_string().as_bytes()).unwrap();
        assert_eq!((o.memories_count, o.version), (1, Some(1)));
    }
}
