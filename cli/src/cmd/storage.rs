//! `brainctl storage put|get`: signed ANS-104 items in the fs store, a
//! bundler, or an Arweave gateway.

use super::files::{read_capped, write_private_atomic};
use crate::args::{StorageCmd, StorageKind, StorageOpts};
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::{anyhow, Context as _};
use node::arweave::http::Bundler;
use node::arweave::{DataItem, FsStore, Tag};
use serde_json::json;
use std::io::Write;

pub fn fs_store(ctx: &Context, o: &StorageOpts) -> CliResult<FsStore> {
    let dir = match &o.storage_dir {
        Some(d) => d.clone(),
        None => ctx.brainctl_path("items", "--storage-dir DIR")?,
    };
    Ok(FsStore::new(dir))
}

fn bundler(o: &StorageOpts) -> CliResult<Bundler> {
    let url = o.bundler_url.as_deref().ok_or_else(|| {
        Failure::bad_input(anyhow!(
            "--storage bundler needs --bundler-url URL (or BRAINCTL_BUNDLER_URL)"
        ))
    })?;
    Ok(Bundler::new(url))
}

fn gateway(ctx: &Context, o: &StorageOpts) -> CliResult<node::arweave::gateway::Gateway> {
    let path = match &o.arweave_wallet {
        Some(p) => p.clone(),
        None => ctx.brainctl_path("arweave-wallet.pkcs8", "--arweave-wallet PATH")?,
    };
    let key = node::arweave::gateway::Gateway::load_or_create_key(&path)
        .with_context(|| format!("Arweave wallet {}", path.display()))?;
    Ok(node::arweave::gateway::Gateway::new(&o.gateway_url, key))
}

/// Where items are read from under `--storage`.
pub fn source(ctx: &Context, o: &StorageOpts) -> CliResult<node::arweave::Source> {
    Ok(match o.storage {
        StorageKind::Bundler | StorageKind::Gateway => {
            node::arweave::Source::Gateway(o.gateway_url.clone())
        }
        StorageKind::Fs => node::arweave::Source::Fs(fs_store(ctx, o)?),
    })
}

/// The uploader `--storage` names.
pub fn uploader(ctx: &Context, o: &StorageOpts) -> CliResult<node::arweave::Uploader> {
    Ok(match o.storage {
        StorageKind::Bundler => node::arweave::Uploader::Bundler(bundler(o)?),
        StorageKind::Gateway => node::arweave::Uploader::Gateway(gateway(ctx, o)?),
        StorageKind::Fs => node::arweave::Uploader::Fs(fs_store(ctx, o)?),
    })
}

fn parse_tag(s: &str) -> CliResult<Tag> {
    let (n, v) = s
        .split_once('=')
        .ok_or_else(|| Failure::bad_input(anyhow!("--tag `{s}` must be NAME=VALUE")))?;
    Ok(Tag::new(n, v))
}

pub fn run(cmd: StorageCmd, ctx: &Context) -> CliResult<u8> {
    match cmd {
        StorageCmd::Put { file, tags, opts } => {
            let data = read_capped(&file)?;
            let tags = tags
                .iter()
                .map(|t| parse_tag(t))
                .collect::<CliResult<Vec<_>>>()?;
            let wallet = ctx.wallet()?;
            let item =
                DataItem::sign(&wallet, data, tags, None, None).map_err(Failure::bad_input)?;
            let up = uploader(ctx, &opts)?;
            let uploading = ctx.spinner(format!(
                "uploading {} bytes to {} storage",
                item.data.len(),
                clap::ValueEnum::to_possible_value(&opts.storage)
                    .map_or_else(String::new, |v| v.get_name().to_string())
            ));
            let id = ctx.block_on(up.put(&item))?;
            drop(uploading);
            let v = json!({"ok": true, "id": id, "bytes": item.data.len(), "owner": item.owner_address(), "storage": opts.storage});
            ctx.emit(&v, || id.clone());
        }
        StorageCmd::Get {
            id,
            output,
            max_bytes,
            opts,
        } => {
            let src = source(ctx, &opts)?;
            let fetching = ctx.spinner(format!("fetching {id}"));
            let data = ctx.block_on(src.fetch(&id, max_bytes))?;
            drop(fetching);
            match output {
                Some(p) => {
                    write_private_atomic(&p, &data)?;
                    ctx.emit(
                        &json!({"ok": true, "id": id, "bytes": data.len(), "path": p}),
                        || format!("wrote {} bytes to {}", data.len(), p.display()),
                    );
                }
                None => std::io::stdout()
                    .write_all(&data)
                    .context("writing stdout")?,
            }
        }
    }
    Ok(0)
}
