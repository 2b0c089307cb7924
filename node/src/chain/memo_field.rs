//! Parses the `memo` field of `getSignaturesForAddress`: each memo as
//! `[<byte length>] <text>`, several joined by `; `. The length prefix is
//! trusted over separators, so memo text containing `; ` or `[` parses
//! right. Anything else is an error, never a panic.
//!
//! The node writes a memo that is not UTF-8 (possible in a failed
//! transaction) with its byte length but other text, so one hostile memo
//! breaks the strict parse of the whole field; [`memos_lenient`] still
//! finds the well-formed ones for discovery (the transaction itself is
//! what gets verified).

/// Why a memo field did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed memo field at byte {at}: {why}")]
pub struct MemoFieldError {
    /// Byte offset.
    pub at: usize,
    /// What was expected.
    pub why: &'static str,
}

/// The memos of a `memo` field, in order.
pub fn parse_memo_field(field: &str) -> Result<Vec<String>, MemoFieldError> {
    let b = field.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        if b.get(i) != Some(&b'[') {
            return Err(MemoFieldError {
                at: i,
                why: "expected `[`",
            });
        }
        let digits_end = b[i + 1..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .map(|p| i + 1 + p)
            .ok_or(MemoFieldError {
                at: i,
                why: "unterminated length",
            })?;
        if digits_end == i + 1 || digits_end - i - 1 > 6 {
            return Err(MemoFieldError {
                at: i + 1,
                why: "expected a length of 1 to 6 digits",
            });
        }
        let len: usize = field[i + 1..digits_end].parse().expect("ascii digits");
        if b.get(digits_end..digits_end + 2) != Some(b"] ") {
            return Err(MemoFieldError {
                at: digits_end,
                why: "expected `] `",
            });
        }
        let start = digits_end + 2;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= b.len())
            .ok_or(MemoFieldError {
                at: start,
                why: "length runs past the end",
            })?;
        let text = field.get(start..end).ok_or(MemoFieldError {
            at: start,
            why: "length splits a character",
        })?;
        out.push(text.to_string());
        if end == b.len() {
            return Ok(out);
        }
        if b.get(end..end + 2) != Some(b"; ") {
            return Err(MemoFieldError {
                at: end,
                why: "expected `; ` between memos",
            });
        }
        i = end + 2;
    }
}

/// The memos of a field, strictly parsed when it is well formed; else
/// every `; `-separated piece with its `[n] ` prefix removed (a piece may
/// then be cut short or run long: only for finding candidates).
pub fn memos_lenient(field: &str) -> Vec<String> {
    if let Ok(memos) = parse_memo_field(field) {
        return memos;
    }
    field
        .split("; ")
        .map(
            |piece| match piece.strip_prefix('[').and_then(|p| p.split_once("] ")) {
                Some((len, text)) if len.bytes().all(|b| b.is_ascii_digit()) => text.to_string(),
                _ => piece.to_string(),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_single_and_joined() {
        assert_eq!(parse_memo_field("[5] hello").unwrap(), vec!["hello"]);
        assert_eq!(
            parse_memo_field("[4] a; b; [1] c").unwrap(),
            vec!["a; b", "c"]
        );
        assert_eq!(parse_memo_field("[2] é").unwrap(), vec!["é"]);
        for bad in [
            "",
            "hello",
            "[5]hello",
            "[9] short",
            "[] x",
            "[1] ab",
            "[1] a;[1] b",
            "[1234567] x",
            "[1] \u{e9}",
        ] {
            assert!(parse_memo_field(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_broken_memo_does_not_hide_the_others() {
        let field = "[40] brainctl-marketplace/v1:buy:20261123-aa:X; [3] (unparseable)";
        assert!(parse_memo_field(field).is_err());
        assert_eq!(
            memos_lenient(field),
            vec!["brainctl-marketplace/v1:buy:20261123-aa:X", "(unparseable)"]
        );
        assert_eq!(memos_lenient("[5] hello"), vec!["hello"]);
    }

    proptest! {
        #[test]
        fn lenient_never_panics(s in ".*") {
            let _ = memos_lenient(&s);
        }

        #[test]
        fn round_trips(memos in proptest::collection::vec(".{0,40}", 1..4)) {
            let field = memos.iter().map(|m| format!("[{}] {m}", m.len())).collect::<Vec<_>>().join("; ");
            prop_assert_eq!(parse_memo_field(&field).unwrap(), memos);
        }

        #[test]
        fn never_panics(s in ".*") {
            let _ = parse_memo_field(&s);
        }
    }
}
