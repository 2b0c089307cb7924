//! `brainctl marketplace browse|show`: read-only views from a marketplace
//! indexer over HTTP. Never signs or sends anything; what an indexer says
//! is a convenience, and `buy` re-checks everything on chain.

use crate::args::IndexerOpts;
use crate::context::Context;
use crate::failure::{CliResult, Failure};
use anyhow::{anyhow, Context as _};
use serde_json::Value;
use std::time::Duration;

/// Largest indexer answer read.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// GETs `path` (with `query`) from the indexer as JSON.
fn get(
    ctx: &Context,
    opts: &IndexerOpts,
    path: &str,
    query: &[(&str, String)],
) -> CliResult<Value> {
    let base = opts.url.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(Failure::bad_input(anyhow!(
            "--indexer {base} is not an http(s) URL (e.g. http://127.0.0.1:8080)"
        )));
    }
    let url = format!("{base}{path}");
    ctx.block_on(async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .context("HTTP client")?;
        let res = http.get(&url).query(query).send().await.with_context(|| {
            format!("reach the indexer at {base} (is `brainctl-indexer run` up?)")
        })?;
        let status = res.status();
        let bytes = res.bytes().await.context("read the indexer's answer")?;
        if bytes.len() > MAX_ANSWER_BYTES {
            return Err(anyhow!("the indexer's answer is over {MAX_ANSWER_BYTES} bytes").into());
        }
        let body: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("the indexer's answer to {path} is not JSON"))?;
        if !status.is_success() {
            let detail = body["detail"].as_str().unwrap_or("no detail");
            return Err(anyhow!("indexer: {status} on {path}: {detail}").into());
        }
        Ok(body)
    })
}

/// The manifest item id the indexer at `opts` gives for `listing_id`
/// (only a hint: the caller checks the manifest it fetches carries the id).
pub fn manifest_id_of(ctx: &Context, opts: &IndexerOpts, listing_id: &str) -> CliResult<String> {
    let v = get(ctx, opts, &format!("/listings/{listing_id}"), &[])?;
    v["listing"]["listing_arweave_id"]
        .as_str()
        .filter(|id| node::market::is_arweave_id(id))
        .map(str::to_string)
        .ok_or_else(|| {
            anyhow!(
                "the indexer at {} named no manifest for {listing_id}",
                opts.url
            )
            .into()
        })
}

fn sol(lamports: &Value) -> String {
    lamports
        .as_u64()
        .map_or("-".into(), |l| format!("{:.4} SOL", l as f64 / 1e9))
}

fn listing_line(l: &Value) -> String {
    format!(
        "{}  {:>9}  {:>13}  {:<8} {:<9} {:>3} memories  seller {}",
        l["listing_id"].as_str().unwrap_or("?"),
        format!("${}", l["price_usd"]),
        sol(&l["price_lamports"]),
        l["visibility"].as_str().unwrap_or("?"),
        l["status"].as_str().unwrap_or("?"),
        l["manifest"]["preview"]["memories_count"],
        l["seller_pubkey"].as_str().unwrap_or("?"),
    )
}

/// `browse`.
#[allow(clippy::too_many_arguments)]
pub fn browse(
    ctx: &Context,
    opts: &IndexerOpts,
    max_price_usd: Option<f64>,
    category: Option<String>,
    seller: Option<String>,
    status: String,
    limit: u32,
    cursor: Option<String>,
) -> CliResult<()> {
    if !(1..=100).contains(&limit) {
        return Err(Failure::bad_input(anyhow!("--limit must be 1 to 100")));
    }
    let mut q = vec![("status", status), ("limit", limit.to_string())];
    q.extend(max_price_usd.map(|p| ("max_price_usd", p.to_string())));
    q.extend(category.map(|c| ("category", c)));
    q.extend(seller.map(|s| ("seller_pubkey", s)));
    q.extend(cursor.map(|c| ("cursor", c)));
    let page = get(ctx, opts, "/listings", &q)?;
    ctx.emit(&page, || {
        let rows: Vec<String> = page["listings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(listing_line)
            .collect();
        let mut out = if rows.is_empty() {
            "no listings match".to_string()
        } else {
            rows.join("\n")
        };
        if let Some(next) = page["next_cursor"].as_str() {
            out.push_str(&format!("\nmore: --cursor {next}"));
        }
        out
    });
    Ok(())
}

/// Takes the free-text `message` out of every offer's and counter's
/// manifest (another party's words reach an agent only when it asks for
/// them); each offer that had one says `messages_withheld: true`.
fn withhold_messages(v: &mut Value) {
    let take = |manifest: &mut Value| {
        manifest
            .as_object_mut()
            .and_then(|m| m.remove("message"))
            .is_some()
    };
    for o in v["offers"].as_array_mut().into_iter().flatten() {
        let mut withheld = take(&mut o["manifest"]);
        for c in o["counters"].as_array_mut().into_iter().flatten() {
            withheld |= take(&mut c["manifest"]);
        }
        if withheld {
            o["messages_withheld"] = Value::Bool(true);
        }
    }
}

/// What an escrow listing's blob proves on chain, from its signed
/// manifest's `escrow_terms.blob_format`: the bundle (`on_chain` from
/// format 2, its midstates committed) and the memory count (`on_chain`
/// from format 3, its tallies committed); else the bundle is checked by
/// the client only and the count not at all (`client_only`, `none`: an
/// older listing); `None` for a listing paid directly.
fn proofs(manifest: &serde_json::Value) -> Option<(&'static str, &'static str)> {
    let format = manifest.get("escrow_terms")?["blob_format"]
        .as_u64()
        .unwrap_or(1);
    Some(match format {
        3 => ("on_chain", "on_chain"),
        2 => ("on_chain", "none"),
        // v1, or a format this brainctl does not know: nothing claimed
        _ => ("client_only", "none"),
    })
}

/// `show`.
pub fn show(
    ctx: &Context,
    opts: &IndexerOpts,
    listing_id: &str,
    include_messages: bool,
) -> CliResult<()> {
    if !node::market::is_listing_id(listing_id) {
        return Err(Failure::bad_input(anyhow!(
            "{listing_id:?} is not a listing id (YYYYMMDD-<12 hex>)"
        )));
    }
    let mut v = get(ctx, opts, &format!("/listings/{listing_id}"), &[])?;
    if !include_messages {
        withhold_messages(&mut v);
    }
    if let Some((bundle, count)) = proofs(&v["listing"]["manifest"]) {
        v["listing"]["bundle_proof"] = serde_json::json!(bundle);
        v["listing"]["memory_count_proof"] = serde_json::json!(count);
    }
    ctx.emit(&v, || {
        let l = &v["listing"];
        let p = &l["manifest"]["preview"];
        let mut out = vec![
            listing_line(l),
            format!(
                "  bundle hash  {}",
                l["bundle_hash"].as_str().unwrap_or("?")
            ),
            format!(
                "  expires at   {}",
                l["manifest"]["expires_at"].as_str().unwrap_or("?")
            ),
            match l["manifest"]["escrow_program"].as_str() {
                Some(program) => format!(
                    "  settles      through escrow program {program} (buy deposits; paid out on release)"
                ),
                None => format!(
                    "  pay to       {}",
                    l["payment_address"].as_str().unwrap_or("?")
                ),
            },
            format!("  categories   {}", p["categories_summary"]),
            format!("  description  {}", p["description"].as_str().unwrap_or("")),
        ];
        match proofs(&l["manifest"]) {
            Some(("on_chain", "on_chain")) => out.push(
                "  bundle proof on chain: a plaintext other than the bundle hash above, or holding another memory count than the preview's, is fraud the program convicts (blob format 3)".into(),
            ),
            Some(("on_chain", _)) if p["memories_count"].is_u64() => out.push(
                "  bundle proof on chain: a plaintext other than the bundle hash above is fraud the program convicts; the preview's memory count is not proven (blob format 2): `buy` refuses it unless you name --allow-unproven-blob (never under a spend policy)".into(),
            ),
            Some(("on_chain", _)) => out.push(
                "  bundle proof on chain: a plaintext other than the bundle hash above is fraud the program convicts (blob format 2)".into(),
            ),
            Some(_) => out.push(
                "  bundle proof none: listed before midstate commitments (blob format 1); a lying chunk is provable, a plaintext other than the bundle hash is not, so its seller could be paid for garbage: `buy` refuses it unless you name --allow-unproven-blob (never under a spend policy)".into(),
            ),
            None => {}
        }
        out.extend([
            format!("  sales {} / releases {}", l["sales"], l["releases"]),
        ]);
        for o in v["offers"].as_array().into_iter().flatten() {
            out.push(format!(
                "  offer {}  {}  {}",
                o["offer_id"].as_str().unwrap_or("?"),
                o["status"].as_str().unwrap_or("?"),
                sol(&o["price_lamports"]),
            ));
        }
        out.join("\n")
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::proofs;
    use serde_json::json;

    #[test]
    fn the_proofs_follow_the_signed_blob_format() {
        let terms = |t| json!({"escrow_program": "x", "escrow_terms": t});
        let (on, client, none) = ("on_chain", "client_only", "none");
        assert_eq!(proofs(&terms(json!({"blob_format": 3}))), Some((on, on)));
        assert_eq!(proofs(&terms(json!({"blob_format": 2}))), Some((on, none)));
        // listed before midstate commitments: no blob_format, or 1; or a
        // format this brainctl does not know
        assert_eq!(proofs(&terms(json!({}))), Some((client, none)));
        for f in [1, 4] {
            assert_eq!(
                proofs(&terms(json!({"blob_format": f}))),
                Some((client, none))
            );
        }
        assert_eq!(proofs(&json!({"payment_address": "x"})), None);
    }
}
