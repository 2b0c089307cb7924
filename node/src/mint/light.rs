//! Light Protocol compressed-token instructions, built by hand (the Light
//! Rust crates that hold builders are on Solana 2.3): create an SPL or
//! Token-2022 mint and register its token pool, then `mint_to` compressed
//! tokens to a recipient. Byte-for-byte what the JS SDK sends
//! (`tests/fixtures/light/golden-mint.json` is the judge).
//!
//! `mint_compressed` is the backend: its mint is a Token-2022 mint with
//! MetadataPointer + TokenMetadata (the `ar://` URI), which the
//! compressed-token program accepts as a pool mint, so the compressed
//! token is tied to its metadata on chain like the NFT backend's.

use super::account_setup::{self, address_state, Derivation};
use super::token2022::{metadata_mint_instructions, mint_sizes, NftSpec, TOKEN_2022};
use crate::chain::anchor::{discriminator, ReadError, Reader};
use crate::crypto::sha256;
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey;
use solana_sdk::pubkey::Pubkey;
use solana_sdk::signer::Signer;

pub use super::light_programs::*;

/// How many of [`LOCALNET_OUTPUT_TREES`] (the first) are batched output
/// queues, whose room is counted ([`super::output_room`]).
const LOCALNET_BATCHED_QUEUES: usize = 5;

/// The first of [`LOCALNET_OUTPUT_TREES`] not yet found full by this
/// process: a full queue stays full (nothing empties it), so later mints
/// start past it instead of being refused by it again.
static FIRST_OPEN_TREE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether a send failed because the output queue is full (14301), as a
/// status reports it or as a transaction's `meta.err` JSON does.
fn queue_full(e: &crate::chain::ChainError) -> bool {
    let text = e.to_string();
    text.contains("custom program error: 0x37dd") || text.contains("\"Custom\":14301")
}

/// `ixs` with the default output queue replaced by `queue`.
fn with_output_queue(ixs: &[Instruction], queue: &Pubkey) -> Vec<Instruction> {
    ixs.iter()
        .cloned()
        .map(|mut ix| {
            for a in &mut ix.accounts {
                if a.pubkey == LOCALNET_STATE_TREE {
                    a.pubkey = *queue;
                }
            }
            ix
        })
        .collect()
}
/// SPL Token.
pub const SPL_TOKEN: Pubkey = pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// Size of an SPL mint account.
pub const MINT_LEN: u64 = 82;
const SYSTEM: Pubkey = pubkey!("11111111111111111111111111111111");

/// The token program of a mint (SPL Token or Token-2022).
pub fn token_program(token2022: bool) -> Pubkey {
    if token2022 {
        TOKEN_2022
    } else {
        SPL_TOKEN
    }
}

/// The compressed-token program's CPI authority PDA.
pub fn cpi_authority() -> Pubkey {
    Pubkey::find_program_address(&[b"cpi_authority"], &COMPRESSED_TOKEN).0
}

/// The token pool PDA of `mint` (pool 0).
pub fn token_pool(mint: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(&[b"pool", mint.as_ref()], &COMPRESSED_TOKEN).0
}

/// The Light system program's registration with account compression.
pub fn registered_program_pda() -> Pubkey {
    Pubkey::find_program_address(&[LIGHT_SYSTEM.as_ref()], &ACCOUNT_COMPRESSION).0
}

/// The Light system program's authority over account compression.
pub fn account_compression_authority() -> Pubkey {
    Pubkey::find_program_address(&[b"cpi_authority"], &LIGHT_SYSTEM).0
}

/// Create `mint` (0 decimals, `authority` mints, no freeze authority)
/// funded with `rent_lamports`, and register its token pool: the three
/// instructions of the SDK's `createMint`.
pub fn create_mint(
    payer: &Pubkey,
    mint: &Pubkey,
    authority: &Pubkey,
    rent_lamports: u64,
    token2022: bool,
) -> Vec<Instruction> {
    let token = token_program(token2022);
    let mut create = vec![0, 0, 0, 0];
    create.extend_from_slice(&rent_lamports.to_le_bytes());
    create.extend_from_slice(&MINT_LEN.to_le_bytes());
    create.extend_from_slice(token.as_ref());
    // InitializeMint2 { decimals: 0, mint_authority, freeze_authority: None }
    let mut init = vec![20, 0];
    init.extend_from_slice(authority.as_ref());
    init.push(0);
    vec![
        Instruction {
            program_id: SYSTEM,
            accounts: vec![
                AccountMeta::new(*payer, true),
                AccountMeta::new(*mint, true),
            ],
            data: create,
        },
        Instruction {
            program_id: token,
            accounts: vec![AccountMeta::new(*mint, true)],
            data: init,
        },
        create_token_pool(payer, mint, token2022),
    ]
}

/// `create_token_pool`: the pool account (owned by the token program,
/// held by the CPI authority) that backs compressed tokens of `mint`.
pub fn create_token_pool(payer: &Pubkey, mint: &Pubkey, token2022: bool) -> Instruction {
    Instruction {
        program_id: COMPRESSED_TOKEN,
        accounts: vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(token_pool(mint), false),
            AccountMeta::new_readonly(SYSTEM, false),
            AccountMeta::new(*mint, true),
            AccountMeta::new_readonly(token_program(token2022), false),
            AccountMeta::new_readonly(cpi_authority(), false),
        ],
        data: discriminator("global", "create_token_pool").to_vec(),
    }
}

/// `mint_to`: `amount` compressed tokens of `mint` to `recipient` in
/// `state_tree`, signed by the mint `authority`, `payer` paying.
pub fn mint_to(
    payer: &Pubkey,
    authority: &Pubkey,
    mint: &Pubkey,
    recipient: &Pubkey,
    amount: u64,
    state_tree: &Pubkey,
    token2022: bool,
) -> Instruction {
    let to = [(*recipient, amount)];
    mint_to_many(payer, authority, mint, &to, state_tree, token2022)
}

/// `mint_to` several recipients at once (one compressed output each), as
/// the compressed-token program takes them: the recipients, then the
/// amounts.
pub fn mint_to_many(
    payer: &Pubkey,
    authority: &Pubkey,
    mint: &Pubkey,
    to: &[(Pubkey, u64)],
    state_tree: &Pubkey,
    token2022: bool,
) -> Instruction {
    let mut data = discriminator("global", "mint_to").to_vec();
    data.extend_from_slice(&(to.len() as u32).to_le_bytes());
    for (recipient, _) in to {
        data.extend_from_slice(recipient.as_ref());
    }
    data.extend_from_slice(&(to.len() as u32).to_le_bytes());
    for (_, amount) in to {
        data.extend_from_slice(&amount.to_le_bytes());
    }
    data.push(0); // lamports: None
    Instruction {
        program_id: COMPRESSED_TOKEN,
        accounts: vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(*authority, true),
            AccountMeta::new_readonly(cpi_authority(), false),
            AccountMeta::new(*mint, false),
            AccountMeta::new(token_pool(mint), false),
            AccountMeta::new_readonly(token_program(token2022), false),
            AccountMeta::new_readonly(LIGHT_SYSTEM, false),
            AccountMeta::new_readonly(registered_program_pda(), false),
            AccountMeta::new_readonly(NOOP, false),
            AccountMeta::new_readonly(account_compression_authority(), false),
            AccountMeta::new_readonly(ACCOUNT_COMPRESSION, false),
            AccountMeta::new(*state_tree, false),
            AccountMeta::new(COMPRESSED_TOKEN, false),
            AccountMeta::new_readonly(SYSTEM, false),
            // sol_pool_pda: none (the program id stands for None)
            AccountMeta::new(COMPRESSED_TOKEN, false),
        ],
        data,
    }
}

/// SPL Token `SetAuthority(MintTokens → None)`: no more can ever be minted.
pub fn revoke_mint_authority(mint: &Pubkey, authority: &Pubkey, token2022: bool) -> Instruction {
    Instruction {
        program_id: token_program(token2022),
        accounts: vec![
            AccountMeta::new(*mint, false),
            AccountMeta::new_readonly(*authority, true),
        ],
        data: vec![6, 0, 0],
    }
}

/// The mint key for `seed`: derived from the payer's secret, so a re-run
/// with the same seed names the same mint, whose creation then fails on
/// chain instead of minting twice.
pub fn mint_keypair(payer: &crate::wallet::Wallet, seed: &str) -> solana_sdk::signature::Keypair {
    let secret = payer.solana_keypair().to_bytes();
    let mut input = b"brainctl/light-mint/v1:".to_vec();
    input.extend_from_slice(&secret[..32]);
    input.extend_from_slice(seed.as_bytes());
    crate::wallet::Wallet::from_seed(&sha256(&input)).solana_keypair()
}

/// The instructions of a compressed mint with its metadata: `setup` (what
/// makes the mint's address a Token-2022 account of the size before
/// metadata, rent for the size with it: [`account_setup::instructions`]),
/// MetadataPointer + InitializeMint2 + TokenMetadata, the token pool,
/// `mint_to` `recipient`, and the mint authority revoked.
pub fn compressed_mint_instructions(
    payer: &Pubkey,
    mint: &Pubkey,
    recipient: &Pubkey,
    amount: u64,
    spec: &NftSpec,
    setup: Vec<Instruction>,
) -> Result<Vec<Instruction>, crate::chain::ChainError> {
    let mut ixs = setup;
    ixs.extend(metadata_mint_instructions(payer, mint, spec)?);
    ixs.push(create_token_pool(payer, mint, true));
    ixs.push(mint_to(
        payer,
        payer,
        mint,
        recipient,
        amount,
        &LOCALNET_STATE_TREE,
        true,
    ));
    ixs.push(revoke_mint_authority(mint, payer, true));
    Ok(ixs)
}

/// One transaction creating a Token-2022 mint with its metadata (`spec`)
/// and its compressed-token pool, its mint authority kept by `payer`, so
/// receipts are minted into it later (`mint_to`), one per release. The
/// mint's key derives from `seed` as [`mint_keypair`]'s: a second creation
/// is refused (the account exists). Lamports a stranger parked at the
/// address are taken in, as for any mint of ours.
pub async fn create_open_mint(
    chain: &crate::chain::Chain,
    payer: &crate::wallet::Wallet,
    seed: &str,
    spec: &NftSpec,
) -> Result<crate::chain::Sent, crate::chain::ChainError> {
    let (kp, mint_kp, mut ixs) = mint_account_setup(chain, payer, seed, spec).await?;
    let (p, m) = (kp.pubkey(), mint_kp.pubkey());
    ixs.extend(metadata_mint_instructions(&p, &m, spec)?);
    ixs.push(create_token_pool(&p, &m, true));
    chain.send(&ixs, &[&kp, &mint_kp]).await
}

/// The payer's and the mint's keys for `seed`, and the instructions that
/// make the mint's address an account of the size `spec` needs (around
/// lamports a stranger parked there; refused if someone else holds it).
async fn mint_account_setup(
    chain: &crate::chain::Chain,
    payer: &crate::wallet::Wallet,
    seed: &str,
    spec: &NftSpec,
) -> Result<
    (
        solana_sdk::signature::Keypair,
        solana_sdk::signature::Keypair,
        Vec<Instruction>,
    ),
    crate::chain::ChainError,
> {
    let kp = payer.solana_keypair();
    let mint_kp = mint_keypair(payer, seed);
    let (p, m) = (kp.pubkey(), mint_kp.pubkey());
    let (base, total) = mint_sizes(&p, &m, spec)?;
    let rent = chain.rent_exemption(total).await?;
    let state = address_state(chain, &m, base as u64).await?;
    account_setup::refuse_taken(&m, state)?;
    if state.is_parked() {
        tracing::warn!(mint = %m, ?state, "lamports were parked at the mint address; creating it around them");
    }
    let setup = account_setup::instructions(&p, &m, Derivation::Keypair, rent, base as u64, state);
    Ok((kp, mint_kp, setup))
}

/// A compressed mint done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressedMint {
    /// The SPL mint.
    pub mint: Pubkey,
    /// The transaction.
    pub sent: crate::chain::Sent,
}

/// One transaction: create a Token-2022 mint carrying its own metadata
/// (MetadataPointer → the mint, TokenMetadata `spec`, authority `payer`)
/// and its compressed-token pool, mint `amount` compressed tokens to
/// `recipient`, revoke the mint authority, then `extra` (e.g. a fee or a
/// release memo). The token is tied to `spec.uri` by its mint. Reads the
/// transaction back to check its compressed outputs.
pub async fn mint_compressed(
    chain: &crate::chain::Chain,
    payer: &crate::wallet::Wallet,
    seed: &str,
    recipient: &Pubkey,
    amount: u64,
    spec: &NftSpec,
    extra: Vec<Instruction>,
) -> Result<CompressedMint, crate::chain::ChainError> {
    let minted = send_compressed_mint(chain, payer, seed, recipient, amount, spec, extra).await?;
    let outputs = minted_outputs(chain, &minted.sent.signature).await?;
    let want = TokenOutput {
        mint: minted.mint,
        owner: *recipient,
        amount,
        delegate: None,
    };
    if outputs != [want] {
        return Err(crate::chain::ChainError::Config(format!(
            "mint {} landed in {} but its compressed outputs are {outputs:?}, not {amount} to {recipient}",
            minted.mint, minted.sent.signature
        )));
    }
    Ok(minted)
}

/// [`mint_compressed`] without reading the transaction back: for callers
/// whose evidence is elsewhere (a release is proven by its memo in the
/// mint's history), which spares the RPC node a `getTransaction` of a
/// large transaction per mint.
pub async fn send_compressed_mint(
    chain: &crate::chain::Chain,
    payer: &crate::wallet::Wallet,
    seed: &str,
    recipient: &Pubkey,
    amount: u64,
    spec: &NftSpec,
    extra: Vec<Instruction>,
) -> Result<CompressedMint, crate::chain::ChainError> {
    let (kp, mint_kp, setup) = mint_account_setup(chain, payer, seed, spec).await?;
    let (p, m) = (kp.pubkey(), mint_kp.pubkey());
    let mut ixs = compressed_mint_instructions(&p, &m, recipient, amount, spec, setup)?;
    ixs.extend(extra);
    // one output: the recipient's compressed token account
    let sent = send_to_open_tree(chain, &ixs, &[&kp, &mint_kp], 1).await?;
    Ok(CompressedMint { mint: m, sent })
}

/// Sends `ixs` (making `outputs` compressed outputs) with their outputs
/// to the first tree of [`LOCALNET_OUTPUT_TREES`] that takes them: a queue
/// this process has no room left in ([`super::output_room`]) is passed
/// over without a send, and one the chain refuses as full is moved past
/// (and remembered).
pub async fn send_to_open_tree(
    chain: &crate::chain::Chain,
    ixs: &[Instruction],
    signers: &[&solana_sdk::signer::keypair::Keypair],
    outputs: u64,
) -> Result<crate::chain::Sent, crate::chain::ChainError> {
    send_to_open_tree_recorded(chain, ixs, signers, outputs, None).await
}

/// [`send_to_open_tree`], each signed transaction handed to `record`
/// before it is sent (see [`crate::chain::client::RecordSend`]).
pub async fn send_to_open_tree_recorded(
    chain: &crate::chain::Chain,
    ixs: &[Instruction],
    signers: &[&solana_sdk::signer::keypair::Keypair],
    outputs: u64,
    record: Option<crate::chain::client::RecordSend<'_>>,
) -> Result<crate::chain::Sent, crate::chain::ChainError> {
    use std::sync::atomic::Ordering;
    let last = LOCALNET_OUTPUT_TREES.len() - 1;
    let mut at = FIRST_OPEN_TREE.load(Ordering::Relaxed).min(last);
    loop {
        let tree = &LOCALNET_OUTPUT_TREES[at];
        if at < LOCALNET_BATCHED_QUEUES && !super::output_room::take(chain, tree, outputs).await {
            at += 1;
            FIRST_OPEN_TREE.fetch_max(at, Ordering::Relaxed);
            continue;
        }
        let ixs = with_output_queue(ixs, tree);
        let sent = match record {
            Some(record) => chain.send_unsimulated_recorded(&ixs, signers, record).await,
            None => chain.send_unsimulated(&ixs, signers).await,
        };
        match sent {
            Err(e) if queue_full(&e) && at < last => {
                tracing::warn!(%tree, "compressed output queue full; using the next tree");
                super::output_room::spent(chain, tree).await;
                at += 1;
                FIRST_OPEN_TREE.fetch_max(at, Ordering::Relaxed);
            }
            // a transaction that landed failed, or never landed, appended
            // nothing (one still in flight may yet: its room stays taken)
            Err(
                e @ (crate::chain::ChainError::TxFailed { .. } | crate::chain::ChainError::Expired),
            ) => {
                if at < LOCALNET_BATCHED_QUEUES {
                    super::output_room::give_back(chain, tree, outputs).await;
                }
                return Err(e);
            }
            sent => return sent,
        }
    }
}

/// A compressed token account a transaction created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenOutput {
    /// Mint.
    pub mint: Pubkey,
    /// Owner.
    pub owner: Pubkey,
    /// Amount.
    pub amount: u64,
    /// Delegate, if any.
    pub delegate: Option<Pubkey>,
}

/// Why an `invoke_cpi` payload did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Light invoke_cpi data: {0}")]
pub struct OutputDecodeError(pub &'static str);

impl From<ReadError> for OutputDecodeError {
    fn from(e: ReadError) -> Self {
        OutputDecodeError(match e {
            ReadError::Truncated => "truncated",
            ReadError::BadOptionTag => "bad option tag",
            ReadError::TooLong => "length over its cap",
            ReadError::NotUtf8 => "string is not UTF-8",
        })
    }
}

/// Discriminator of compressed token data.
const TOKEN_DATA_DISCRIMINATOR: [u8; 8] = [2, 0, 0, 0, 0, 0, 0, 0];

/// The compressed token accounts in the data of the compressed-token
/// program's `invoke_cpi` to the Light system program (Borsh
/// `InstructionDataInvokeCpi`: proof, new addresses, inputs, outputs, ...).
/// Outputs owned by other programs are skipped; transfers with inputs
/// are not decoded (a mint has none).
pub fn token_outputs(data: &[u8]) -> Result<Vec<TokenOutput>, OutputDecodeError> {
    let mut c = Reader(data);
    if c.take(8)? != discriminator("global", "invoke_cpi") {
        return Err(OutputDecodeError("not invoke_cpi"));
    }
    let len = c.u32()? as usize;
    let mut c = Reader(c.take(len)?);
    if c.option()? {
        c.take(128)?; // proof a, b, c
    }
    let new_addresses = c.u32()? as usize;
    c.take(
        new_addresses
            .checked_mul(36)
            .ok_or(OutputDecodeError("overflow"))?,
    )?;
    if c.u32()? != 0 {
        return Err(OutputDecodeError("inputs present (not a mint)"));
    }
    let outputs = c.u32()?;
    let mut out = Vec::new();
    for _ in 0..outputs {
        let owner = c.key()?;
        let _lamports = c.u64()?;
        if c.option()? {
            c.take(32)?; // address
        }
        let data = if c.option()? {
            let disc: [u8; 8] = c.take(8)?.try_into().expect("8");
            let n = c.u32()? as usize;
            let body = c.take(n)?;
            c.take(32)?; // data hash
            Some((disc, body))
        } else {
            None
        };
        c.u8()?; // merkle tree index
        if let (true, Some((TOKEN_DATA_DISCRIMINATOR, body))) = (owner == COMPRESSED_TOKEN, data) {
            let mut t = Reader(body);
            let (mint, holder, amount) = (t.key()?, t.key()?, t.u64()?);
            let delegate = if t.option()? { Some(t.key()?) } else { None };
            out.push(TokenOutput {
                mint,
                owner: holder,
                amount,
                delegate,
            });
        }
    }
    Ok(out)
}

/// Reads back the compressed accounts transaction `signature` created,
/// from its instruction to the Light system program (no indexer needed).
pub async fn minted_outputs(
    chain: &crate::chain::Chain,
    signature: &solana_sdk::signature::Signature,
) -> Result<Vec<TokenOutput>, crate::chain::ChainError> {
    use serde_json::{json, Value};
    let raw: Value = crate::chain::retry::with_retry("getTransaction", || {
        chain.rpc().send(
            solana_rpc_client_api::request::RpcRequest::GetTransaction,
            json!([signature.to_string(), {
                "encoding": "json", "commitment": "confirmed",
                "maxSupportedTransactionVersion": 0
            }]),
        )
    })
    .await?;
    let bad = |m: &str| crate::chain::ChainError::Config(format!("transaction {signature}: {m}"));
    // the message's keys, then (a v0 message) those its lookup tables
    // loaded, writable before read-only: what instruction indexes count
    let mut keys = raw
        .pointer("/transaction/message/accountKeys")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no account keys"))?
        .clone();
    for kind in ["writable", "readonly"] {
        if let Some(loaded) = raw
            .pointer(&format!("/meta/loadedAddresses/{kind}"))
            .and_then(Value::as_array)
        {
            keys.extend(loaded.iter().cloned());
        }
    }
    let mut out = Vec::new();
    for group in raw
        .pointer("/meta/innerInstructions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for ix in group["instructions"].as_array().into_iter().flatten() {
            let pid = ix["programIdIndex"]
                .as_u64()
                .and_then(|i| keys.get(i as usize))
                .and_then(Value::as_str);
            if pid != Some(LIGHT_SYSTEM.to_string().as_str()) {
                continue;
            }
            let data = bs58::decode(ix["data"].as_str().unwrap_or_default())
                .into_vec()
                .map_err(|_| bad("inner instruction data is not base58"))?;
            if data.starts_with(&discriminator("global", "invoke_cpi")) {
                out.extend(token_outputs(&data).map_err(|e| bad(&e.to_string()))?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::Value;
    use std::str::FromStr;

    fn golden() -> Value {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/light/golden-mint.json"
        );
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    fn key(v: &Value) -> Pubkey {
        Pubkey::from_str(v.as_str().unwrap()).unwrap()
    }

    fn same(ours: &Instruction, want: &Value) {
        assert_eq!(ours.program_id, key(&want["program"]));
        let metas: Vec<(Pubkey, bool, bool)> = want["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    key(&a["pubkey"]),
                    a["signer"] == true,
                    a["writable"] == true,
                )
            })
            .collect();
        let ours_metas: Vec<(Pubkey, bool, bool)> = ours
            .accounts
            .iter()
            .map(|m| (m.pubkey, m.is_signer, m.is_writable))
            .collect();
        assert_eq!(ours_metas, metas, "accounts of {}", ours.program_id);
        let data = base64::engine::general_purpose::STANDARD
            .decode(want["data_b64"].as_str().unwrap())
            .unwrap();
        assert_eq!(ours.data, data, "data of {}", ours.program_id);
    }

    #[test]
    fn token_outputs_decode_a_real_mint_and_refuse_garbage() {
        // invoke_cpi data of a mint_to on the validator (1 unit)
        let hex = "31d4bf8127c22bc4b3000000000000000000000000010000000915a35723794e8fb65d075b6b72699c38dd02e5948b75b0e5a0418e80975b440000000000000000000102000000000000004b000000cd43b20afe32ac78146705bca397646870a1fb3de5ae2a3ddc0ea4648c3c3a2874596bacd8a4b04f326962faaf97e6262b05e9539e58a6ce30fbb7d7f3d68adc01000000000000000000001ab371274d733e09fcb648edd17ee14ee69462e8430bba3906b90f0693cfaab10000000000";
        let data = hex::decode(hex).unwrap();
        let out = token_outputs(&data).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].amount, 1);
        assert_eq!(out[0].delegate, None);
        assert_eq!(
            hex::encode(out[0].mint),
            "cd43b20afe32ac78146705bca397646870a1fb3de5ae2a3ddc0ea4648c3c3a28"
        );
        for cut in 0..data.len() {
            assert!(token_outputs(&data[..cut]).is_err(), "truncated at {cut}");
        }
        let mut wrong = data.clone();
        wrong[0] ^= 1;
        assert!(token_outputs(&wrong).is_err());
    }

    #[test]
    fn mint_to_many_lists_the_recipients_then_the_amounts() {
        let (payer, mint, tree) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let (a, b) = (Pubkey::new_unique(), Pubkey::new_unique());
        let one = mint_to(&payer, &payer, &mint, &a, 1, &tree, false);
        let many = mint_to_many(&payer, &payer, &mint, &[(a, 1), (b, 7)], &tree, false);
        assert_eq!(one.accounts, many.accounts);
        let mut want = discriminator("global", "mint_to").to_vec();
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(a.as_ref());
        want.extend_from_slice(b.as_ref());
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(&1u64.to_le_bytes());
        want.extend_from_slice(&7u64.to_le_bytes());
        want.push(0);
        assert_eq!(many.data, want);
    }

    #[test]
    fn builders_match_the_sdks_golden_mints() {
        let g = golden();
        let (payer, recipient) = (key(&g["payer"]), key(&g["recipient"]));
        for case in g["cases"].as_array().unwrap() {
            let mint = key(&case["mint"]);
            let t22 = case["token2022"] == true;
            let txs = case["transactions"].as_array().unwrap();
            let create = create_mint(&payer, &mint, &payer, 1_461_600, t22);
            let want: Vec<&Value> = txs[0]["instructions"].as_array().unwrap().iter().collect();
            assert_eq!(create.len(), want.len());
            for (ours, want) in create.iter().zip(want) {
                same(ours, want);
            }
            let mint_ix = mint_to(
                &payer,
                &payer,
                &mint,
                &recipient,
                1,
                &LOCALNET_STATE_TREE,
                t22,
            );
            let want = txs[1]["instructions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["program"] == COMPRESSED_TOKEN.to_string())
                .unwrap();
            same(&mint_ix, want);
        }
    }
}
