//! Finds secrets and personal data in memory text before it is signed and
//! sold: private keys (PEM, base58 64-byte Solana keys, keystore arrays),
//! API tokens, emails, phone numbers and Luhn-valid card numbers.
//!
//! Reports *what kind* and *where*, never the matched text itself.

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
        r#"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|password|passwd|private[_-]?key)\s*[:=]\s*["']?[^\s"']{8,}"#,
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

/// All sensitive findings in `text`, in order of offset.
pub fn scan(text: &str) -> Vec<Finding> {
    let p = &*PATTERNS;
    let mut out = Vec::new();
    let mut push = |kind, offset| out.push(Finding { kind, offset });
    for m in p.pem.find_iter(text) {
        push(SensitiveKind::PemPrivateKey, m.start());
    }
    for m in p.b58.find_iter(text) {
        if crate::crypto::b58_array::<64>(m.as_str()).is_some() {
            push(SensitiveKind::Base58SecretKey, m.start());
        }
    }
    for m in p.keystore.find_iter(text) {
        let all_bytes = m
            .as_str()
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .all(|n| n.trim().parse::<u16>().is_ok_and(|v| v <= 255));
        if all_bytes {
            push(SensitiveKind::KeystoreArray, m.start());
        }
    }
    for m in p.token.find_iter(text) {
        push(SensitiveKind::ApiToken, m.start());
    }
    for m in p.assignment.find_iter(text) {
        push(SensitiveKind::SecretAssignment, m.start());
    }
    for m in p.email.find_iter(text) {
        push(SensitiveKind::Email, m.start());
    }
    for c in p.phone.captures_iter(text) {
        let m = c.get(0).expect("whole match");
        let digits = m.as_str().bytes().filter(u8::is_ascii_digit).count();
        if (10..=15).contains(&digits) {
            push(SensitiveKind::PhoneNumber, m.start());
        }
    }
    for m in p.card.find_iter(text) {
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

    #[test]
    fn luhn() {
        assert!(luhn_ok(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn_ok(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
    }
}
