//! Light Protocol compressed-token instructions, built by hand (the Light
//! Rust crates that hold builders are on Solana 2.3): create an SPL or
//! Token-2022 mint and register its token pool, then `mint_to` compressed
//! tokens to a recipient. Byte-for-byte what the JS SDK sends
//! (`tests/fixtures/light/golden-mint.json` is the judge).
//!
//! Owns instruction bytes and account order only; sending, revoking the
//! mint authority and reading the minted output back are the caller's.

use crate::crypto::sha256;
use solana_sdk::instruction::{AccountMeta, Instruction};
use solana_sdk::pubkey;
use solana_sdk::pubkey::Pubkey;

/// The compressed-token program.
pub const COMPRESSED_TOKEN: Pubkey = pubkey!("cTokenmWW8bLPjZEBAUgYy3zKxQZW6VKi7bqNFEVv3m");
/// The Light system program.
pub const LIGHT_SYSTEM: Pubkey = pubkey!("SySTEM1eSU2p4BGQfQpimFEWWSC1XDFeun3Nqzz3rT7");
/// The account-compression program.
pub const ACCOUNT_COMPRESSION: Pubkey = pubkey!("compr6CUsB5m2jS4Y3831ztGSTnDpnKJTKS95d64XVq");
/// The noop program events are logged through.
pub const NOOP: Pubkey = pubkey!("noopb9bkMVfRPU8AsbpTUg8AQkHtKwMYZiFUjNRtMmV");
/// The localnet state tree (from the zk-compression CLI's accounts).
pub const LOCALNET_STATE_TREE: Pubkey = pubkey!("oq1na8gojfdUhsfCpyjNt6h4JaDWtHf1yQj4koBWfto");
/// SPL Token.
pub const SPL_TOKEN: Pubkey = pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// Size of an SPL mint account.
pub const MINT_LEN: u64 = 82;
const SYSTEM: Pubkey = pubkey!("11111111111111111111111111111111");

fn anchor_ix(name: &str) -> [u8; 8] {
    sha256(format!("global:{name}").as_bytes())[..8]
        .try_into()
        .expect("8 bytes")
}

/// The token program of a mint (SPL Token or Token-2022).
pub fn token_program(token2022: bool) -> Pubkey {
    if token2022 {
        super::token2022::TOKEN_2022
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
        Instruction {
            program_id: COMPRESSED_TOKEN,
            accounts: vec![
                AccountMeta::new(*payer, true),
                AccountMeta::new(token_pool(mint), false),
                AccountMeta::new_readonly(SYSTEM, false),
                AccountMeta::new(*mint, true),
                AccountMeta::new_readonly(token, false),
                AccountMeta::new_readonly(cpi_authority(), false),
            ],
            data: anchor_ix("create_token_pool").to_vec(),
        },
    ]
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
    let mut data = anchor_ix("mint_to").to_vec();
    data.extend_from_slice(&1u32.to_le_bytes());
    data.extend_from_slice(recipient.as_ref());
    data.extend_from_slice(&1u32.to_le_bytes());
    data.extend_from_slice(&amount.to_le_bytes());
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

/// A compressed mint done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressedMint {
    /// The SPL mint.
    pub mint: Pubkey,
    /// The transaction.
    pub sent: crate::chain::Sent,
}

/// One transaction: create the mint (authority `payer`) and its pool,
/// mint `amount` compressed tokens to `recipient`, revoke the mint
/// authority, then `extra` (e.g. a fee or a release memo).
pub async fn mint_compressed(
    chain: &crate::chain::Chain,
    payer: &crate::wallet::Wallet,
    seed: &str,
    recipient: &Pubkey,
    amount: u64,
    extra: Vec<Instruction>,
) -> Result<CompressedMint, crate::chain::ChainError> {
    use solana_sdk::signer::Signer;
    let kp = payer.solana_keypair();
    let mint_kp = mint_keypair(payer, seed);
    let (p, m) = (kp.pubkey(), mint_kp.pubkey());
    let rent = crate::chain::client::with_retry("getMinimumBalanceForRentExemption", || {
        chain
            .rpc()
            .get_minimum_balance_for_rent_exemption(MINT_LEN as usize)
    })
    .await?;
    let mut ixs = create_mint(&p, &m, &p, rent, false);
    ixs.push(mint_to(
        &p,
        &p,
        &m,
        recipient,
        amount,
        &LOCALNET_STATE_TREE,
        false,
    ));
    ixs.push(revoke_mint_authority(&m, &p, false));
    ixs.extend(extra);
    let sent = chain.send(&ixs, &[&kp, &mint_kp]).await?;
    Ok(CompressedMint { mint: m, sent })
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
