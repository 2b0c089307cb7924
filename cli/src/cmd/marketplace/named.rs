//! A listing as the user names it: its listing id (`YYYYMMDD-<12 hex>`,
//! what `browse`, `show`, `status` and the memos print) or its manifest's
//! item id (what `list` prints and buyers fetch). Every marketplace
//! command takes either and resolves it here. A listing id is looked up on
//! the indexer, and the manifest fetched must carry that id and verify;
//! which seller's listing it is stays the indexer's word (any seller may
//! sign a manifest under any listing id, as any indexer's `browse` may
//! show another seller's manifest id), so the resolution and its seller
//! are printed for the user to see. A seller's own listing is found in its
//! state. Reads only: never signs or sends anything.

use super::{CliResult, Context, Failure};
use crate::args::{IndexerOpts, StorageOpts};
use anyhow::anyhow;
use node::listen::ListenDb;
use node::market::manifest::Listing;

/// Whether `named` is a listing id (else a manifest item id); bad input
/// naming both forms when it is neither.
fn is_listing_id(named: &str) -> CliResult<bool> {
    if node::market::is_listing_id(named) {
        return Ok(true);
    }
    if node::market::is_arweave_id(named) {
        return Ok(false);
    }
    Err(Failure::bad_input(anyhow!(
        "{named:?} names no listing: pass its listing id (YYYYMMDD-<12 hex>, from `marketplace browse`) or its manifest's item id (43 base64url characters, from `marketplace list`)"
    )))
}

/// The verified listing manifest `named` names: fetched from `src` by its
/// item id, or, for a listing id, by the item id the indexer gives (a
/// manifest of another listing is refused).
pub(super) fn listing(
    ctx: &Context,
    src: &node::arweave::Source,
    indexer: &IndexerOpts,
    named: &str,
) -> CliResult<Listing> {
    let by_listing_id = is_listing_id(named)?;
    let manifest_id = match by_listing_id {
        true => super::super::browse::manifest_id_of(ctx, indexer, named)?,
        false => named.to_string(),
    };
    let l = fetch(ctx, src, &manifest_id)?;
    if by_listing_id && l.listing_id != named {
        return Err(Failure::bad_input(anyhow!(
            "the indexer at {} named manifest {manifest_id} for {named}, but that manifest is listing {}: pass the manifest's item id (from the seller or `marketplace browse`)",
            indexer.url,
            l.listing_id
        )));
    }
    if by_listing_id && !ctx.json {
        eprintln!(
            "{named}: manifest {manifest_id} of seller {}, as the indexer at {} names it",
            l.seller_pubkey,
            crate::terminal::safe(&indexer.url)
        );
    }
    Ok(l)
}

/// The listing id `named` names: itself, or the one in the verified
/// manifest with that item id (fetched from `storage`).
pub(super) fn listing_id(ctx: &Context, storage: &StorageOpts, named: &str) -> CliResult<String> {
    if is_listing_id(named)? {
        return Ok(named.to_string());
    }
    let src = super::super::storage::source(ctx, storage)?;
    Ok(fetch(ctx, &src, named)?.listing_id)
}

/// The verified listing manifest with item id `manifest_id` (one that
/// does not verify is bad input).
fn fetch(ctx: &Context, src: &node::arweave::Source, manifest_id: &str) -> CliResult<Listing> {
    ctx.block_on(node::market::buy::fetch_listing(src, manifest_id))
        .map_err(Failure::bad_input)
}

/// The listing id of the seller's own listing `named` (a listing id, or
/// the item id of one of its manifests).
pub(super) fn own_listing_id(db: &ListenDb, named: &str) -> CliResult<String> {
    if is_listing_id(named)? {
        return Ok(named.to_string());
    }
    db.listings()?
        .into_iter()
        .find(|l| l.manifest_id == named)
        .map(|l| l.listing_id)
        .ok_or_else(|| {
            Failure::bad_input(anyhow!(
                "{named:?} is neither a listing id (YYYYMMDD-<12 hex>) nor the manifest of one of your listings (`brainctl marketplace status` lists yours)"
            ))
        })
}
