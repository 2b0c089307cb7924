//! A fetched transaction (`getTransaction`, encoding `jsonParsed`) reduced
//! to what settlement and the indexer need: slot, block time, success,
//! signers, fee payer, top-level memos, System transfers and token
//! `transferChecked`s, the token balances the node reports, plus the
//! top-level calls and the inner instructions (where self-CPI events
//! live) of the programs the caller watches (raw: program, accounts,
//! data); never the logs, which the node truncates. What a
//! call means is its program's module's business (e.g. `escrow` reads its
//! deposits from them); this module knows no program but System, Memo and
//! the two token programs.
//!
//! Two levels of strictness, because strangers choose what lands on chain:
//! - the envelope (slot, meta, signature, `accountKeys` in jsonParsed form)
//!   is what any node returns for any transaction; without it the JSON is
//!   not a transaction and decoding is an error naming the field;
//! - an instruction is whatever its sender made it: one we cannot read (a
//!   memo the RPC left undecoded, a watched program's call with odd data, a
//!   transfer missing a field, something that is not even an object) is
//!   recorded in [`ParsedTx::anomalies`] and skipped, never an error. Such
//!   an instruction carries no memo, transfer or deposit, so it can only
//!   make a buy *fail* verification, never pass it.
//!
//! Never a panic, never a guess. Decoding is pure, so JSON fixtures test it.

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

/// An SPL Token or Token-2022 `transferChecked` (or Token-2022's
/// `transferCheckedWithFee`) at the top level of a transaction: the only
/// token transfers that name their mint and decimals. A plain `transfer`
/// names neither and pays nothing here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTransfer {
    /// The token program (SPL Token or Token-2022).
    pub program: String,
    /// The token account debited.
    pub source: String,
    /// The token account credited.
    pub destination: String,
    /// The mint.
    pub mint: String,
    /// Who authorized it: the source's owner or delegate (a multisig's
    /// account where one signed).
    pub authority: String,
    /// Base units debited from the source.
    pub amount: u64,
    /// The mint's decimals, as the instruction states them (the program
    /// refuses the transfer when they are not the mint's).
    pub decimals: u8,
    /// The fee `transferCheckedWithFee` states (0 otherwise; a mint with a
    /// transfer fee withholds one on a plain `transferChecked` too: what
    /// arrived is in [`ParsedTx::token_balances`]).
    #[serde(default)]
    pub fee: u64,
}

/// A token account's balance before and after a transaction, as the node
/// reports it (`meta.preTokenBalances` / `postTokenBalances`): what
/// actually arrived, whatever fees or hooks a mint has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBalance {
    /// The token account.
    pub account: String,
    /// Its mint.
    pub mint: String,
    /// Its owner (the wallet it belongs to).
    pub owner: String,
    /// The token program that owns it (empty where the node did not say).
    pub program: String,
    /// Base units before (0 when the account did not exist).
    pub pre: u64,
    /// Base units after (0 when it was closed).
    pub post: u64,
}

/// What we read from one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Top-level token `transferChecked`s, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub token_transfers: Vec<TokenTransfer>,
    /// Token balances the transaction changed or touched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub token_balances: Vec<TokenBalance>,
    /// Top-level calls of the watched programs, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ProgramCall>,
    /// Inner instructions (cross-program invocations, at any depth) to
    /// the watched programs, in order: where a program's self-CPI events
    /// (Anchor's `emit_cpi!`) live. The node records them whole, unlike
    /// log lines, which it truncates, so nothing earlier in the
    /// transaction can hide one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner_calls: Vec<ProgramCall>,
    /// Account pairs an older build decoded into its log (the escrow
    /// program's deposits, as `deposits`); read and written back as they
    /// are, never produced by this build.
    #[serde(default, rename = "deposits", skip_serializing_if = "Vec::is_empty")]
    pub legacy_deposits: Vec<LegacyDeposit>,
    /// Top-level instructions that could not be read, each with why (see
    /// the module doc); they contribute nothing to the fields above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<String>,
}

/// A top-level instruction of a watched program, as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramCall {
    /// The program (base58).
    pub program_id: String,
    /// Its accounts (base58), in order.
    pub accounts: Vec<String>,
    /// Its instruction data (base58 in JSON).
    #[serde(with = "base58_bytes")]
    pub data: Vec<u8>,
}

impl ProgramCall {
    /// The call an instruction makes (what the node returns for it once sent).
    pub fn of(ix: &solana_sdk::instruction::Instruction) -> ProgramCall {
        ProgramCall {
            program_id: ix.program_id.to_string(),
            accounts: ix.accounts.iter().map(|a| a.pubkey.to_string()).collect(),
            data: ix.data.clone(),
        }
    }

    /// The accounts as keys (every one parsed when the call was read).
    pub fn account_keys(&self) -> Vec<solana_sdk::pubkey::Pubkey> {
        self.accounts
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect()
    }
}

/// A (listing account, buyer) pair in a log written by an older build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyDeposit {
    /// The listing account (base58).
    pub listing: String,
    /// The buyer (base58).
    pub buyer: String,
}

mod base58_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&bs58::encode(bytes).into_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        bs58::decode(&text)
            .into_vec()
            .map_err(|_| serde::de::Error::custom("`data` is not base58"))
    }
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

/// A watched program's instruction rendered unparsed (`accounts`, base58
/// `data`), as a call.
fn program_call(program_id: &str, ix: &Value) -> Result<ProgramCall, TxShapeError> {
    let accounts = ix
        .get("accounts")
        .and_then(Value::as_array)
        .ok_or_else(|| TxShapeError(format!("{program_id} instruction without `accounts`")))?
        .iter()
        .map(|a| {
            a.as_str()
                .filter(|s| s.parse::<solana_sdk::pubkey::Pubkey>().is_ok())
                .map(String::from)
        })
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| TxShapeError(format!("{program_id} instruction account is not a pubkey")))?;
    let data = ix
        .get("data")
        .and_then(Value::as_str)
        .and_then(|d| bs58::decode(d).into_vec().ok())
        .ok_or_else(|| TxShapeError(format!("{program_id} instruction `data` is not base58")))?;
    Ok(ProgramCall {
        program_id: program_id.to_string(),
        accounts,
        data,
    })
}

/// What one top-level instruction contributes.
enum Read {
    Memo(String),
    Transfer(Transfer),
    TokenTransfer(TokenTransfer),
    Call(ProgramCall),
    Other,
}

/// Reads one top-level instruction; an error is an anomaly of this
/// instruction only.
fn read_instruction(ix: &Value, watched: &[impl AsRef<str>]) -> Result<Read, TxShapeError> {
    let program_id = ix
        .get("programId")
        .and_then(Value::as_str)
        .ok_or_else(|| TxShapeError("no `programId`".into()))?;
    if watched.iter().any(|w| w.as_ref() == program_id) {
        return Ok(Read::Call(program_call(program_id, ix)?));
    }
    if is_memo_program(program_id) {
        // jsonParsed renders memo data as a string in `parsed`; data that is
        // not UTF-8 (the program refuses it, so only in a failed
        // transaction) comes back undecoded.
        return match ix.get("parsed").and_then(Value::as_str) {
            Some(text) => Ok(Read::Memo(text.to_string())),
            None => Err(TxShapeError("memo instruction without parsed text".into())),
        };
    }
    if is_token_program(program_id) {
        return token_transfer(program_id, ix);
    }
    if ix.get("program").and_then(Value::as_str) != Some("system")
        || ix.pointer("/parsed/type").and_then(Value::as_str) != Some("transfer")
    {
        return Ok(Read::Other);
    }
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
    Ok(Read::Transfer(Transfer {
        from: field("source")?,
        to: field("destination")?,
        lamports,
    }))
}

/// SPL Token.
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// Token-2022.
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

fn is_token_program(program_id: &str) -> bool {
    program_id == TOKEN_PROGRAM || program_id == TOKEN_2022_PROGRAM
}

/// A token program's instruction: a `transferChecked` (with or without a
/// stated fee) is read, anything else is no payment.
fn token_transfer(program_id: &str, ix: &Value) -> Result<Read, TxShapeError> {
    let kind = ix.pointer("/parsed/type").and_then(Value::as_str);
    if !matches!(kind, Some("transferChecked" | "transferCheckedWithFee")) {
        return Ok(Read::Other);
    }
    let info = ix
        .pointer("/parsed/info")
        .ok_or_else(|| TxShapeError("transferChecked without info".into()))?;
    let field = |k: &str| {
        info.get(k)
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| TxShapeError(format!("transferChecked without `{k}`")))
    };
    let units = |k: &str| -> Result<(u64, Option<u8>), TxShapeError> {
        let v = info
            .get(k)
            .ok_or_else(|| TxShapeError(format!("transferChecked without `{k}`")))?;
        let amount = v
            .get("amount")
            .and_then(Value::as_str)
            .and_then(|a| a.parse::<u64>().ok())
            .ok_or_else(|| TxShapeError(format!("`{k}.amount` is not a u64 string")))?;
        let decimals = v
            .get("decimals")
            .and_then(Value::as_u64)
            .and_then(|d| u8::try_from(d).ok());
        Ok((amount, decimals))
    };
    let (amount, decimals) = units("tokenAmount")?;
    let decimals =
        decimals.ok_or_else(|| TxShapeError("`tokenAmount.decimals` is not a u8".into()))?;
    let fee = match kind {
        Some("transferCheckedWithFee") => units("feeAmount")?.0,
        _ => 0,
    };
    let authority = field("authority").or_else(|_| field("multisigAuthority"))?;
    Ok(Read::TokenTransfer(TokenTransfer {
        program: program_id.to_string(),
        source: field("source")?,
        destination: field("destination")?,
        mint: field("mint")?,
        authority,
        amount,
        decimals,
        fee,
    }))
}

/// The token balances in `meta` (pre and post joined by account index);
/// an entry that does not read is an anomaly, never a balance.
fn token_balances(meta: &Value, keys: &[Value], anomalies: &mut Vec<String>) -> Vec<TokenBalance> {
    let mut by_index: std::collections::BTreeMap<u64, TokenBalance> = Default::default();
    for (pre, field) in [(true, "preTokenBalances"), (false, "postTokenBalances")] {
        for b in meta
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let read = || -> Option<(u64, TokenBalance, u64)> {
                let index = b.get("accountIndex")?.as_u64()?;
                let balance = TokenBalance {
                    account: keys
                        .get(usize::try_from(index).ok()?)?
                        .get("pubkey")?
                        .as_str()?
                        .to_string(),
                    mint: b.get("mint")?.as_str()?.to_string(),
                    owner: b.get("owner")?.as_str()?.to_string(),
                    // older nodes leave the program out
                    program: b
                        .get("programId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    pre: 0,
                    post: 0,
                };
                let amount = b.pointer("/uiTokenAmount/amount")?.as_str()?.parse().ok()?;
                Some((index, balance, amount))
            };
            let Some((index, balance, amount)) = read() else {
                anomalies.push(format!("{field}: an entry that does not read"));
                continue;
            };
            let e = by_index.entry(index).or_insert(balance);
            if pre {
                e.pre = amount;
            } else {
                e.post = amount;
            }
        }
    }
    by_index.into_values().collect()
}

/// The watched programs' inner instructions (`meta.innerInstructions`),
/// in order; one that cannot be read is an anomaly, never an error.
fn inner_calls(
    meta: &Value,
    watched: &[impl AsRef<str>],
    anomalies: &mut Vec<String>,
) -> Vec<ProgramCall> {
    let groups = meta
        .get("innerInstructions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for group in groups {
        let list = group
            .get("instructions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, ix) in list.iter().enumerate() {
            let Some(program) = ix.get("programId").and_then(Value::as_str) else {
                continue;
            };
            if !watched.iter().any(|w| w.as_ref() == program) {
                continue;
            }
            match program_call(program, ix) {
                Ok(c) => out.push(c),
                Err(TxShapeError(why)) => {
                    let at = group.get("index").and_then(Value::as_u64).unwrap_or(0);
                    anomalies.push(format!("inner instruction {at}.{i}: {why}"))
                }
            }
        }
    }
    out
}

impl ParsedTx {
    /// Decodes a `getTransaction` result in `jsonParsed` encoding,
    /// watching no program.
    pub fn from_json(v: &Value) -> Result<ParsedTx, TxShapeError> {
        ParsedTx::from_json_watching(v, &[] as &[&str])
    }

    /// Decodes a `getTransaction` result in `jsonParsed` encoding, keeping
    /// the top-level calls and inner instructions of the `watched` programs.
    pub fn from_json_watching(
        v: &Value,
        watched: &[impl AsRef<str>],
    ) -> Result<ParsedTx, TxShapeError> {
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
        let mut token_transfers = Vec::new();
        let mut calls = Vec::new();
        let mut anomalies = Vec::new();
        for (i, ix) in ixs.iter().enumerate() {
            match read_instruction(ix, watched) {
                Ok(Read::Memo(text)) => memos.push(text),
                Ok(Read::Transfer(t)) => transfers.push(t),
                Ok(Read::TokenTransfer(t)) => token_transfers.push(t),
                Ok(Read::Call(c)) => calls.push(c),
                Ok(Read::Other) => {}
                Err(TxShapeError(why)) => anomalies.push(format!("instruction {i}: {why}")),
            }
        }
        let token_balances = token_balances(meta, keys, &mut anomalies);
        let inner_calls = inner_calls(meta, watched, &mut anomalies);
        Ok(ParsedTx {
            signature,
            slot,
            block_time,
            succeeded,
            signers,
            memos,
            transfers,
            token_transfers,
            token_balances,
            calls,
            inner_calls,
            legacy_deposits: Vec::new(),
            anomalies,
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

    /// What arrived in `owner`'s token accounts of `mint` in this
    /// transaction through top-level `transferChecked`s authorized by
    /// `authority` from accounts `owner` does not hold: per account at
    /// most its rise (post minus pre) and what those transfers moved into
    /// it, and in all at most `owner`'s net gain in the mint (so a fee a
    /// mint withholds, a transfer from anyone else, or tokens moved
    /// between `owner`'s own accounts by a delegate count nothing).
    pub fn token_received(&self, authority: &str, owner: &str, mint: &str) -> u64 {
        let owned = |b: &&TokenBalance| b.owner == owner && b.mint == mint;
        let holds = |account: &str| {
            self.token_balances
                .iter()
                .filter(owned)
                .any(|b| b.account == account)
        };
        let credited = self
            .token_balances
            .iter()
            .filter(owned)
            .filter(|b| b.post > b.pre)
            .map(|b| {
                let sent = self
                    .token_transfers
                    .iter()
                    .filter(|t| {
                        t.authority == authority
                            && t.destination == b.account
                            && t.mint == mint
                            && !holds(&t.source)
                    })
                    .fold(0u64, |acc, t| acc.saturating_add(t.amount));
                (b.post - b.pre).min(sent)
            })
            .fold(0u64, |acc, n| acc.saturating_add(n));
        let net: i128 = self
            .token_balances
            .iter()
            .filter(owned)
            .map(|b| i128::from(b.post) - i128::from(b.pre))
            .sum();
        credited.min(u64::try_from(net.max(0)).unwrap_or(u64::MAX))
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

    /// `sample` with a token `transferChecked` (its `info` as given) and
    /// the seller's token balance going from `pre` to `post`.
    fn with_token_transfer(info: Value, pre: &str, post: &str) -> Value {
        let mut v = sample(Value::Null);
        v["transaction"]["message"]["accountKeys"]
            .as_array_mut()
            .unwrap()
            .push(json!({"pubkey": "SellerUsdc", "signer": false, "writable": true}));
        v["transaction"]["message"]["instructions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"parsed": {"info": info, "type": "transferChecked"},
                         "program": "spl-token", "programId": TOKEN_PROGRAM}));
        let balance = |amount: &str| {
            json!([{"accountIndex": 2, "mint": "Usdc", "owner": "Seller",
                    "programId": TOKEN_PROGRAM,
                    "uiTokenAmount": {"amount": amount, "decimals": 6}}])
        };
        v["meta"]["preTokenBalances"] = balance(pre);
        v["meta"]["postTokenBalances"] = balance(post);
        v
    }

    fn usdc_info(amount: Value, decimals: Value) -> Value {
        json!({"source": "PayerUsdc", "destination": "SellerUsdc", "mint": "Usdc",
               "authority": "Payer", "tokenAmount": {"amount": amount, "decimals": decimals}})
    }

    #[test]
    fn token_payments_count_what_arrived_through_a_checked_transfer() {
        let t = ParsedTx::from_json(&with_token_transfer(
            usdc_info(json!("2000000"), json!(6)),
            "5",
            "1500005",
        ))
        .unwrap();
        assert_eq!(t.token_transfers.len(), 1);
        assert!(t.anomalies.is_empty(), "{:?}", t.anomalies);
        // the balance rose by less than the transfer (a withheld fee)
        assert_eq!(t.token_received("Payer", "Seller", "Usdc"), 1_500_000);
        assert_eq!(t.token_received("Payer", "Seller", "Other"), 0);
        assert_eq!(t.token_received("Stranger", "Seller", "Usdc"), 0);
        // a balance that rose by more than the transfer: only the transfer
        let t = ParsedTx::from_json(&with_token_transfer(
            usdc_info(json!("2000000"), json!(6)),
            "0",
            "9000000",
        ))
        .unwrap();
        assert_eq!(t.token_received("Payer", "Seller", "Usdc"), 2_000_000);
    }

    /// A buyer the seller once made a delegate of one of its token
    /// accounts moves the price between the seller's own accounts: the
    /// seller gained nothing, so nothing was received.
    #[test]
    fn a_delegates_move_between_the_sellers_own_accounts_pays_nothing() {
        let mut v = with_token_transfer(
            json!({"source": "SellerOther", "destination": "SellerUsdc", "mint": "Usdc",
                   "authority": "Payer", "tokenAmount": {"amount": "2000000", "decimals": 6}}),
            "0",
            "2000000",
        );
        v["transaction"]["message"]["accountKeys"]
            .as_array_mut()
            .unwrap()
            .push(json!({"pubkey": "SellerOther", "signer": false, "writable": true}));
        let other = |amount: &str| {
            json!({"accountIndex": 3, "mint": "Usdc", "owner": "Seller",
                   "uiTokenAmount": {"amount": amount, "decimals": 6}})
        };
        v["meta"]["preTokenBalances"]
            .as_array_mut()
            .unwrap()
            .push(other("5000000"));
        v["meta"]["postTokenBalances"]
            .as_array_mut()
            .unwrap()
            .push(other("3000000"));
        let t = ParsedTx::from_json(&v).unwrap();
        assert!(t.anomalies.is_empty(), "{:?}", t.anomalies);
        assert_eq!(t.token_received("Payer", "Seller", "Usdc"), 0);
    }

    #[test]
    fn token_transfers_of_odd_shape_are_anomalies_never_payments() {
        for info in [
            usdc_info(json!(2000000), json!(6)),
            usdc_info(json!("-1"), json!(6)),
            usdc_info(json!("99999999999999999999999"), json!(6)),
            usdc_info(json!("2000000"), json!(300)),
            usdc_info(json!("2000000"), Value::Null),
            json!({"source": "PayerUsdc", "mint": "Usdc", "authority": "Payer",
                   "tokenAmount": {"amount": "1", "decimals": 6}}),
            json!("not an object"),
        ] {
            let t =
                ParsedTx::from_json(&with_token_transfer(info.clone(), "0", "2000000")).unwrap();
            assert!(t.token_transfers.is_empty(), "{info}");
            assert_eq!(t.anomalies.len(), 1, "{info}: {:?}", t.anomalies);
            assert_eq!(t.token_received("Payer", "Seller", "Usdc"), 0);
        }
        // a balance entry that does not read: an anomaly, no balance
        let mut v = with_token_transfer(usdc_info(json!("1"), json!(6)), "0", "1");
        v["meta"]["postTokenBalances"][0]["uiTokenAmount"]["amount"] = json!(1);
        let t = ParsedTx::from_json(&v).unwrap();
        assert_eq!(t.anomalies.len(), 1, "{:?}", t.anomalies);
        assert_eq!(t.token_received("Payer", "Seller", "Usdc"), 0);
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
    fn watched_calls_are_kept_raw_and_malformed_ones_are_anomalies() {
        use solana_sdk::pubkey::Pubkey;
        let program = Pubkey::new_unique().to_string();
        let accounts = vec![
            Pubkey::new_unique().to_string(),
            Pubkey::new_unique().to_string(),
        ];
        let call = json!({"programId": program, "accounts": accounts,
            "data": bs58::encode([1u8, 2, 3]).into_string(), "stackHeight": null});
        let mut raw = sample(Value::Null);
        raw["transaction"]["message"]["instructions"]
            .as_array_mut()
            .unwrap()
            .push(call);
        let inner = |data: &str| json!({"programId": program, "accounts": [accounts[0]], "data": data, "stackHeight": 2});
        let other = json!({"programId": "11111111111111111111111111111111",
            "accounts": [], "data": "", "stackHeight": 2});
        raw["meta"]["innerInstructions"] = json!([
            {"index": 0, "instructions": [other, inner("5")]},
            {"index": 2, "instructions": [inner("6")]}
        ]);
        let t = ParsedTx::from_json_watching(&raw, &[program.as_str()]).unwrap();
        let want = ProgramCall {
            program_id: program.clone(),
            accounts: accounts.clone(),
            data: vec![1, 2, 3],
        };
        assert_eq!(t.calls, vec![want]);
        let inner_data: Vec<Vec<u8>> = t.inner_calls.iter().map(|c| c.data.clone()).collect();
        assert_eq!(
            inner_data,
            vec![vec![4], vec![5]],
            "the watched program's, in order"
        );
        // the log form round-trips (data as base58)
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains(r#""data":"Ldp""#), "{text}");
        assert_eq!(serde_json::from_str::<ParsedTx>(&text).unwrap(), t);
        // unwatched: neither the call nor its inner instructions
        let t = ParsedTx::from_json(&raw).unwrap();
        assert!(t.calls.is_empty() && t.inner_calls.is_empty() && t.anomalies.is_empty());
        // malformed shapes are anomalies naming the field, never errors
        raw["transaction"]["message"]["instructions"][2]["data"] = json!("0OIl");
        let t = ParsedTx::from_json_watching(&raw, &[program.as_str()]).unwrap();
        assert!(t.calls.is_empty() && t.anomalies[0].contains("base58"));
        raw["transaction"]["message"]["instructions"][2]["accounts"] = json!(["nope"]);
        let t = ParsedTx::from_json_watching(&raw, &[program.as_str()]).unwrap();
        assert!(t.anomalies[0].contains("pubkey"), "{:?}", t.anomalies);
        // a log written by an older build: its deposits stay as they were
        let old = r#"{"signature":"s","slot":1,"block_time":null,"succeeded":true,"signers":[],"memos":[],"transfers":[],"deposits":[{"listing":"L","buyer":"B"}]}"#;
        let t: ParsedTx = serde_json::from_str(old).unwrap();
        assert_eq!(
            t.legacy_deposits,
            vec![LegacyDeposit {
                listing: "L".into(),
                buyer: "B".into()
            }]
        );
        assert_eq!(serde_json::to_string(&t).unwrap(), old);
    }

    fn with_ixs(extra: Vec<Value>) -> Value {
        let mut raw = sample(Value::Null);
        raw["transaction"]["message"]["instructions"]
            .as_array_mut()
            .unwrap()
            .extend(extra);
        raw
    }

    /// The transaction that stopped `listen` and the indexer: failed, a
    /// `buy` memo, and a memo the RPC left undecoded. It decodes, keeps the
    /// readable memo, notes the other, and settles nothing (failed).
    #[test]
    fn a_partially_decoded_memo_is_an_anomaly_not_an_error() {
        let undecoded = json!({"programId": "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
            "accounts": [], "data": "2M", "stackHeight": null});
        let raw = with_ixs(vec![undecoded]);
        let mut failed = raw.clone();
        failed["meta"]["err"] = json!({"InstructionError": [2, "InvalidInstructionData"]});
        for (v, ok) in [(raw, true), (failed, false)] {
            let t = ParsedTx::from_json(&v).unwrap();
            assert_eq!(t.succeeded, ok);
            assert_eq!(t.memos, vec!["brainctl-marketplace/v1:cancel:x"]);
            assert_eq!(t.anomalies.len(), 1);
            assert!(t.anomalies[0].starts_with("instruction 2: memo"));
        }
    }

    /// Shapes strangers choose: unknown programs, memo v1, instructions
    /// that are not objects, transfers missing fields, v0 messages whose
    /// keys come from lookup tables, inner instructions, many memos.
    #[test]
    fn every_instruction_shape_decodes() {
        let memo_v1 = json!({"parsed": "v1 memo", "program": "spl-memo",
            "programId": "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "stackHeight": null});
        let unknown = json!({"programId": "Stake11111111111111111111111111111111111111",
            "accounts": ["Payer"], "data": "3Bxs4h24hBtQy9rw", "stackHeight": null});
        let half_transfer = json!({"program": "system", "programId": "11111111111111111111111111111111",
            "parsed": {"type": "transfer", "info": {"source": "Payer", "lamports": 5}}});
        let huge = json!({"program": "system", "programId": "11111111111111111111111111111111",
            "parsed": {"type": "transfer", "info": {"source": "Payer", "destination": "Seller", "lamports": -1}}});
        let mut raw = with_ixs(vec![
            memo_v1,
            unknown,
            json!(7),
            json!(null),
            half_transfer,
            huge,
        ]);
        raw["transaction"]["message"]["accountKeys"]
            .as_array_mut()
            .unwrap()
            .push(json!({"pubkey": "FromTable", "signer": false, "writable": true, "source": "lookupTable"}));
        raw["transaction"]["message"]["addressTableLookups"] =
            json!([{"accountKey": "Tbl", "readonlyIndexes": [], "writableIndexes": [0]}]);
        raw["version"] = json!(0);
        raw["meta"]["innerInstructions"] = json!([{"index": 0, "instructions": [
            {"parsed": {"info": {"destination": "Seller", "lamports": 999, "source": "Payer"}, "type": "transfer"},
             "program": "system", "programId": "11111111111111111111111111111111", "stackHeight": 2}]}]);
        let t = ParsedTx::from_json(&raw).unwrap();
        assert_eq!(t.memos.len(), 2);
        assert_eq!(
            t.paid("Payer", "Seller"),
            10,
            "inner and broken transfers do not count"
        );
        assert_eq!(t.anomalies.len(), 4, "{:?}", t.anomalies);
        let many: Vec<Value> = (0..300)
            .map(|i| {
                json!({"parsed": "m".repeat(i), "program": "spl-memo",
                "programId": "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"})
            })
            .collect();
        assert_eq!(
            ParsedTx::from_json(&with_ixs(many)).unwrap().memos.len(),
            301
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-zA-Z0-9]{0,12}".prop_map(Value::from),
            Just(json!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")),
            Just(json!("11111111111111111111111111111111")),
            Just(json!("GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq")),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("programId".to_string()),
                        Just("parsed".to_string()),
                        Just("program".to_string()),
                        Just("info".to_string()),
                        Just("type".to_string()),
                        Just("accounts".to_string()),
                        Just("data".to_string()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    use proptest::prelude::*;
    proptest! {
        /// Any instruction list decodes (the envelope is sound), keeps the
        /// honest transfer, and never panics.
        #[test]
        fn arbitrary_instructions_never_fail_the_transaction(ixs in proptest::collection::vec(arb_json(), 0..8)) {
            let t = ParsedTx::from_json_watching(
                &with_ixs(ixs),
                &["GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq"],
            )
            .unwrap();
            prop_assert!(t.paid("Payer", "Seller") >= 10);
        }

        /// Any JSON at all: an error or a transaction, never a panic.
        #[test]
        fn arbitrary_json_never_panics(v in arb_json()) {
            let _ = ParsedTx::from_json(&v);
        }
    }
}
