//! Text for a terminal: what strangers wrote (bought or imported memories,
//! listing descriptions, offer messages, errors quoting them) reaches the
//! reader's terminal only with its control characters shown, not obeyed.
//! An escape sequence in a memory could otherwise write the reader's
//! clipboard (OSC 52), hide text (SGR 8), retitle the window or move the
//! cursor over what was printed; a bidirectional override could reorder
//! what is read.
//!
//! Owns the one rule every human output goes through ([`safe`]); never
//! touches `--json` output (JSON escapes control characters itself).

use std::borrow::Cow;

/// Whether `c` would act on a terminal rather than print: C0 controls but
/// newline and tab, DEL, C1 controls, and the bidirectional embeddings,
/// overrides and isolates.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that would act on a terminal written as a
/// visible escape (`\x1b`, `\u{202e}`); borrowed when there is none.
pub fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !acts(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::safe;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        // OSC 52 (write the clipboard), SGR 8 (hidden text), a carriage
        // return over the line, a right-to-left override, a C1 CSI
        let hostile = "a\u{1b}]52;c;cm0gLXJmIH4=\u{7}b\u{1b}[8mhidden\u{1b}[0m\rc\u{202e}d\u{9b}2J";
        let shown = safe(hostile);
        assert_eq!(
            shown,
            "a\\x1b]52;c;cm0gLXJmIH4=\\x07b\\x1b[8mhidden\\x1b[0m\\x0dc\\u{202e}d\\x9b2J"
        );
        assert!(!shown.chars().any(|c| c.is_control()));
        // plain text, newlines and tabs pass untouched (and unallocated)
        assert!(matches!(safe("a\tb\nc é ✓"), std::borrow::Cow::Borrowed(_)));
    }
}
