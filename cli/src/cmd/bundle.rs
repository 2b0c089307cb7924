//! `brainctl bundle decrypt|pin`: a bundle you minted, decrypted offline
//! with its key file; an existing signed bundle pinned on chain.

use super::files::{read_capped, write_private_atomic};
use crate::args::BundleCmd;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use serde_json::json;

pub fn run(cmd: BundleCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        BundleCmd::Decrypt {
            mint,
            ciphertext_uri,
            output,
            keys_dir,
            storage,
        } => {
            let Some(blob_id) = ciphertext_uri.strip_prefix("ar://") else {
                return Err(Failure::bad_input(anyhow!(
                    "--ciphertext-uri {ciphertext_uri} is not ar://<id>"
                )));
            };
            let keys = node::keys::KeyDir::new(match keys_dir {
                Some(d) => d,
                None => ctx.brainctl_path("keys", "--keys-dir DIR")?,
            });
            // ours are named by the ciphertext's id, the reference's by the mint
            let key = keys.load(blob_id).or_else(|_| keys.load(&mint)).map_err(|e| {
                Failure::bad_input(anyhow!(
                    "no key for {blob_id} or {mint} in the keys dir ({e}); only the wallet that minted a bundle holds its key"
                ))
            })?;
            let src = super::storage::source(ctx, &storage)?;
            let blob = ctx.block_on(src.fetch(blob_id, node::seal::MAX_BLOB_BYTES))?;
            let inner = node::seal::decrypt_blob(&key, &blob)
                .map_err(|e| anyhow!("decrypting {blob_id}: {e}"))?;
            let bundle: serde_json::Value = serde_json::from_slice(&inner)
                .map_err(|e| anyhow!("the decrypted bundle is not JSON: {e}"))?;
            let count = bundle["memories"].as_array().map_or(0, Vec::len);
            match &output {
                Some(path) => write_private_atomic(path, &inner)?,
                None if !ctx.json => {
                    println!("{}", String::from_utf8_lossy(&inner));
                    return Ok(0);
                }
                None => {}
            }
            let v = json!({"ok": true, "mint": mint, "ciphertext_uri": ciphertext_uri,
                "memories_count": count, "output_path": output});
            ctx.emit(&v, || {
                format!(
                    "decrypted {count} memories to {}",
                    output
                        .as_ref()
                        .map_or("-".into(), |p| p.display().to_string())
                )
            });
        }
        BundleCmd::Pin { file } => {
            let text = read_capped(&file)?;
            let report = node::bundle::verify_file_text(&text);
            if !report.ok {
                return Err(Failure::bad_input(anyhow!(
                    "{} does not verify: {}",
                    file.display(),
                    report.error.as_deref().unwrap_or("invalid")
                )));
            }
            let wallet = ctx.wallet()?;
            let signer = report.signer_pubkey.clone().unwrap_or_default();
            if signer != wallet.address() {
                return Err(Failure::bad_input(anyhow!(
                    "{} is signed by {signer}, not by this wallet ({}): only its signer's pin counts",
                    file.display(),
                    wallet.address()
                )));
            }
            let hash = report.bundle_hash.clone().unwrap_or_default();
            let chain = ctx.chain()?;
            let (receipt, fresh) =
                match ctx.block_on(node::chain::pin::find_pin(&chain, &signer, &hash))? {
                    Some(r) => (r, false),
                    None => (
                        ctx.block_on(node::chain::pin::post_pin(
                            &chain,
                            &wallet.solana_keypair(),
                            &hash,
                        ))?,
                        true,
                    ),
                };
            let receipt_path = std::path::PathBuf::from(format!("{}.pin.json", file.display()));
            let text = serde_json::to_string_pretty(&receipt).expect("serializes");
            write_private_atomic(&receipt_path, text.as_bytes())?;
            let v = json!({"ok": true, "bundle_hash": hash, "pinned_now": fresh, "pin": receipt, "receipt": receipt_path});
            ctx.emit(&v, || {
                format!(
                    "{} {hash} ({})\n  receipt {}",
                    if fresh { "pinned" } else { "already pinned" },
                    receipt.signature,
                    receipt_path.display()
                )
            });
        }
    }
    Ok(0)
}
