//! x402's wire shapes (protocol version 2, and version 1 where clients
//! still send it) as the `exact` scheme on Solana uses them: the payment
//! requirements a 402 answer carries, the payment a client retries with,
//! the settlement answer; and the header encoding (standard base64 of
//! JSON). Field names are the protocol's camelCase.
//!
//! Owns the shapes only; never checks a transaction (that is
//! [`super::verify`]'s) and never talks to the chain.

use base64::Engine as _;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The 402 answer's header (v2).
pub const PAYMENT_REQUIRED: &str = "PAYMENT-REQUIRED";
/// The client's payment header (v2).
pub const PAYMENT_SIGNATURE: &str = "PAYMENT-SIGNATURE";
/// The settlement answer's header (v2; v1 clients read it too).
pub const PAYMENT_RESPONSE: &str = "PAYMENT-RESPONSE";
/// The client's payment header (v1).
pub const X_PAYMENT: &str = "X-PAYMENT";
/// The settlement answer's header (v1).
pub const X_PAYMENT_RESPONSE: &str = "X-PAYMENT-RESPONSE";

/// CAIP-2 ids of the public Solana clusters (the only ones x402 clients
/// accept; a local validator advertises devnet's, see the node's setting).
pub const SOLANA_MAINNET: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// Devnet.
pub const SOLANA_DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
/// Testnet.
pub const SOLANA_TESTNET: &str = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z";

/// The v1 name of a CAIP-2 id (`solana`, `solana-devnet`,
/// `solana-testnet`), if it has one.
pub fn v1_network(caip2: &str) -> Option<&'static str> {
    match caip2 {
        SOLANA_MAINNET => Some("solana"),
        SOLANA_DEVNET => Some("solana-devnet"),
        SOLANA_TESTNET => Some("solana-testnet"),
        _ => None,
    }
}

/// The public RPC of a CAIP-2 id's cluster (Solana's own endpoints), if
/// it is a public one.
pub fn public_rpc(caip2: &str) -> Option<&'static str> {
    match caip2 {
        SOLANA_MAINNET => Some("https://api.mainnet-beta.solana.com"),
        SOLANA_DEVNET => Some("https://api.devnet.solana.com"),
        SOLANA_TESTNET => Some("https://api.testnet.solana.com"),
        _ => None,
    }
}

/// What the `exact` scheme's requirements carry beside the amount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extra {
    /// Who pays the transaction fee and co-signs (the seller's node).
    pub fee_payer: String,
    /// The memo the payment must carry, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memo: Option<String>,
    /// The asset's token program (SPL Token or Token-2022): clients that
    /// derive token accounts without reading the mint (Faremeter) take it
    /// from here. Advisory: the payment is checked against the mint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_program: Option<String>,
    /// The asset's decimals, as `TransferChecked` states them. Advisory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u8>,
}

impl Extra {
    /// What a payment must pay: fee payer and memo, with the asset's
    /// program and decimals (`token`) for the clients that read them.
    pub fn paying(
        fee_payer: String,
        memo: Option<String>,
        token: &crate::chain::token::TokenMint,
    ) -> Extra {
        Extra {
            fee_payer,
            memo,
            token_program: Some(token.program.to_string()),
            decimals: Some(token.decimals),
        }
    }
}

/// One way to pay (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// `exact`.
    pub scheme: String,
    /// The cluster's CAIP-2 id.
    pub network: String,
    /// Base units, as a decimal string.
    pub amount: String,
    /// The mint.
    pub asset: String,
    /// The wallet paid (its associated token account receives).
    pub pay_to: String,
    /// How long the payment may take.
    pub max_timeout_seconds: u64,
    /// Fee payer and memo.
    pub extra: Extra,
}

/// What is being paid for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URL.
    pub url: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the paid answer is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// The body of a 402 (v2), also sent base64 in [`PAYMENT_REQUIRED`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    /// 2.
    pub x402_version: u32,
    /// Why payment is asked for (or why the last one was refused).
    pub error: String,
    /// The resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    /// The ways to pay.
    pub accepts: Vec<Requirements>,
}

/// The v1 form of one way to pay (a 402 body with `x402Version: 1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementsV1 {
    /// `exact`.
    pub scheme: String,
    /// `solana`, `solana-devnet` or `solana-testnet`.
    pub network: String,
    /// Base units, as a decimal string.
    pub max_amount_required: String,
    /// The resource's URL.
    pub resource: String,
    /// What it is.
    pub description: String,
    /// What the paid answer is.
    pub mime_type: String,
    /// The wallet paid.
    pub pay_to: String,
    /// How long the payment may take.
    pub max_timeout_seconds: u64,
    /// The mint.
    pub asset: String,
    /// Fee payer and memo.
    pub extra: Extra,
}

/// The body of a v1 402 (`x402Version: 1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequiredV1 {
    /// 1.
    pub x402_version: u32,
    /// Why payment is asked for.
    pub error: String,
    /// The ways to pay, in v1's shape.
    pub accepts: Vec<RequirementsV1>,
}

impl Requirements {
    /// These requirements in v1's shape for `resource` (`None`: the
    /// network has no v1 name).
    pub fn to_v1(&self, resource: &Resource) -> Option<RequirementsV1> {
        Some(RequirementsV1 {
            scheme: self.scheme.clone(),
            network: v1_network(&self.network)?.to_string(),
            max_amount_required: self.amount.clone(),
            resource: resource.url.clone(),
            description: resource.description.clone().unwrap_or_default(),
            mime_type: resource
                .mime_type
                .clone()
                .unwrap_or_else(|| "application/json".into()),
            pay_to: self.pay_to.clone(),
            max_timeout_seconds: self.max_timeout_seconds,
            asset: self.asset.clone(),
            extra: self.extra.clone(),
        })
    }
}

/// The transaction a client signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SvmPayload {
    /// Base64 of the bincode `VersionedTransaction`, signed by the payer,
    /// the fee payer's signature left empty.
    pub transaction: String,
}

/// The payment a client retries with: v2 names the requirements it
/// chose (`accepted`), v1 only the scheme and network.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    /// 2 (absent: 2) or 1.
    #[serde(default = "two")]
    pub x402_version: u32,
    /// The signed transaction.
    pub payload: SvmPayload,
    /// v2: the requirements paid.
    #[serde(default)]
    pub accepted: Option<serde_json::Value>,
    /// v1: the scheme.
    #[serde(default)]
    pub scheme: Option<String>,
    /// v1: the network.
    #[serde(default)]
    pub network: Option<String>,
}

fn two() -> u32 {
    2
}

/// The CAIP-2 id of the cluster `chain` reads: `solana:` and the first 32
/// characters of its genesis hash (what x402 advertises by default).
pub async fn cluster_network(
    chain: &crate::chain::Chain,
) -> Result<String, crate::chain::ChainError> {
    let genesis =
        crate::chain::retry::with_retry("getGenesisHash", || chain.rpc().get_genesis_hash())
            .await?;
    Ok(format!("solana:{}", &genesis.to_string()[..32]))
}

/// Why `named` cannot be advertised for the cluster whose own id is
/// `cluster`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the network {named} is not this cluster's ({cluster}): a client would pay on another cluster; name the cluster's own id, or on a local validator devnet's or testnet's (the only ids x402 clients take besides mainnet's)")]
pub struct NetworkMismatch {
    /// The id asked for.
    pub named: String,
    /// The cluster's own id.
    pub cluster: String,
}

/// Checks the CAIP-2 id `named` against the cluster's own (`cluster`, its
/// genesis hash's): a public cluster advertises its own id only; a local
/// validator (whose id no client knows) also devnet's or testnet's, never
/// mainnet's.
pub fn check_network(named: &str, cluster: &str) -> Result<(), NetworkMismatch> {
    let public = [SOLANA_MAINNET, SOLANA_DEVNET, SOLANA_TESTNET];
    let local = !public.contains(&cluster);
    if named == cluster || (local && (named == SOLANA_DEVNET || named == SOLANA_TESTNET)) {
        return Ok(());
    }
    Err(NetworkMismatch {
        named: named.into(),
        cluster: cluster.into(),
    })
}

/// The requirements the payment says it paid must be ours exactly (v2),
/// or its scheme and network (v1, which names nothing else).
pub fn matches_requirements(p: &PaymentPayload, ours: &Requirements) -> Result<(), String> {
    if p.x402_version == 1 {
        let want = v1_network(&ours.network);
        return (p.scheme.as_deref() == Some("exact") && p.network.as_deref() == want)
            .then_some(())
            .ok_or_else(|| "the payment names another scheme or network".into());
    }
    let accepted: Requirements = p
        .accepted
        .clone()
        .ok_or("the payment names no accepted requirements")
        .and_then(|a| {
            serde_json::from_value(a).map_err(|_| "the accepted requirements do not read")
        })?;
    // the advisory fields (program, decimals) may be dropped by a client
    let accepted = Requirements {
        extra: Extra {
            token_program: ours.extra.token_program.clone(),
            decimals: ours.extra.decimals,
            ..accepted.extra
        },
        ..accepted
    };
    (accepted == *ours)
        .then_some(())
        .ok_or_else(|| "the payment accepted other requirements than the ones asked for".into())
}

/// The settlement answer, base64 in [`PAYMENT_RESPONSE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the payment landed.
    pub success: bool,
    /// Its signature (empty when it never did).
    pub transaction: String,
    /// The network, as the payment named it.
    pub network: String,
    /// Who paid (the transfer's authority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
}

/// Why a header does not decode.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    /// Not standard base64.
    #[error("not standard base64")]
    Base64,
    /// Not the JSON shape expected.
    #[error("not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// `value` as a header: standard base64 of its JSON.
pub fn encode_header<T: Serialize>(value: &T) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(value).expect("x402 shapes serialize"))
}

/// A header's value as `T`.
pub fn decode_header<T: DeserializeOwned>(value: &str) -> Result<T, HeaderError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .map_err(|_| HeaderError::Base64)?;
    Ok(serde_json::from_slice(&bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The shapes as the Python SDK (x402 2.25.0) writes and reads them.
    #[test]
    fn shapes_are_the_protocols_camel_case() {
        let r = Requirements {
            scheme: "exact".into(),
            network: SOLANA_DEVNET.into(),
            amount: "2000000".into(),
            asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU".into(),
            pay_to: "Seller".into(),
            max_timeout_seconds: 60,
            extra: Extra {
                fee_payer: "Seller".into(),
                memo: Some("m".into()),
                token_program: Some("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb".into()),
                decimals: Some(6),
            },
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["payTo"], "Seller");
        assert_eq!(v["maxTimeoutSeconds"], 60);
        assert_eq!(v["amount"], "2000000", "a string");
        assert_eq!(v["extra"]["feePayer"], "Seller");
        assert_eq!(
            v["extra"]["tokenProgram"],
            "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
        );
        assert_eq!(v["extra"]["decimals"], 6);
        let p: PaymentPayload = decode_header(&encode_header(&serde_json::json!({
            "x402Version": 2,
            "payload": {"transaction": "AQ=="},
            "accepted": v,
            "resource": {"url": "http://x", "description": null},
            "extensions": null,
        })))
        .unwrap();
        assert_eq!(p.x402_version, 2);
        assert_eq!(p.payload.transaction, "AQ==");
        let v1: PaymentPayload = serde_json::from_value(serde_json::json!({
            "x402Version": 1, "scheme": "exact", "network": "solana-devnet",
            "payload": {"transaction": "AQ=="}
        }))
        .unwrap();
        assert_eq!(v1.network.as_deref(), Some("solana-devnet"));
        assert!(decode_header::<PaymentPayload>("not base64!").is_err());
        assert_eq!(v1_network(SOLANA_DEVNET), Some("solana-devnet"));
    }

    fn ours() -> Requirements {
        Requirements {
            scheme: "exact".into(),
            network: SOLANA_DEVNET.into(),
            amount: "2000000".into(),
            asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU".into(),
            pay_to: "Seller".into(),
            max_timeout_seconds: 60,
            extra: Extra {
                fee_payer: "Seller".into(),
                memo: Some("x402:buy:20261126-0123456789ab".into()),
                token_program: None,
                decimals: None,
            },
        }
    }

    fn payload(v: Value) -> PaymentPayload {
        serde_json::from_value(v).unwrap()
    }

    /// A public cluster advertises only its own id; a local one also
    /// devnet's or testnet's, never mainnet's.
    #[test]
    fn the_advertised_network_is_the_clusters() {
        let local = "solana:7gGJnpbg1Xx3PkwG6sGzaXWpnrYyKAFH";
        assert_eq!(check_network(SOLANA_MAINNET, SOLANA_MAINNET), Ok(()));
        assert_eq!(check_network(SOLANA_DEVNET, SOLANA_DEVNET), Ok(()));
        assert_eq!(check_network(local, local), Ok(()));
        assert_eq!(check_network(SOLANA_DEVNET, local), Ok(()));
        assert_eq!(check_network(SOLANA_TESTNET, local), Ok(()));
        for (named, cluster) in [
            (SOLANA_MAINNET, local),
            (SOLANA_DEVNET, SOLANA_MAINNET),
            (SOLANA_MAINNET, SOLANA_DEVNET),
            (SOLANA_TESTNET, SOLANA_DEVNET),
            ("solana:whatever", local),
        ] {
            let e = check_network(named, cluster).unwrap_err();
            assert!(e.to_string().contains(named), "{e}");
        }
    }

    /// v2 must name exactly our requirements (a client that paid other
    /// terms is refused before its transaction is read); v1 names only
    /// the scheme and network, in their v1 form.
    #[test]
    fn a_payment_must_name_this_listings_requirements() {
        let r = ours();
        let tx = json!({"transaction": "AQ=="});
        let accepted = serde_json::to_value(&r).unwrap();
        assert_eq!(
            matches_requirements(
                &payload(json!({"x402Version": 2, "payload": tx, "accepted": accepted})),
                &r
            ),
            Ok(())
        );
        for (field, value) in [
            ("amount", json!("1999999")),
            (
                "asset",
                json!("So11111111111111111111111111111111111111112"),
            ),
            ("payTo", json!("Mallory")),
            ("network", json!(SOLANA_MAINNET)),
        ] {
            let mut other = accepted.clone();
            other[field] = value;
            assert!(
                matches_requirements(
                    &payload(json!({"x402Version": 2, "payload": tx, "accepted": other})),
                    &r
                )
                .is_err(),
                "{field}"
            );
        }
        // the advisory token program and decimals: dropped by a client,
        // still the same requirements
        let mut advertised = ours();
        advertised.extra.token_program = Some(spl_token_2022_interface::ID.to_string());
        advertised.extra.decimals = Some(6);
        assert_eq!(
            matches_requirements(
                &payload(json!({"x402Version": 2, "payload": tx, "accepted": accepted})),
                &advertised
            ),
            Ok(())
        );
        let mut memo = accepted.clone();
        memo["extra"]["memo"] = json!("x402:buy:20261126-ffffffffffff");
        assert!(matches_requirements(
            &payload(json!({"x402Version": 2, "payload": tx, "accepted": memo})),
            &r
        )
        .is_err());
        assert!(
            matches_requirements(&payload(json!({"payload": tx})), &r).is_err(),
            "v2 (the default) names what it accepted"
        );
        let v1 = |network: &str| {
            payload(json!({"x402Version": 1, "scheme": "exact", "network": network, "payload": tx}))
        };
        assert_eq!(matches_requirements(&v1("solana-devnet"), &r), Ok(()));
        assert!(matches_requirements(&v1("solana"), &r).is_err());
        assert!(matches_requirements(&v1(SOLANA_DEVNET), &r).is_err());
    }
}
