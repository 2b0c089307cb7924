//! The Solana CLI's own configuration (`~/.config/solana/cli/config.yml`,
//! written by `solana config set`): when a user has one, brainctl's
//! cluster, commitment and keypair default to it, as `solana`, `anchor` and
//! `spl-token` do. Precedence (said in `--help`): the flag, then its
//! `BRAINCTL_*` variable, then this file, then brainctl's own default.
//!
//! The file is flat YAML of scalar keys; only `json_rpc_url`,
//! `keypair_path` and `commitment` are read (a line parser, not a YAML
//! library: the three keys are top-level scalars the Solana CLI writes one
//! per line). Owns reading that file; never writes it.

use std::path::{Path, PathBuf};

/// What the Solana CLI's config sets (empty values are unset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SolanaConfig {
    /// Where it was read.
    pub path: PathBuf,
    /// `json_rpc_url`.
    pub json_rpc_url: Option<String>,
    /// `keypair_path`.
    pub keypair_path: Option<PathBuf>,
    /// `commitment`.
    pub commitment: Option<String>,
}

/// Where the Solana CLI keeps its config under `home`.
pub fn default_path(home: &Path) -> PathBuf {
    home.join(".config/solana/cli/config.yml")
}

/// Reads the config under `home`, if the user has one. An unreadable file
/// is an error naming it; a missing one is `None`.
pub fn read(home: &Path) -> Result<Option<SolanaConfig>, std::io::Error> {
    let path = default_path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(parse(&path, &text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        )),
    }
}

/// Parses the config's text.
pub fn parse(path: &Path, text: &str) -> SolanaConfig {
    let mut c = SolanaConfig {
        path: path.to_path_buf(),
        ..Default::default()
    };
    for line in text.lines() {
        // top-level keys only (nested maps such as address_labels are indented)
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        if value.is_empty() {
            continue;
        }
        match key.trim() {
            "json_rpc_url" => c.json_rpc_url = Some(value.to_string()),
            "keypair_path" => c.keypair_path = Some(PathBuf::from(value)),
            "commitment" => c.commitment = Some(value.to_string()),
            _ => {}
        }
    }
    c
}

/// A YAML scalar without its quotes (`"..."` or `'...'`).
fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_solana_config_set_writes() {
        let text = r#"---
json_rpc_url: "https://api.devnet.solana.com"
websocket_url: ""
keypair_path: /home/ana/.config/solana/id.json
address_labels:
  "11111111111111111111111111111111": System Program
commitment: confirmed
"#;
        let c = parse(Path::new("c.yml"), text);
        assert_eq!(
            c.json_rpc_url.as_deref(),
            Some("https://api.devnet.solana.com")
        );
        assert_eq!(
            c.keypair_path.as_deref(),
            Some(Path::new("/home/ana/.config/solana/id.json"))
        );
        assert_eq!(c.commitment.as_deref(), Some("confirmed"));
        // empty or absent keys are unset; nested keys are not read
        let c = parse(
            Path::new("c.yml"),
            "json_rpc_url: ''\nx:\n  commitment: processed\n",
        );
        assert_eq!((c.json_rpc_url, c.commitment), (None, None));
    }
}
