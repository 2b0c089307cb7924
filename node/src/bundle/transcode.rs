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
use super::model::{BUNDLE_COLUMNS, SORTED_COLUMN_INDEX};
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
    /// Canonical bytes of `bundle` (empty when hashed as they were read).
    pub bundle_canonical: Vec<u8>,
    /// SHA-256 of the canonical bytes, when hashed on a second core while
    /// they were read (see [`Stream`]).
    pub bundle_digest: Option<[u8; 32]>,
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

/// An object key: the token's bytes when it is printable ASCII without
/// escapes (it then prints as it is written), else its decoded text.
enum Key<'a> {
    Plain(&'a [u8]),
    Decoded(String),
}

impl Key<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Key::Plain(b) => b,
            Key::Decoded(s) => s.as_bytes(),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Key::Plain(b) => {
                out.push(b'"');
                out.extend_from_slice(b);
                out.push(b'"');
            }
            Key::Decoded(s) => write_str(out, s),
        }
    }
}

/// An object's members while it is read: key, and where its canonical
/// value sits in the object's value buffer.
type Members<'a> = Vec<(Key<'a>, std::ops::Range<usize>)>;

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    memories: Option<usize>,
    /// Buffers per depth, reused from object to object.
    scratch: Vec<(Members<'a>, Vec<u8>)>,
    /// The inner bundle's bytes on their way to a hasher thread.
    stream: Option<Stream>,
}

/// Texts at least this long are hashed on a second core while read.
const STREAM_FROM_BYTES: usize = 1 << 20;
/// Bytes of rows sent to the hasher at a time.
const STREAM_CHUNK: usize = 256 * 1024;

/// The inner bundle's canonical bytes hashed on a second core while the
/// rows are read, on the bet that every key sorting before `memories`
/// comes before it in the text (true of every file the reference or this
/// crate writes). A lost bet is noticed when the bundle object ends; its
/// bytes are then written out and hashed as usual.
struct Stream {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    /// Where the `memories` array starts in the bundle's value buffer.
    start: Option<usize>,
    /// How much of that buffer was sent.
    sent: usize,
    /// Everything was sent: the hasher's digest is the bundle's.
    complete: bool,
}

impl Stream {
    fn send(&mut self, bytes: Vec<u8>) {
        // a hasher gone means a lost bet is already being handled
        let _ = self.tx.send(bytes);
    }
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
            let off = memchr::memchr2(b'"', b'\\', rest).ok_or(Unsure)?;
            let run = &rest[..off];
            // branch-free, so it vectorizes: every byte in ' '..='~'
            let printable = run
                .iter()
                .fold(true, |ok, &c| ok & (c.wrapping_sub(0x20) < 0x5f));
            if !printable {
                if run.iter().any(|&c| c < 0x20) {
                    return Err(Unsure); // a raw control character: not JSON
                }
                plain = false;
            }
            self.i += off;
            if self.b[self.i] == b'"' {
                self.i += 1;
                return Ok((&self.b[start..self.i], plain));
            }
            // a backslash: skip the escaped byte (`\u` digits are checked on decode)
            plain = false;
            self.i += 2;
            if self.i > self.b.len() {
                return Err(Unsure);
            }
        }
    }

    /// An object key: its bytes as they sort and print.
    fn key(&mut self) -> R<Key<'a>> {
        let (tok, plain) = self.string_token()?;
        if plain {
            Ok(Key::Plain(&tok[1..tok.len() - 1]))
        } else {
            serde_json::from_slice::<String>(tok)
                .map(Key::Decoded)
                .map_err(|_| Unsure)
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
                if at == At::Memories {
                    if let Some(st) = self.stream.as_mut().filter(|st| st.start.is_some()) {
                        if out.len() - st.sent >= STREAM_CHUNK {
                            st.send(out[st.sent..].to_vec());
                            st.sent = out.len();
                        }
                    }
                }
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
        if self.scratch.len() <= depth {
            self.scratch.resize_with(depth + 1, Default::default);
        }
        let (mut members, mut values) = std::mem::take(&mut self.scratch[depth]);
        members.clear();
        values.clear();
        let read = self.members(&mut members, &mut values, at, depth);
        let result = read.and_then(|in_column_order| {
            if at == At::Row && in_column_order {
                // the reference writes rows in column order: their sorted
                // order is known, and column names are distinct
                out.push(b'{');
                for (n, &i) in SORTED_COLUMN_INDEX.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    let (key, range) = &members[i];
                    key.write(out);
                    out.push(b':');
                    out.extend_from_slice(&values[range.clone()]);
                }
                out.push(b'}');
                return Ok(());
            }
            members.sort_unstable_by(|a, b| a.0.bytes().cmp(b.0.bytes()));
            if members.windows(2).any(|w| w[0].0.bytes() == w[1].0.bytes()) {
                return Err(Unsure);
            }
            if at == At::Bundle && !members.iter().any(|(k, _)| k.bytes() == b"memories") {
                return Err(Unsure);
            }
            if at == At::Bundle && self.stream_rest(&members, &values) {
                return Ok(());
            }
            out.push(b'{');
            for (n, (key, range)) in members.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                key.write(out);
                out.push(b':');
                out.extend_from_slice(&values[range.clone()]);
            }
            out.push(b'}');
            Ok(())
        });
        members.clear();
        self.scratch[depth] = (members, values);
        result
    }

    /// At the bundle's `memories` key: sends the canonical bytes that
    /// precede its value (the members read so far that sort before it).
    fn stream_prefix(&mut self, members: &Members<'a>, values: &[u8]) {
        let Some(st) = self.stream.as_mut() else {
            return;
        };
        let mut before: Vec<&(Key<'a>, std::ops::Range<usize>)> = members
            .iter()
            .filter(|(k, _)| k.bytes() < b"memories".as_slice())
            .collect();
        before.sort_unstable_by(|a, b| a.0.bytes().cmp(b.0.bytes()));
        let mut prefix = vec![b'{'];
        for (key, range) in before {
            key.write(&mut prefix);
            prefix.push(b':');
            prefix.extend_from_slice(&values[range.clone()]);
            prefix.push(b',');
        }
        prefix.extend_from_slice(b"\"memories\":");
        st.send(prefix);
        st.start = Some(values.len());
        st.sent = values.len();
    }

    /// At the bundle's end (members sorted, no duplicates): if the bet
    /// held, sends the rest of its canonical bytes and says so.
    fn stream_rest(&mut self, members: &Members<'a>, values: &[u8]) -> bool {
        let Some(st) = self.stream.as_mut() else {
            return false;
        };
        let Some(start) = st.start else {
            return false;
        };
        let Some(m) = members.iter().position(|(k, _)| k.bytes() == b"memories") else {
            return false;
        };
        let held = members[m].1.start == start && members[..m].iter().all(|(_, r)| r.end <= start);
        if !held {
            return false;
        }
        let mut rest = values[st.sent..members[m].1.end].to_vec();
        for (key, range) in &members[m + 1..] {
            rest.push(b',');
            key.write(&mut rest);
            rest.push(b':');
            rest.extend_from_slice(&values[range.clone()]);
        }
        rest.push(b'}');
        st.send(rest);
        st.complete = true;
        true
    }

    /// The members of the object just opened, up to its `}`; whether they
    /// are exactly the bundle columns, in order (a row as the reference
    /// writes it).
    fn members(
        &mut self,
        members: &mut Members<'a>,
        values: &mut Vec<u8>,
        at: At,
        depth: usize,
    ) -> R<bool> {
        if at == At::Bundle {
            // the rows: about as long as the text left
            values.reserve(self.b.len() - self.i);
        }
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(false);
        }
        let mut in_order = true;
        loop {
            self.ws();
            let key = self.key()?;
            // the n-th key is usually the n-th column: one comparison
            let positional = BUNDLE_COLUMNS
                .get(members.len())
                .is_some_and(|c| c.as_bytes() == key.bytes());
            in_order &= positional;
            self.ws();
            self.eat(b':')?;
            if at == At::Bundle && key.bytes() == b"memories" {
                self.stream_prefix(members, values);
            }
            let child = match at {
                At::Bundle if key.bytes() == b"memories" => At::Memories,
                At::Row if positional || is_column(key.bytes()) => At::Column,
                _ => At::Free,
            };
            let start = values.len();
            self.value(values, child, depth + 1)?;
            members.push((key, start..values.len()));
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(in_order && members.len() == BUNDLE_COLUMNS.len());
                }
                _ => return Err(Unsure),
            }
        }
    }
}

/// Whether `key` names one of the bundle columns.
fn is_column(key: &[u8]) -> bool {
    BUNDLE_COLUMNS.iter().any(|c| c.as_bytes() == key)
}

/// Reads a signed bundle file's text; [`Unsure`] unless the document is
/// one this path fully understands.
pub(crate) fn read_outer(text: &[u8]) -> Result<Outer, Unsure> {
    if text.len() < STREAM_FROM_BYTES {
        return read_outer_with(text, None).map(|(outer, _)| outer);
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            for chunk in rx {
                h.update(&chunk);
            }
            <[u8; 32]>::from(h.finalize())
        });
        // no second thread to be had: read and hash on this one
        let Ok(hasher) = spawned else {
            return read_outer_with(text, None).map(|(outer, _)| outer);
        };
        let stream = Stream {
            tx,
            start: None,
            sent: 0,
            complete: false,
        };
        // the reader (and with it the sender) is gone before the join
        let read = read_outer_with(text, Some(stream));
        let digest = hasher.join().ok();
        let (mut outer, complete) = read?;
        if complete {
            // the bytes went to the hasher only: without its digest, the
            // tree path decides
            outer.bundle_digest = Some(digest.ok_or(Unsure)?);
        }
        Ok(outer)
    })
}

/// [`read_outer`], with the bundle's bytes streamed to `stream` if given;
/// also says whether the stream got all of them.
fn read_outer_with(text: &[u8], stream: Option<Stream>) -> Result<(Outer, bool), Unsure> {
    let mut r = Reader {
        b: text,
        i: 0,
        memories: None,
        scratch: Vec::new(),
        stream,
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
                let mut canonical = Vec::new();
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
    let complete = r.stream.as_ref().is_some_and(|st| st.complete);
    Ok((outer, complete))
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

    /// Over a MiB the bundle is hashed while read: the digest is the
    /// canonical bytes' whether the keys come in the reference's order or
    /// one that sorts before `memories` comes after it (the bet is lost).
    #[test]
    fn large_bundles_hash_while_read_in_any_key_order() {
        let rows: Vec<String> = (0..6000)
            .map(|i| {
                format!(
                    r#"{{"id": {i}, "content": "row {i} {}", "confidence": 0.{i}1}}"#,
                    "x".repeat(200)
                )
            })
            .collect();
        let rows = rows.join(", ");
        for (inner, streamed) in [
            (
                format!(
                    r#"{{"version": 1, "generated_at": "t", "filter_used": {{"scope": null}}, "memories": [{rows}]}}"#
                ),
                true,
            ),
            (
                format!(
                    r#"{{"version": 1, "memories": [{rows}], "generated_at": "t", "filter_used": {{}}}}"#
                ),
                false,
            ),
            (format!(r#"{{"memories": [{rows}], "zz": [1, 2]}}"#), true),
        ] {
            let doc = format!(
                r#"{{"version": 1, "bundle": {inner}, "signature_b58": "s", "signer_pubkey_b58": "p"}}"#
            );
            assert!(doc.len() > STREAM_FROM_BYTES);
            let tree: Value = serde_json::from_str(&inner).unwrap();
            let want = crate::crypto::sha256(&canonical(&tree));
            let o = read_outer(doc.as_bytes()).unwrap();
            assert_eq!(o.bundle_digest.is_some(), streamed);
            let got = o
                .bundle_digest
                .unwrap_or_else(|| crate::crypto::sha256(&o.bundle_canonical));
            assert_eq!(got, want);
            assert_eq!(o.memories_count, 6000);
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
