//! Turns user search text into a safe FTS5 query.
//!
//! Every token becomes a quoted string, so FTS5 syntax in user text (`"`,
//! `*`, `:`, `NEAR`, `AND`, parentheses, unbalanced quotes) is matched as
//! words, never parsed. Owns nothing else.

/// The FTS5 MATCH expression for `text`: quoted tokens joined by spaces
/// (implicit AND). `None` when the text has no searchable token.
pub fn match_expression(text: &str) -> Option<String> {
    let tokens: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .take(32)
        .map(|t| format!("\"{t}\""))
        .collect();
    (!tokens.is_empty()).then(|| tokens.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hostile_syntax_becomes_words() {
        assert_eq!(
            match_expression("deploy NEAR(\"x* :y").unwrap(),
            "\"deploy\" \"NEAR\" \"x\" \"y\""
        );
        assert_eq!(match_expression("\"\"\" ** :: ()"), None);
        assert_eq!(
            match_expression("café ünïcode").unwrap(),
            "\"café\" \"ünïcode\""
        );
    }

    proptest! {
        #[test]
        fn tokens_never_contain_quotes(s in ".*") {
            if let Some(expr) = match_expression(&s) {
                for tok in expr.split(' ') {
                    prop_assert!(tok.len() >= 3 && tok.starts_with('"') && tok.ends_with('"'));
                    prop_assert!(!tok[1..tok.len() - 1].contains('"'));
                }
            }
        }
    }
}
