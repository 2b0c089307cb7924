//! Python-compatible JSON writers, byte for byte.
//!
//! Owns the two encodings the reference produces with `json.dumps`:
//! - [`canonical`]: `sort_keys=True, separators=(",", ":"), ensure_ascii=True`,
//!   the bytes every bundle and manifest hash is computed over;
//! - [`python_pretty`]: `indent=2, ensure_ascii=True` in insertion order, the
//!   layout of the reference's `*.signed.json` files.
//!
//! It also exposes the primitives ([`write_str`], [`write_f64`]) so typed
//! fast paths (see `bundle::model`) emit exactly the same bytes without
//! building a `serde_json::Value`. It never parses JSON and never hashes.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// Canonical bytes of `value` (sorted keys, no whitespace, ASCII only).
pub fn canonical(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(&mut out, value);
    out
}

/// Appends the canonical encoding of `value` to `out`.
pub fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_canonical_object(out, map, None),
    }
}

/// Appends the canonical encoding of the object `map`, without its key
/// `skip` if given (a manifest hashed without its signature, no copy).
pub fn write_canonical_object(out: &mut Vec<u8>, map: &Map<String, Value>, skip: Option<&str>) {
    let mut entries: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != skip)
        .collect();
    // Python sorts str keys by code point; UTF-8 byte order is the same.
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_canonical(out, v);
    }
    out.push(b'}');
}

/// `json.dumps(value, indent=2)` (ASCII-escaped, keys in insertion order).
pub fn python_pretty(value: &Value) -> String {
    let mut out = Vec::with_capacity(1024);
    write_pretty(&mut out, value, 0);
    // Every byte written is ASCII by construction.
    String::from_utf8(out).expect("ensure_ascii output is ASCII")
}

/// Writes `value` as `json.dumps(value, indent=2)` at nesting `depth`.
pub(crate) fn write_pretty(out: &mut Vec<u8>, value: &Value, depth: usize) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                newline_indent(out, depth + 1);
                write_pretty(out, item, depth + 1);
            }
            newline_indent(out, depth);
            out.push(b']');
        }
        Value::Object(map) if !map.is_empty() => write_pretty_object(out, map, depth),
        other => write_canonical(out, other),
    }
}

fn write_pretty_object(out: &mut Vec<u8>, map: &Map<String, Value>, depth: usize) {
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        newline_indent(out, depth + 1);
        write_str(out, k);
        out.extend_from_slice(b": ");
        write_pretty(out, v, depth + 1);
    }
    newline_indent(out, depth);
    out.push(b'}');
}

/// A newline and `depth` levels of two-space indent.
pub(crate) fn newline_indent(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    out.resize(out.len() + depth * 2, b' ');
}

/// Writes a JSON number the way Python prints the value `json.loads` made
/// of it: integers as integers, floats as `repr(float)`.
pub fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        write_i64(out, i);
    } else if let Some(u) = n.as_u64() {
        let mut s = String::new();
        let _ = write!(s, "{u}");
        out.extend_from_slice(s.as_bytes());
    } else if let Some(f) = n.as_f64() {
        write_f64(out, f);
    }
}

/// Writes an integer in decimal.
pub fn write_i64(out: &mut Vec<u8>, i: i64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let neg = i < 0;
    let mut v = i.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Writes `repr(x)` of a Python float (`json.dumps` uses `float.__repr__`).
pub fn write_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        return out.extend_from_slice(b"NaN");
    }
    if x.is_infinite() {
        return out.extend_from_slice(if x > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    if x == 0.0 {
        return out.extend_from_slice(if x.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
    }
    // Ryū prints the shortest digits that round-trip, choosing between two
    // as Python's 'r' mode does (the nearest, ties to even; Rust's `{:e}`
    // rounded 92 of the 20,026 floats in tests/fixtures/floats otherwise);
    // only its layout differs, so it is read back as digits and a decimal
    // point position.
    let mut ryu_buf = ryu::Buffer::new();
    let text = ryu_buf.format_finite(x).as_bytes();
    let neg = text[0] == b'-';
    let text = &text[usize::from(neg)..];
    let (mantissa, exp) = match text.iter().position(|&c| c == b'e') {
        Some(e) => (
            &text[..e],
            std::str::from_utf8(&text[e + 1..])
                .ok()
                .and_then(|exp| exp.parse::<i32>().ok())
                .expect("Ryū's exponent is an integer"),
        ),
        None => (text, 0),
    };
    let int_len = mantissa
        .iter()
        .position(|&c| c == b'.')
        .unwrap_or(mantissa.len());
    let mut digit_buf = [0u8; 32];
    let mut n = 0;
    for &c in mantissa.iter().filter(|c| c.is_ascii_digit()) {
        digit_buf[n] = c;
        n += 1;
    }
    let leading = digit_buf[..n].iter().take_while(|&&c| c == b'0').count();
    let trailing = digit_buf[leading..n]
        .iter()
        .rev()
        .take_while(|&&c| c == b'0')
        .count();
    let digits = &digit_buf[leading..n - trailing];
    // value = 0.DIGITS × 10^decpt; `exp` is Python's exponent (decpt - 1)
    let decpt = int_len as i32 + exp - leading as i32;
    let exp = decpt - 1;
    if neg {
        out.push(b'-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.extend_from_slice(if exp < 0 { b"e-" } else { b"e+" });
        if exp.abs() < 10 {
            out.push(b'0');
        }
        write_i64(out, i64::from(exp.abs()));
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-decpt) as usize, b'0');
        out.extend_from_slice(digits);
    } else if decpt as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.resize(out.len() + decpt as usize - digits.len(), b'0');
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&digits[..decpt as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[decpt as usize..]);
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed
/// notation when the decimal exponent is in [-4, 16), else `d.ddde±XX`.
/// Non-finite values print as Python's json does (`NaN`, `Infinity`).
pub fn python_float_repr(x: f64) -> String {
    let mut out = Vec::with_capacity(24);
    write_f64(&mut out, x);
    String::from_utf8(out).expect("a float prints as ASCII")
}

/// Writes a JSON string with Python's `ensure_ascii=True` escaping:
/// `\" \\ \n \r \t \b \f`, every other char outside `' '..='~'` as
/// `\uXXXX` (lowercase hex; astral chars as a UTF-16 surrogate pair).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(i) = next_escape(bytes, start) {
        out.extend_from_slice(&bytes[start..i]);
        let b = bytes[i];
        start = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ if b < 0x80 => write_u16_escape(out, b as u16),
            _ => {
                // `i` is a char boundary: escapes end on boundaries.
                let ch = s[i..].chars().next().expect("char boundary");
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    write_u16_escape(out, *unit);
                }
                start = i + ch.len_utf8();
            }
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The index of the first byte at or after `from` that [`NEEDS_ESCAPE`],
/// eight bytes at a time while none does (memories are mostly plain ASCII).
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // whether any byte of `w` is zero (exact as a yes/no)
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH != 0;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0; // a byte < 0x20
        let del_or_high = w & HIGH != 0 || has_zero(w ^ (ONES * 0x7f));
        if control || del_or_high || has_zero(w ^ (ONES * 0x22)) || has_zero(w ^ (ONES * 0x5c)) {
            break;
        }
        i += 8;
    }
    bytes[i..]
        .iter()
        .position(|&b| NEEDS_ESCAPE[b as usize])
        .map(|off| i + off)
}

/// Bytes that cannot be copied as-is: controls, `"`, `\\`, DEL and every
/// non-ASCII byte (lead bytes start an escaped char; continuation bytes are
/// consumed with their lead).
static NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i < 0x20 || i == b'"' as usize || i == b'\\' as usize || i >= 0x7f;
        i += 1;
    }
    t
};

fn write_u16_escape(out: &mut Vec<u8>, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xf) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: &Value) -> String {
        String::from_utf8(canonical(v)).unwrap()
    }

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.3333333333333333, "0.3333333333333333"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (-0.0, "-0.0"),
            (123456789.125, "123456789.125"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.75, "0.75"),
            (100.0, "100.0"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(x), want, "repr({x:?})");
        }
    }

    #[test]
    fn strings_escape_like_ensure_ascii() {
        assert_eq!(canon(&json!("a\"b\\c/d")), r#""a\"b\\c/d""#);
        assert_eq!(canon(&json!("\n\r\t\u{8}\u{c}")), r#""\n\r\t\b\f""#);
        assert_eq!(
            canon(&json!("\u{1}\u{1f}\u{7f}")),
            r#""\u0001\u001f\u007f""#
        );
        assert_eq!(canon(&json!("café — ü")), r#""caf\u00e9 \u2014 \u00fc""#);
        assert_eq!(canon(&json!("😀")), r#""\ud83d\ude00""#);
    }

    #[test]
    fn objects_sort_keys_and_nest() {
        let v = json!({"b": 1, "a": {"z": null, "y": [true, false, 1.0]}, "A": "x"});
        assert_eq!(
            canon(&v),
            r#"{"A":"x","a":{"y":[true,false,1.0],"z":null},"b":1}"#
        );
    }

    #[test]
    fn pretty_matches_python_indent_2() {
        let v = json!({"version": 1, "e": [], "o": {}, "l": [1, "é"], "n": {"k": null}});
        let want = "{\n  \"version\": 1,\n  \"e\": [],\n  \"o\": {},\n  \"l\": [\n    1,\n    \"\\u00e9\"\n  ],\n  \"n\": {\n    \"k\": null\n  }\n}";
        assert_eq!(python_pretty(&v), want);
    }

    proptest::proptest! {
        #[test]
        fn strings_round_trip_as_ascii(s in ".*") {
            let out = canon(&json!(s));
            proptest::prop_assert!(out.is_ascii());
            let back: String = serde_json::from_str(&out).unwrap();
            proptest::prop_assert_eq!(back, s);
        }

        #[test]
        fn escape_scan_finds_what_a_byte_scan_finds(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::u8::ANY, 0x20u8..0x7f, 0x20u8..0x7f],
                0..80,
            ),
            from in 0usize..80,
        ) {
            let from = from.min(bytes.len());
            let bytewise = bytes[from..].iter().position(|&b| NEEDS_ESCAPE[b as usize]).map(|o| from + o);
            proptest::prop_assert_eq!(next_escape(&bytes, from), bytewise);
        }

        #[test]
        fn floats_round_trip(x in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
            let r = python_float_repr(x);
            proptest::prop_assert!(r.contains('.') || r.contains('e'), "{}", r);
            proptest::prop_assert_eq!(r.parse::<f64>().unwrap(), x);
        }

        #[test]
        fn nested_values_round_trip(v in arb_json()) {
            let bytes = canonical(&v);
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            proptest::prop_assert_eq!(canonical(&back), bytes, "canonical is a fixed point");
        }
    }

    /// 20,026 floats Python printed (random bit patterns of every
    /// exponent, ties that 17 digits cannot hold, short decimals).
    #[test]
    fn floats_print_as_python_does() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/floats/python-repr.txt"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut checked = 0;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (bits, want) = line.split_once(' ').unwrap();
            let x = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            assert_eq!(python_float_repr(x), want, "bits {bits}");
            checked += 1;
        }
        assert_eq!(checked, 20_026);
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            proptest::num::f64::NORMAL.prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn integers_stay_integers() {
        assert_eq!(
            canon(&json!([0, -1, i64::MIN, u64::MAX])),
            format!("[0,-1,{},{}]", i64::MIN, u64::MAX)
        );
    }
}
