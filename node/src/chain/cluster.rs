//! Which cluster we talk to: `-u mainnet-beta|devnet|testnet|localhost|URL`
//! (the Solana CLI's monikers), the matching websocket URL, and the
//! commitment level.
//!
//! Whether fees apply is decided by the cluster's *genesis hash* (see
//! [`ClusterKind::from_genesis_hash`]), never by the URL's spelling, so a
//! private mainnet RPC still counts as mainnet.

use super::ChainError;
use solana_commitment_config::CommitmentConfig;

/// Genesis hash of mainnet-beta.
pub const MAINNET_GENESIS: &str = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d";
/// Genesis hash of devnet.
pub const DEVNET_GENESIS: &str = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG";
/// Genesis hash of testnet.
pub const TESTNET_GENESIS: &str = "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY";

/// Kinds of cluster, for fee and commitment rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterKind {
    /// mainnet-beta: protocol fees apply.
    MainnetBeta,
    /// devnet.
    Devnet,
    /// testnet.
    Testnet,
    /// Anything else (a local validator).
    Local,
}

impl ClusterKind {
    /// The kind of a cluster by its genesis hash.
    pub fn from_genesis_hash(hash: &str) -> ClusterKind {
        match hash {
            MAINNET_GENESIS => ClusterKind::MainnetBeta,
            DEVNET_GENESIS => ClusterKind::Devnet,
            TESTNET_GENESIS => ClusterKind::Testnet,
            _ => ClusterKind::Local,
        }
    }

    /// The name used in manifests and API calls.
    pub fn name(self) -> &'static str {
        match self {
            ClusterKind::MainnetBeta => "mainnet-beta",
            ClusterKind::Devnet => "devnet",
            ClusterKind::Testnet => "testnet",
            ClusterKind::Local => "localnet",
        }
    }
}

/// Endpoints of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// JSON-RPC URL.
    pub rpc_url: String,
    /// Websocket URL (pubsub).
    pub ws_url: String,
}

impl Endpoint {
    /// Parses `-u`: a moniker (`mainnet-beta`/`m`, `devnet`/`d`,
    /// `testnet`/`t`, `localhost`/`l`) or an `http(s)://` URL.
    pub fn parse(s: &str) -> Result<Endpoint, ChainError> {
        let rpc = match s {
            "mainnet-beta" | "m" | "mainnet" => "https://api.mainnet-beta.solana.com".to_string(),
            "devnet" | "d" => "https://api.devnet.solana.com".to_string(),
            "testnet" | "t" => "https://api.testnet.solana.com".to_string(),
            "localhost" | "l" | "localnet" => "http://127.0.0.1:8899".to_string(),
            url if url.starts_with("http://") || url.starts_with("https://") => url.trim_end_matches('/').to_string(),
            other => {
                return Err(ChainError::BadUrl(format!(
                    "`{other}` is not a cluster: use mainnet-beta, devnet, testnet, localhost or an http(s):// URL"
                )))
            }
        };
        let ws_url = ws_for(&rpc);
        Ok(Endpoint {
            rpc_url: rpc,
            ws_url,
        })
    }
}

/// The websocket URL of an RPC URL: scheme ws(s), port + 1 when explicit
/// (the Solana CLI's rule).
pub fn ws_for(rpc: &str) -> String {
    let (scheme, rest) = if let Some(r) = rpc.strip_prefix("https://") {
        ("wss://", r)
    } else {
        ("ws://", rpc.strip_prefix("http://").unwrap_or(rpc))
    };
    let (host_port, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let host_port = match host_port.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => {
            format!("{host}:{}", port.parse::<u16>().expect("checked") + 1)
        }
        _ => host_port.to_string(),
    };
    if path.is_empty() {
        format!("{scheme}{host_port}")
    } else {
        format!("{scheme}{host_port}/{path}")
    }
}

/// Parses `--commitment processed|confirmed|finalized`.
pub fn parse_commitment(s: &str) -> Result<CommitmentConfig, ChainError> {
    match s {
        "processed" => Ok(CommitmentConfig::processed()),
        "confirmed" => Ok(CommitmentConfig::confirmed()),
        "finalized" => Ok(CommitmentConfig::finalized()),
        other => Err(ChainError::BadUrl(format!(
            "commitment `{other}` is not one of processed, confirmed, finalized"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monikers_and_urls() {
        assert_eq!(Endpoint::parse("l").unwrap().ws_url, "ws://127.0.0.1:8900");
        assert_eq!(
            Endpoint::parse("devnet").unwrap().ws_url,
            "wss://api.devnet.solana.com"
        );
        let e = Endpoint::parse("https://rpc.example.com:443/key/").unwrap();
        assert_eq!(e.rpc_url, "https://rpc.example.com:443/key");
        assert_eq!(e.ws_url, "wss://rpc.example.com:444/key");
        assert!(Endpoint::parse("mainnet-bet")
            .unwrap_err()
            .to_string()
            .contains("localhost"));
        assert_eq!(
            ClusterKind::from_genesis_hash(MAINNET_GENESIS),
            ClusterKind::MainnetBeta
        );
        assert_eq!(ClusterKind::from_genesis_hash("x"), ClusterKind::Local);
        assert!(parse_commitment("final").is_err());
    }
}
