//! The price list of paid tool calls: which MCP tools cost what, in which
//! token, paid to whom. An operator writes it as JSON:
//!
//! ```json
//! {
//!   "mint": "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
//!   "tools": { "memory_search": "10000", "market_browse": 5000 },
//!   "pay_to": "<wallet, optional: the node's own>",
//!   "network": "<CAIP-2 id, optional: the cluster's own>",
//!   "max_timeout_seconds": 60
//! }
//! ```
//!
//! Prices are in the mint's base units (a decimal string or a whole
//! number; the test dollar and USDC have 6 decimals, so `10000` is one
//! cent). A tool not named is free.
//!
//! Owns: reading and checking the file (every refusal names the field and
//! the fix). Never: reads the chain (the mint is checked where the list is
//! put to use, [`super::paid_calls`]).

use serde::Deserialize;
use solana_sdk::pubkey::Pubkey;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest price file read.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// A checked price list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceList {
    /// The token every call is paid in.
    pub mint: Pubkey,
    /// Tool name to price in the mint's base units (each above 0).
    pub tools: BTreeMap<String, u64>,
    /// Who is paid (`None`: the node's wallet, its fee payer).
    pub pay_to: Option<Pubkey>,
    /// The CAIP-2 id advertised (`None`: the cluster's own).
    pub network: Option<String>,
    /// How long a payment may take (x402's `maxTimeoutSeconds`).
    pub max_timeout_seconds: u64,
}

/// Why a price list is refused.
#[derive(Debug, thiserror::Error)]
pub enum PriceListError {
    /// The file could not be read.
    #[error("price list {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Over the size limit.
    #[error("price list {0}: larger than 64 KiB")]
    TooLarge(PathBuf),
    /// Not the JSON shape.
    #[error("price list {path}: {source} (expected {{\"mint\": \"<mint>\", \"tools\": {{\"<tool>\": \"<base units>\"}}}})")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A field does not hold what it must.
    #[error("price list {path}: `{field}` {why}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What is wrong and how to fix it.
        why: String,
    },
}

/// A price as written: a decimal string or a whole number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Written {
    Text(String),
    Number(u64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    mint: String,
    tools: BTreeMap<String, Written>,
    #[serde(default)]
    pay_to: Option<String>,
    #[serde(default)]
    network: Option<String>,
    #[serde(default = "default_timeout")]
    max_timeout_seconds: u64,
}

fn default_timeout() -> u64 {
    60
}

impl PriceList {
    /// Reads and checks the list at `path`.
    pub fn load(path: &Path) -> Result<PriceList, PriceListError> {
        let io = |source| PriceListError::Io {
            path: path.into(),
            source,
        };
        if std::fs::metadata(path).map_err(io)?.len() > MAX_FILE_BYTES {
            return Err(PriceListError::TooLarge(path.into()));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        PriceList::parse(&text, path)
    }

    /// Checks `text`, the list read from `path` (named in errors).
    pub fn parse(text: &str, path: &Path) -> Result<PriceList, PriceListError> {
        let file: File = serde_json::from_str(text).map_err(|source| PriceListError::Json {
            path: path.into(),
            source,
        })?;
        let field = |field: &str, why: String| PriceListError::Field {
            path: path.into(),
            field: field.into(),
            why,
        };
        let key = |name: &str, value: &str| {
            value
                .trim()
                .parse::<Pubkey>()
                .map_err(|_| field(name, format!("{value:?} is not a base58 address")))
        };
        let mint = key("mint", &file.mint)?;
        let pay_to = file
            .pay_to
            .as_deref()
            .map(|p| key("pay_to", p))
            .transpose()?;
        if file.tools.is_empty() {
            return Err(field(
                "tools",
                "names no tool; price at least one (e.g. {\"memory_search\": \"10000\"}) or run without a price list".into(),
            ));
        }
        let mut tools = BTreeMap::new();
        for (tool, written) in file.tools {
            let name = format!("tools.{tool}");
            let units = match written {
                Written::Number(n) => n,
                Written::Text(t) => t.trim().parse::<u64>().map_err(|_| {
                    field(
                        &name,
                        format!("{t:?} is not a whole number of the mint's base units"),
                    )
                })?,
            };
            if units == 0 {
                return Err(field(
                    &name,
                    "is 0; a free tool is left out of the list".into(),
                ));
            }
            tools.insert(tool, units);
        }
        if let Some(n) = &file.network {
            if !n.starts_with("solana:") {
                return Err(field(
                    "network",
                    format!("{n:?} is not a Solana CAIP-2 id (solana:<genesis hash prefix>)"),
                ));
            }
        }
        if !(10..=600).contains(&file.max_timeout_seconds) {
            return Err(field(
                "max_timeout_seconds",
                format!("is {}; give 10 to 600 seconds", file.max_timeout_seconds),
            ));
        }
        Ok(PriceList {
            mint,
            tools,
            pay_to,
            network: file.network,
            max_timeout_seconds: file.max_timeout_seconds,
        })
    }

    /// Tools priced that are not in `exposed`, for a refusal at start.
    pub fn unexposed<'a>(
        &'a self,
        exposed: &'a std::collections::BTreeSet<String>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.tools
            .keys()
            .filter(move |t| !exposed.contains(*t))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USDC: &str = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";

    fn parse(text: &str) -> Result<PriceList, PriceListError> {
        PriceList::parse(text, Path::new("prices.json"))
    }

    #[test]
    fn reads_strings_and_numbers_with_defaults() {
        let l = parse(&format!(
            r#"{{"mint": "{USDC}", "tools": {{"memory_search": "10000", "market_browse": 5000}}}}"#
        ))
        .unwrap();
        assert_eq!(l.mint.to_string(), USDC);
        assert_eq!(l.tools["memory_search"], 10_000);
        assert_eq!(l.tools["market_browse"], 5_000);
        assert_eq!(
            (l.pay_to, l.network, l.max_timeout_seconds),
            (None, None, 60)
        );
    }

    #[test]
    fn every_refusal_names_its_field() {
        let cases = [
            (
                r#"{"mint": "nope", "tools": {"a": 1}}"#.to_string(),
                "`mint`",
            ),
            (format!(r#"{{"mint": "{USDC}", "tools": {{}}}}"#), "`tools`"),
            (
                format!(r#"{{"mint": "{USDC}", "tools": {{"a": "1.5"}}}}"#),
                "`tools.a`",
            ),
            (
                format!(r#"{{"mint": "{USDC}", "tools": {{"a": 0}}}}"#),
                "`tools.a`",
            ),
            (
                format!(r#"{{"mint": "{USDC}", "tools": {{"a": 1}}, "pay_to": "x"}}"#),
                "`pay_to`",
            ),
            (
                format!(r#"{{"mint": "{USDC}", "tools": {{"a": 1}}, "network": "eip155:1"}}"#),
                "`network`",
            ),
            (
                format!(r#"{{"mint": "{USDC}", "tools": {{"a": 1}}, "max_timeout_seconds": 1}}"#),
                "`max_timeout_seconds`",
            ),
        ];
        for (text, field) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
        let e = parse(&format!(
            r#"{{"mint": "{USDC}", "tools": {{"a": 1}}, "fee": 2}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("fee"), "{e}");
    }

    #[test]
    fn names_priced_tools_that_are_not_exposed() {
        let l = parse(&format!(
            r#"{{"mint": "{USDC}", "tools": {{"memory_search": 1, "market_buy": 2}}}}"#
        ))
        .unwrap();
        let exposed = ["memory_search".to_string()].into_iter().collect();
        assert_eq!(l.unexposed(&exposed).collect::<Vec<_>>(), ["market_buy"]);
    }
}
