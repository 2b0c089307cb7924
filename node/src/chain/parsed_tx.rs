//! A fetched transaction (`getTransaction`, encoding `jsonParsed`) reduced
//! to what settlement and the indexer need: slot, block time, success,
//! signers, fee payer, top-level memos and System transfers.
//!
//! Strict: a shape we don't understand is an error naming the field, never
//! a panic, never a guess. Decoding is pure, so recorded JSON fixtures test it.

use super::instructions::is_memo_program;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A System transfer at the top level of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// Payer.
    pub from: String,
    /// Payee.
    pub to: String,
    /// Amount.
    pub lamports: u64,
}

/// What we read from one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedTx {
    /// First signature (the transaction id).
    pub signature: String,
    /// Slot.
    pub slot: u64,
    /// Block time (unix seconds), when the node knows it.
    pub block_time: Option<i64>,
    /// True when `meta.err` is null.
    pub succeeded: bool,
    /// Account keys that signed, fee payer first.
    pub signers: Vec<String>,
    /// Memo texts of top-level memo instructions, in order.
    pub memos: Vec<String>,
    /// Top-level System transfers, in order.
    pub transfers: Vec<Transfer>,
    /// Log messages, kept only when the escrow program ran (its events
    /// live there); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// Top-level escrow-program `deposit` instructions: (listing account,
    /// buyer), so an escrow buy is bound to the deposit in its own transaction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deposits: Vec<crate::escrow::Deposit>,
}

/// Why a transaction JSON did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected transaction JSON: {0}")]
pub struct TxShapeError(pub String);

fn need<'a>(v: &'a Value, path: &str) -> Result<&'a Value, TxShapeError> {
    path.split('.')
        .try_fold(v, |cur, k| cur.get(k))
        .ok_or_else(|| TxShapeError(format!("missing `{path}`")))
}

/// An escrow-program instruction rendered unparsed (`accounts`, base58
/// `data`) that is a `deposit`, if it is one.
fn escrow_deposit(ix: &Value) -> Result<Option<crate::escrow::Deposit>, TxShapeError> {
    let accounts = ix
        .get("accounts")
        .and_then(Value::as_array)
        .ok_or_else(|| TxShapeError("escrow instruction without `accounts`".into()))?
        .iter()
        .map(|a| a.as_str().and_then(|s| s.parse().ok()))
        .collect::<Option<Vec<solana_sdk::pubkey::Pubkey>>>()
        .ok_or_else(|| TxShapeError("escrow instruction account is not a pubkey".into()))?;
    let data = ix
        .get("data")
        .and_then(Value::as_str)
        .and_then(|d| bs58::decode(d).into_vec().ok())
        .ok_or_else(|| TxShapeError("escrow instruction `data` is not base58".into()))?;
    Ok(crate::escrow::deposit_of(&accounts, &data))
}

impl ParsedTx {
    /// Decodes a `getTransaction` result in `jsonParsed` encoding.
    pub fn from_json(v: &Value) -> Result<ParsedTx, TxShapeError> {
        let slot = need(v, "slot")?
            .as_u64()
            .ok_or_else(|| TxShapeError("`slot` is not a number".into()))?;
        let block_time = v.get("blockTime").and_then(Value::as_i64);
        let meta = need(v, "meta")?;
        let succeeded = meta.get("err").is_none_or(Value::is_null);
        let signature = need(v, "transaction.signatures")?
            .get(0)
            .and_then(Value::as_str)
            .ok_or_else(|| TxShapeError("no signature".into()))?
            .to_string();
        let keys = need(v, "transaction.message.accountKeys")?
            .as_array()
            .ok_or_else(|| TxShapeError("`accountKeys` is not an array (use jsonParsed)".into()))?;
        let mut signers = Vec::new();
        for k in keys {
            let pubkey = k.get("pubkey").and_then(Value::as_str).ok_or_else(|| {
                TxShapeError("account key without `pubkey` (use jsonParsed encoding)".into())
            })?;
            if k.get("signer").and_then(Value::as_bool) == Some(true) {
                signers.push(pubkey.to_string());
            }
        }
        let ixs = need(v, "transaction.message.instructions")?
            .as_array()
            .ok_or_else(|| TxShapeError("`instructions` is not an array".into()))?;
        let mut memos = Vec::new();
        let mut transfers = Vec::new();
        let mut deposits = Vec::new();
        for ix in ixs {
            let program_id = ix
                .get("programId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if program_id == crate::escrow::PROGRAM_ID {
                deposits.extend(escrow_deposit(ix)?);
            } else if is_memo_program(program_id) {
                // jsonParsed renders memo data as a string in `parsed`.
                match ix.get("parsed").and_then(Value::as_str) {
                    Some(text) => memos.push(text.to_string()),
                    None => {
                        return Err(TxShapeError("memo instruction without parsed text".into()))
                    }
                }
            } else if ix.get("program").and_then(Value::as_str) == Some("system")
                && ix.pointer("/parsed/type").and_then(Value::as_str) == Some("transfer")
            {
                let info = ix
                    .pointer("/parsed/info")
                    .ok_or_else(|| TxShapeError("transfer without info".into()))?;
                let field = |k: &str| {
                    info.get(k)
                        .and_then(Value::as_str)
                        .map(String::from)
                        .ok_or_else(|| TxShapeError(format!("transfer without `{k}`")))
                };
                let lamports = info
                    .get("lamports")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| TxShapeError("transfer without `lamports`".into()))?;
                transfers.push(Transfer {
                    from: field("source")?,
                    to: field("destination")?,
                    lamports,
                });
            }
        }
        let escrow_invoke = format!("Program {} invoke", crate::escrow::PROGRAM_ID);
        let logs: Vec<String> = meta
            .get("logMessages")
            .and_then(Value::as_array)
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .filter(|lines: &Vec<String>| lines.iter().any(|l| l.starts_with(&escrow_invoke)))
            .unwrap_or_default();
        Ok(ParsedTx {
            signature,
            slot,
            block_time,
            succeeded,
            signers,
            memos,
            transfers,
            logs,
            deposits,
        })
    }

    /// The fee payer (first signer).
    pub fn fee_payer(&self) -> Option<&str> {
        self.signers.first().map(String::as_str)
    }

    /// Whether `pubkey` signed.
    pub fn signed_by(&self, pubkey: &str) -> bool {
        self.signers.iter().any(|s| s == pubkey)
    }

    /// Total lamports transferred from `from` to `to` at the top level.
    pub fn paid(&self, from: &str, to: &str) -> u64 {
        self.transfers
            .iter()
            .filter(|t| t.from == from && t.to == to)
            .fold(0u64, |acc, t| acc.saturating_add(t.lamports))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(err: Value) -> Value {
        json!({
            "slot": 42, "blockTime": 1_700_000_000,
            "meta": {"err": err, "fee": 5000},
            "transaction": {
                "signatures": ["sig1"],
                "message": {
                    "accountKeys": [
                        {"pubkey": "Payer", "signer": true, "writable": true, "source": "transaction"},
                        {"pubkey": "Seller", "signer": false, "writable": true, "source": "transaction"}
                    ],
                    "instructions": [
                        {"parsed": {"info": {"destination": "Seller", "lamports": 10, "source": "Payer"}, "type": "transfer"},
                         "program": "system", "programId": "11111111111111111111111111111111", "stackHeight": null},
                        {"parsed": "brainctl-marketplace/v1:cancel:x", "program": "spl-memo",
                         "programId": "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "stackHeight": null}
                    ]
                }
            }
        })
    }

    #[test]
    fn decodes_memos_transfers_signers() {
        let t = ParsedTx::from_json(&sample(Value::Null)).unwrap();
        assert!(t.succeeded);
        assert_eq!(t.memos, vec!["brainctl-marketplace/v1:cancel:x"]);
        assert_eq!(t.paid("Payer", "Seller"), 10);
        assert_eq!(t.paid("Seller", "Payer"), 0);
        assert!(t.signed_by("Payer") && !t.signed_by("Seller"));
        assert_eq!(t.fee_payer(), Some("Payer"));
        let failed =
            ParsedTx::from_json(&sample(json!({"InstructionError": [0, "Custom"]}))).unwrap();
        assert!(!failed.succeeded);
    }

    #[test]
    fn bad_shapes_are_errors() {
        for v in [
            json!(null),
            json!({"slot": "x"}),
            json!({"slot": 1, "meta": {}, "transaction": {"signatures": [], "message": {}}}),
        ] {
            assert!(ParsedTx::from_json(&v).is_err());
        }
        let mut raw = sample(Value::Null);
        raw["transaction"]["message"]["accountKeys"] = json!(["Payer", "Seller"]);
        assert!(ParsedTx::from_json(&raw)
            .unwrap_err()
            .0
            .contains("jsonParsed"));
    }

    #[test]
    fn escrow_deposits_are_decoded_and_hostile_ones_refused() {
        use solana_sdk::pubkey::Pubkey;
        let (listing, buyer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let ix = crate::escrow::deposit(&listing, &buyer, &[7; 32]);
        let unparsed = |accounts: Vec<String>, data: &[u8]| {
            json!({"programId": crate::escrow::PROGRAM_ID, "accounts": accounts,
                   "data": bs58::encode(data).into_string(), "stackHeight": null})
        };
        let keys: Vec<String> = ix.accounts.iter().map(|m| m.pubkey.to_string()).collect();
        let mut raw = sample(Value::Null);
        raw["transaction"]["message"]["instructions"]
            .as_array_mut()
            .unwrap()
            .push(unparsed(keys.clone(), &ix.data));
        let t = ParsedTx::from_json(&raw).unwrap();
        assert_eq!(
            t.deposits,
            vec![crate::escrow::Deposit {
                listing: listing.to_string(),
                buyer: buyer.to_string()
            }]
        );
        // another instruction of the program (release) is no deposit
        let release = crate::escrow::release(&listing, &buyer, &buyer, &buyer, "e", &[0; 32]);
        raw["transaction"]["message"]["instructions"][2] = unparsed(
            release
                .accounts
                .iter()
                .map(|m| m.pubkey.to_string())
                .collect(),
            &release.data,
        );
        assert!(ParsedTx::from_json(&raw).unwrap().deposits.is_empty());
        // a deposit with a short argument, or missing accounts, is no deposit
        raw["transaction"]["message"]["instructions"][2] = unparsed(keys.clone(), &ix.data[..20]);
        assert!(ParsedTx::from_json(&raw).unwrap().deposits.is_empty());
        raw["transaction"]["message"]["instructions"][2] = unparsed(keys[..3].to_vec(), &ix.data);
        assert!(ParsedTx::from_json(&raw).unwrap().deposits.is_empty());
        // malformed shapes are errors naming the field
        raw["transaction"]["message"]["instructions"][2]["data"] = json!("0OIl");
        assert!(ParsedTx::from_json(&raw).unwrap_err().0.contains("base58"));
        raw["transaction"]["message"]["instructions"][2]["accounts"] = json!(["nope"]);
        assert!(ParsedTx::from_json(&raw).unwrap_err().0.contains("pubkey"));
    }
}
