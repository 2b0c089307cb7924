//! Finds secrets and personal data in memory text before it is signed and
//! sold: private keys (PEM, base58 64-byte Solana keys, keystore arrays),
//! API tokens, emails, phone numbers and Luhn-valid card numbers.
//!
//! Reports *what kind* and *where*, never the matched text itself.
//!
//! Fast path: SIMD byte searches and a vectorized digit count decide which
//! patterns *could* match (each condition is necessary for its pattern:
//! a character it contains, enough digits, a long enough run); only those
//! run their precise regex and checks. Ordinary rows
//! never reach a regex. [`scan`] and the all-patterns [`scan_precise`]
//! give the same findings (property-tested).

use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

/// Kinds of sensitive data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum SensitiveKind {
    /// `-----BEGIN ... PRIVATE KEY-----`.
    PemPrivateKey,
    /// base58 string decoding to 64 bytes (a Solana secret key).
    Base58SecretKey,
    /// A JSON array of 64 bytes (a Solana CLI keystore).
    KeystoreArray,
    /// A provider API token (OpenAI, Anthropic, GitHub, AWS, Slack, Google, GitLab, ...).
    ApiToken,
    /// `password=...`, `api_key: ...` style assignments.
    SecretAssignment,
    /// An email address.
    Email,
    /// A phone number.
    PhoneNumber,
    /// A payment card number passing the Luhn check.
    CardNumber,
}

/// One finding: which kind, at which byte offset of the content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found.
    pub kind: SensitiveKind,
    /// Byte offset in the text.
    pub offset: usize,
}

struct Patterns {
    pem: Regex,
    b58: Regex,
    keystore: Regex,
    token: Regex,
    assignment: Regex,
    email: Regex,
    phone: Regex,
    card: Regex,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    Patterns {
    pem: Regex::new(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----").unwrap(),
    b58: Regex::new(r"\b[1-9A-HJ-NP-Za-km-z]{80,90}\b").unwrap(),
    keystore: Regex::new(r"\[\s*(?:\d{1,3}\s*,\s*){63}\d{1,3}\s*\]").unwrap(),
    token: Regex::new(concat!(
        r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
        r"|gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|AKIA[0-9A-Z]{16}",
        r"|xox[abprs]-[A-Za-z0-9-]{10,}",
        r"|AIza[0-9A-Za-z_-]{35}",
        r"|glpat-[A-Za-z0-9_-]{20,}",
        r"|sk_live_[A-Za-z0-9]{20,})"
    ))
    .unwrap(),
    assignment: Regex::new(
        r#"(?i)(?:\b|_)(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|password|passwd|pwd|private[_-]?key)\s*[:=]\s*["']?[^\s"']{6,}"#,
    )
    .unwrap(),
    email: Regex::new(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b").unwrap(),
    phone: Regex::new(r"(?:^|[^\w])(\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b").unwrap(),
    card: Regex::new(r"\b\d(?:[ -]?\d){12,18}\b").unwrap(),
}
});

/// Luhn checksum over the digits of `s`.
pub fn luhn_ok(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut v = u32::from(*d);
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum.is_multiple_of(10)
}

/// Which patterns could match a text: a pattern not flagged cannot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Candidates {
    pem: bool,
    b58: bool,
    keystore: bool,
    token: bool,
    assignment: bool,
    email: bool,
    phone: bool,
    card: bool,
}

impl Candidates {
    const ALL: Candidates = Candidates {
        pem: true,
        b58: true,
        keystore: true,
        token: true,
        assignment: true,
        email: true,
        phone: true,
        card: true,
    };

    fn any(self) -> bool {
        self != Candidates::default()
    }
}

// Byte classes for the runs the prefilter measures.
const B58: u8 = 2;
const TOKEN_CHAR: u8 = 4;

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        let mut k = 0u8;
        if matches!(c, b'1'..=b'9' | b'A'..=b'H' | b'J'..=b'N' | b'P'..=b'Z' | b'a'..=b'k' | b'm'..=b'z')
        {
            k |= B58;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' {
            k |= TOKEN_CHAR;
        }
        t[b] = k;
        b += 1;
    }
    t
}

static CLASS: [u8; 256] = classes();

/// Shortest run of `[A-Za-z0-9_-]` any provider token pattern needs
/// (`xox?-` + 10).
const MIN_TOKEN_RUN: usize = 15;

/// The necessary conditions of each pattern: a PEM key needs `-----`; a
/// base58 secret a run of 80 base58 characters; a keystore `[` and 63
/// commas; a token a run of 15 token characters; an assignment `:` or `=`;
/// an email `@`; a phone 10 digits, a card 13. Built from SIMD byte
/// searches (memchr) and a vectorized digit count; runs are measured only
/// inside space-separated words long enough to hold one (a space belongs
/// to neither run). The regexes' `\d` is Unicode-aware: in non-ASCII text
/// digits are counted as chars that are numeric (a superset of `\d`).
fn candidates(text: &str) -> Candidates {
    let bytes = text.as_bytes();
    let digits = if text.is_ascii() {
        bytes.iter().filter(|b| b.wrapping_sub(b'0') < 10).count()
    } else {
        text.chars().filter(|c| c.is_numeric()).count()
    };
    let bracket = memchr::memchr(b'[', bytes).is_some();
    let (b58_max, tok_max) = longest_runs(bytes);
    Candidates {
        pem: DASHES.find(bytes).is_some(),
        b58: b58_max >= 80,
        keystore: bracket && memchr::memchr_iter(b',', bytes).count() >= 63,
        token: tok_max >= MIN_TOKEN_RUN,
        assignment: memchr::memchr2(b':', b'=', bytes).is_some(),
        email: memchr::memchr(b'@', bytes).is_some(),
        phone: digits >= 10,
        card: digits >= 13,
    }
}

static DASHES: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"-----"));

/// The longest runs of base58 and of token characters in `bytes`, looked
/// for only where they can be: a run of 15 or more non-space bytes covers
/// a whole 8-byte-aligned block without a space (found 8 bytes at a time);
/// only the space-free segment around such a block is measured. Prose,
/// whose words are shorter than 8 letters, costs one test per 8 bytes.
fn longest_runs(bytes: &[u8]) -> (usize, usize) {
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (mut b58_max, mut tok_max) = (0usize, 0usize);
    let mut measured_to = 0usize;
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let block = u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let x = block ^ SPACES;
        let has_space = x.wrapping_sub(LOW) & !x & HIGH != 0;
        if !has_space && at >= measured_to {
            let start = memchr::memrchr(b' ', &bytes[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b' ', &bytes[at..]).map_or(bytes.len(), |i| at + i);
            let (mut b58, mut tok) = (0usize, 0usize);
            for &c in &bytes[start..end] {
                let k = CLASS[c as usize];
                b58 = if k & B58 != 0 { b58 + 1 } else { 0 };
                tok = if k & TOKEN_CHAR != 0 { tok + 1 } else { 0 };
                b58_max = b58_max.max(b58);
                tok_max = tok_max.max(tok);
            }
            measured_to = end;
        }
        at += 8;
    }
    (b58_max, tok_max)
}

/// All sensitive findings in `text`, in order of offset.
pub fn scan(text: &str) -> Vec<Finding> {
    let c = candidates(text);
    if !c.any() {
        return Vec::new();
    }
    scan_with(text, c)
}

/// [`scan`] without the prefilter: every pattern runs. The reference the
/// fast path is tested against.
pub fn scan_precise(text: &str) -> Vec<Finding> {
    scan_with(text, Candidates::ALL)
}

fn scan_with(text: &str, c: Candidates) -> Vec<Finding> {
    let p = &*PATTERNS;
    let mut out = Vec::new();
    let mut push = |kind, offset| out.push(Finding { kind, offset });
    if c.pem {
        for m in p.pem.find_iter(text) {
            push(SensitiveKind::PemPrivateKey, m.start());
        }
    }
    for m in p.b58.find_iter(text).filter(|_| c.b58) {
        if crate::crypto::b58_array::<64>(m.as_str()).is_some() {
            push(SensitiveKind::Base58SecretKey, m.start());
        }
    }
    for m in p.keystore.find_iter(text).filter(|_| c.keystore) {
        let all_bytes = m
            .as_str()
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .all(|n| n.trim().parse::<u16>().is_ok_and(|v| v <= 255));
        if all_bytes {
            push(SensitiveKind::KeystoreArray, m.start());
        }
    }
    for m in p.token.find_iter(text).filter(|_| c.token) {
        push(SensitiveKind::ApiToken, m.start());
    }
    for m in p.assignment.find_iter(text).filter(|_| c.assignment) {
        push(SensitiveKind::SecretAssignment, m.start());
    }
    for m in p.email.find_iter(text).filter(|_| c.email) {
        push(SensitiveKind::Email, m.start());
    }
    for cap in p.phone.captures_iter(text).filter(|_| c.phone) {
        let m = cap.get(0).expect("whole match");
        let digits = m.as_str().bytes().filter(u8::is_ascii_digit).count();
        if (10..=15).contains(&digits) {
            push(SensitiveKind::PhoneNumber, m.start());
        }
    }
    for m in p.card.find_iter(text).filter(|_| c.card) {
        let digits: Vec<u8> = m
            .as_str()
            .bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| b - b'0')
            .collect();
        if (13..=19).contains(&digits.len()) && luhn_ok(&digits) {
            push(SensitiveKind::CardNumber, m.start());
        }
    }
    out.sort_by_key(|f| (f.offset, f.kind));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(t: &str) -> Vec<SensitiveKind> {
        let mut k: Vec<_> = scan(t).into_iter().map(|f| f.kind).collect();
        k.sort();
        k.dedup();
        k
    }

    #[test]
    fn finds_each_kind() {
        let sk = bs58::encode([7u8; 64]).into_string();
        assert_eq!(
            kinds(&format!("my key is {sk} ok")),
            vec![SensitiveKind::Base58SecretKey]
        );
        let arr = format!("[{}]", vec!["12"; 64].join(", "));
        assert_eq!(kinds(&arr), vec![SensitiveKind::KeystoreArray]);
        assert_eq!(
            kinds("-----BEGIN RSA PRIVATE KEY-----\nMIIE"),
            vec![SensitiveKind::PemPrivateKey]
        );
        assert!(kinds("token sk-ant-abcdefghijklmnopqrstuvwxyz012345")
            .contains(&SensitiveKind::ApiToken));
        assert!(kinds("use ghp_abcdefghijklmnopqrstuvwxyz0123456789")
            .contains(&SensitiveKind::ApiToken));
        assert!(kinds("AKIAIOSFODNN7EXAMPLE").contains(&SensitiveKind::ApiToken));
        assert_eq!(
            kinds("password = hunter2hunter2"),
            vec![SensitiveKind::SecretAssignment]
        );
        // env-style lines: a prefix before the name, a short value
        for line in [
            "DB_PASSWORD=s3cret!",
            "export AWS_SECRET_KEY=abc123xyz",
            "password=hunter",
            "SMTP_PWD: letmein",
        ] {
            assert_eq!(kinds(line), vec![SensitiveKind::SecretAssignment], "{line}");
        }
        assert_eq!(kinds("mail alice@example.com"), vec![SensitiveKind::Email]);
        assert_eq!(
            kinds("call +1 415-555-2671 now"),
            vec![SensitiveKind::PhoneNumber]
        );
        assert_eq!(
            kinds("card 4111 1111 1111 1111"),
            vec![SensitiveKind::CardNumber]
        );
    }

    #[test]
    fn ordinary_text_is_clean() {
        for t in [
            "Deploys go through the staging cluster first.",
            "Retry idempotent calls with jittered backoff. 2026-11-22T23:41:15Z",
            "card 4111 1111 1111 1112", // fails Luhn
            "pubkey 9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj is public",
            "hash 55a16b7c8297160c3f989eb732bcbcd1f4cbd6240bb468b6d7c56c6b11636c97",
            "[1, 2, 3] small array",
        ] {
            assert!(scan(t).is_empty(), "{t}: {:?}", scan(t));
        }
    }

    use proptest::prelude::*;

    /// Secret fragments, near misses, Unicode digits and case tricks.
    const FRAGMENTS: &[&str] = &[
        "-----BEGIN EC PRIVATE KEY-----", "PRIVATE KEY-----", "sk-ant-abcdefghijklmnopqrstuvwxyz0",
        "sk-", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAIOSFODNN7EXAMPLE", "AKIA",
        "xoxb-1234567890-abc", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "glpat-abcdefghijklmnopqrst",
        "sk_live_abcdefghijklmnopqrstu", "github_pat_abcdefghijklmnopqrstuvwxyz",
        "password = hunter2hunter2", "PASSWD: correcthorse", "Api-Key=0123456789", "\u{212A}ey",
        "api_\u{212A}ey: abcdefghij", "\u{17F}ecret: abcdefghij", "alice@example.com", "@", "+1 415-555-2671",
        "(415) 555 2671", "415-555-2671", "4222222222222", "4111 1111 1111 1111", "4111111111111111", "4111-1111-1111-1112",
        "\u{664}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661}",
        "\u{661}\u{662}\u{663} \u{664}\u{665}\u{666} \u{667}\u{668}\u{669}\u{660}",
        "[", ",", "12, ", "]", " ", "\n", "\u{e9}", "key", "token", "secret", "private_key = zzzzzzzzzz",
        "DB_PASSWORD=s3cret!", "MY_PWD: abcdef", "_", "=",
    ];

    #[test]
    fn each_fragment_alone_scans_the_same_both_ways() {
        for f in FRAGMENTS {
            assert_eq!(scan(f), scan_precise(f), "{f:?}");
        }
    }

    proptest::proptest! {
        /// The prefilter never hides a finding: texts built from secret
        /// fragments, near misses, digits, Unicode digits and case tricks.
        #[test]
        fn the_fast_path_finds_exactly_what_every_pattern_finds(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(FRAGMENTS.to_vec()).prop_map(str::to_string),
                    "[0-9 ,.-]{0,30}",
                    "[1-9A-HJ-NP-Za-km-z]{0,100}",
                    ".{0,20}",
                ],
                0..12,
            )
        ) {
            let text: String = parts.concat();
            proptest::prop_assert_eq!(scan(&text), scan_precise(&text));
        }
    }

    #[test]
    fn long_secrets_and_keystores_still_found_by_the_fast_path() {
        let sk = bs58::encode([9u8; 64]).into_string();
        let arr = format!("[{}]", vec!["255"; 64].join(","));
        for t in [format!("x {sk} y"), arr, "mail bob@example.org".into()] {
            assert_eq!(scan(&t), scan_precise(&t), "{t}");
            assert!(!scan(&t).is_empty(), "{t}");
        }
    }

    #[test]
    fn luhn() {
        assert!(luhn_ok(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn_ok(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
    }
}
