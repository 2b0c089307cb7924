//! The repository's own copies of the project's specifications: the
//! README and the guides cite `docs/DESIGN.md` (architecture, settlement
//! rules) and `docs/PROTOCOL.md` (wire formats). Each is the project's
//! shared original byte for byte: its SHA-256 is pinned here (taken from
//! the original when it was copied), so a clone anywhere checks the copy;
//! where the originals are beside the clone (`$BRAINCTL_SHARED_DIR`, by
//! default `../shared`), the copies are also compared with them, so an
//! original that moved on fails here until it is copied again.

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shared originals' SHA-256, as copied into docs/.
const SPECS: [(&str, &str); 2] = [
    (
        "DESIGN.md",
        "bd71d18087ce764a9add147be9cb746058e68f71fd3c52435ce52f931eefb8bb",
    ),
    (
        "PROTOCOL.md",
        "4e16abe19d3b708a89c7ca5e66691eb32ae038e55f4b1e0375d64700e65014cd",
    ),
];

#[test]
fn the_spec_copies_match_the_shared_originals() {
    let shared = std::env::var_os("BRAINCTL_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"));
    for (name, pinned) in SPECS {
        let copy = std::fs::read(repo().join("docs").join(name)).unwrap();
        assert_eq!(
            hex::encode(node::crypto::sha256(&copy)),
            pinned,
            "docs/{name} is not the copy of the shared original it was"
        );
        if let Ok(original) = std::fs::read(shared.join(name)) {
            assert!(
                copy == original,
                "docs/{name} differs from {}: copy it again (and pin its new SHA-256 here)",
                shared.join(name).display()
            );
        }
    }
}

/// Every document that cites DESIGN.md or PROTOCOL.md finds it in docs/.
#[test]
fn citations_of_the_specs_resolve_in_the_repo() {
    for doc in ["README.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        for name in ["DESIGN.md", "PROTOCOL.md"] {
            if text.contains(name) {
                assert!(
                    repo().join("docs").join(name).exists(),
                    "{doc} cites {name}"
                );
            }
        }
    }
}

/// The command lines of a document's ```sh blocks that run `bin`
/// (continuations joined; `VAR=value` prefixes dropped), with their line
/// numbers.
fn command_lines(text: &str, bin: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            in_block = !in_block && (t == "```sh" || t == "```bash" || t == "```shell");
            continue;
        }
        if !in_block {
            continue;
        }
        let (start, mut acc) = pending.take().unwrap_or((n + 1, String::new()));
        acc.push_str(t.trim_end_matches('\\'));
        acc.push(' ');
        if t.ends_with('\\') {
            pending = Some((start, acc));
            continue;
        }
        let words: Vec<&str> = acc.split_whitespace().collect();
        let first = words
            .iter()
            .position(|w| !w.contains('=') || w.starts_with('-'))
            .unwrap_or(words.len());
        if words.get(first) == Some(&bin) {
            out.push((start, words[first..].join(" ")));
        }
    }
    out
}

/// Shell words of `line` as far as a parser needs them: placeholders
/// (`<MANIFEST ID>`, `$VAR`, `$(...)`) become one word, the comment,
/// pipe and redirection end the command, quotes group.
fn shell_words(line: &str) -> Vec<String> {
    let mut s = String::new();
    let mut chars = line.chars().peekable();
    // placeholders first
    while let Some(c) = chars.next() {
        match c {
            '<' if line.contains('>') => {
                for d in chars.by_ref() {
                    if d == '>' {
                        break;
                    }
                }
                s.push_str("PLACEHOLDER");
            }
            '$' => {
                match chars.peek() {
                    Some('(') => {
                        let mut depth = 0;
                        for d in chars.by_ref() {
                            depth += match d {
                                '(' => 1,
                                ')' => -1,
                                _ => 0,
                            };
                            if depth == 0 {
                                break;
                            }
                        }
                    }
                    Some('{') => {
                        for d in chars.by_ref() {
                            if d == '}' {
                                break;
                            }
                        }
                    }
                    _ => {
                        while chars
                            .peek()
                            .is_some_and(|d| d.is_alphanumeric() || *d == '_')
                        {
                            chars.next();
                        }
                    }
                }
                s.push_str("PLACEHOLDER");
            }
            _ => s.push(c),
        }
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, '|' | '>' | '<' | ';' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Every `brainctl` and `brainctl-indexer` line in the README and the
/// guides parses against the binaries' own flags (BRAINCTL_PARSE_ONLY:
/// parsed, nothing run), so a renamed flag or command fails here before a
/// reader pastes it.
#[test]
fn every_documented_command_line_parses() {
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_brainctl"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut docs = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md")
            && !p.ends_with("DESIGN.md")
            && !p.ends_with("PROTOCOL.md")
        {
            docs.push(p);
        }
    }
    docs.sort();
    let (mut checked, mut failures) = (0, Vec::new());
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for bin in ["brainctl", "brainctl-indexer"] {
            let exe = bin_dir.join(bin);
            assert!(exe.exists(), "{} is not built", exe.display());
            for (line, cmd) in command_lines(&text, bin) {
                let words = shell_words(&cmd);
                let out = std::process::Command::new(&exe)
                    .args(&words[1..])
                    .env("BRAINCTL_PARSE_ONLY", "1")
                    .env("HOME", std::env::temp_dir())
                    .output()
                    .unwrap();
                checked += 1;
                if !out.status.success() {
                    let err = String::from_utf8_lossy(&out.stderr);
                    failures.push(format!(
                        "{}:{line}: {cmd}\n    {}",
                        doc.strip_prefix(repo()).unwrap_or(doc).display(),
                        err.lines().next().unwrap_or("")
                    ));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} command lines found");
    assert!(
        failures.is_empty(),
        "{} of {checked} documented commands do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn shell_words_keep_what_a_parser_needs() {
    assert_eq!(
        shell_words("brainctl -u devnet marketplace buy <MANIFEST ID> --timeout 90   # pays"),
        [
            "brainctl",
            "-u",
            "devnet",
            "marketplace",
            "buy",
            "PLACEHOLDER",
            "--timeout",
            "90"
        ]
    );
    assert_eq!(
        shell_words(r#"brainctl memory add "two words" -c x > out.json"#),
        ["brainctl", "memory", "add", "two words", "-c", "x"]
    );
    assert_eq!(
        shell_words("brainctl --json doctor | jq .checks"),
        ["brainctl", "--json", "doctor"]
    );
    assert_eq!(
        shell_words("brainctl import $FILE"),
        ["brainctl", "import", "PLACEHOLDER"]
    );
    assert_eq!(
        shell_words("brainctl wallet import - < key.txt"),
        ["brainctl", "wallet", "import", "-"]
    );
}
