//! `brainctl export --sign`: read-only export of a signed bundle.

use super::files::write_private_atomic;
use crate::args::ExportArgs;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::anyhow;
use node::bundle::Filter;
use node::export::{export_signed, ExportError, ExportOptions};
use serde_json::json;
use std::path::PathBuf;

pub fn run(a: ExportArgs, ctx: &Context) -> CliResult<u8> {
    if !a.sign {
        return Err(Failure::bad_input(anyhow!(
            "export requires --sign (bundles are always signed); e.g. brainctl export --sign -o out.signed.json"
        )));
    }
    if let Some(out) = a.output.as_ref().filter(|o| o.as_os_str() != "-") {
        if out.exists() && !a.force {
            return Err(Failure::bad_input(anyhow!(
                "{} exists; pass --force to replace it (or -o another file)",
                out.display()
            )));
        }
    }
    let wallet = ctx.wallet()?;
    let store = ctx.store_read_only()?;
    let opts = ExportOptions {
        filter: Filter {
            agent_id: a.filter_agent,
            category: a.category,
            scope: a.scope,
            created_after: a.created_after,
            created_before: a.created_before,
            ids: a.ids,
        },
        allow_sensitive: a.allow_sensitive,
        generated_at: None,
        signed_at: None,
    };
    let signing = ctx.spinner(format!(
        "reading and signing the memories of {}",
        ctx.db_path.display()
    ));
    let exported = export_signed(&store, &wallet, &opts);
    drop(signing);
    let export = match exported {
        Ok(e) => e,
        Err(ExportError::Sensitive(list)) if ctx.json => {
            let v = json!({"ok": false, "error": ExportError::Sensitive(list.clone()).to_string(), "sensitive": list});
            ctx.emit(&v, String::new);
            return Ok(1);
        }
        Err(e) => return Err(e.into()),
    };
    if export.signed.bundle.memories.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "no memory matches the filters: nothing exported (`brainctl memory list` shows what the store holds)"
        )));
    }
    let hash = export.signed.bundle_hash_hex.clone();
    let text = &export.file_text;
    let out = a
        .output
        .unwrap_or_else(|| PathBuf::from(format!("bundle-{}.signed.json", &hash[..12])));
    let to_stdout = out.as_os_str() == "-";
    if to_stdout {
        println!("{text}");
    } else {
        write_private_atomic(&out, text.as_bytes())?;
    }
    let mut pin = None;
    if a.pin_onchain {
        let chain = ctx.chain()?;
        let receipt = ctx
            .block_on(node::chain::pin::post_pin(
                &chain,
                &wallet.solana_keypair(),
                &hash,
            ))
            .map_err(|e| {
                anyhow::anyhow!(e)
                    .context("the bundle is signed and written, but the on-chain pin failed")
            })?;
        if !to_stdout {
            let receipt_path = PathBuf::from(format!("{}.pin.json", out.display()));
            let text = serde_json::to_string_pretty(&receipt).expect("serializes");
            write_private_atomic(&receipt_path, text.as_bytes())?;
        }
        pin = Some(receipt);
    }
    let mut minted = None;
    if a.mint {
        let chain = ctx.chain()?;
        let recipient = match &a.recipient {
            Some(r) => r.parse().map_err(|_| {
                Failure::bad_input(anyhow!("--recipient `{r}` is not a base58 pubkey"))
            })?,
            None => node::chain::Signer::pubkey(&wallet.solana_keypair()),
        };
        let keys = node::keys::KeyDir::new(match &a.keys_dir {
            Some(d) => d.clone(),
            None => ctx.brainctl_path("keys", "--keys-dir DIR")?,
        });
        let uploader = super::storage::uploader(ctx, &a.storage)?;
        let _minting = ctx.spinner(format!(
            "encrypting {} bytes, uploading them and minting to {recipient}",
            text.len()
        ));
        let receipt = ctx
            .block_on(node::mint::bundle_mint::mint_bundle(
                &chain,
                &wallet,
                &export.signed,
                &uploader,
                &keys,
                &recipient,
                a.token_standard.into(),
            ))
            .map_err(|e| {
                anyhow!(e).context("the bundle is signed and written, but minting failed")
            })?;
        if !to_stdout {
            let p = PathBuf::from(format!("{}.mint.json", out.display()));
            write_private_atomic(
                &p,
                serde_json::to_string_pretty(&receipt)
                    .expect("serializes")
                    .as_bytes(),
            )?;
        }
        minted = Some(receipt);
    }
    if !export.sensitive.is_empty() {
        eprintln!(
            "warning: signed despite sensitive content in {} memories (--allow-sensitive)",
            export.sensitive.len()
        );
    }
    if !to_stdout {
        let v = json!({
            "ok": true,
            "bundle_path": out,
            "bundle_hash": hash,
            "signer_pubkey": wallet.address(),
            "memories_count": export.signed.bundle.memories.len(),
            "signed_at": export.signed.signed_at,
            "sensitive": export.sensitive,
            "pinned_onchain": pin.is_some(),
            "pin": pin,
            "mint": minted,
        });
        ctx.emit(&v, || {
            format!(
                "signed {} memories\n  bundle hash  {hash}\n  signer       {}\n  written to   {}",
                export.signed.bundle.memories.len(),
                wallet.address(),
                out.display()
            ) + &pin.as_ref().map_or(String::new(), |p| {
                format!(
                    "\n  pinned       {} (slot {}), receipt {}.pin.json",
                    p.signature,
                    p.slot,
                    out.display()
                )
            }) + &minted.as_ref().map_or(String::new(), |m| {
                format!(
                    "\n  minted       {} to {} (tx {})\n  blob         ar://{} ({})\n  metadata     {}\n  key          {}",
                    m.mint, m.recipient, m.signature, m.blob_id, m.storage, m.metadata_uri, m.key_path
                )
            })
        });
    }
    Ok(0)
}
