//! The explorer's HTML: a layout, the listings page, a listing's page and
//! a seller's page (maud templates, compiled into the binary; every value
//! is escaped by construction). Renders what it is given; decides nothing
//! about visibility (that is `views::may_see_trade`, applied by the caller).

use super::chart::latency_chart;
use super::timeline::{self, Row};
use crate::fold::{EscrowState, ListingState, State};
use crate::views::Latency;
use crate::views::{ListingFilter, Reputation};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

const CSS: &str = "
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#14213d;color:#fff;padding:.7em 1.2em;display:flex;gap:1.5em;align-items:baseline}
header a{color:#fff;text-decoration:none;font-weight:600}
header .meta{opacity:.75;font-size:.85em}
main{max-width:1100px;margin:0 auto;padding:1em 1.2em}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e4e4e7;vertical-align:top}
th{background:#f1f1f4;font-weight:600}
code,.mono{font-family:ui-monospace,monospace;font-size:.9em}
.status{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;background:#e4e4e7}
.status.live{background:#d1fae5}.status.cancelled{background:#fee2e2}.status.expired{background:#fef3c7}.status.contested{background:#fde68a}
form.filters{display:flex;gap:.6em;flex-wrap:wrap;margin:.6em 0 1em}
form.filters input,form.filters select{padding:.25em}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
dl.facts dt{color:#555}
section{margin:1.4em 0}
.chart .bar{fill:#3b82f6}
.empty,.note{color:#666}
nav.pages{margin:1em 0;display:flex;gap:1em}
";

/// Where a transaction or account is shown on a block explorer.
pub struct Links<'a> {
    /// The cluster served (`localnet`, `devnet`, `mainnet-beta`, ...).
    pub cluster: &'a str,
}

impl Links<'_> {
    fn suffix(&self) -> &'static str {
        match self.cluster {
            "mainnet-beta" => "",
            "devnet" => "?cluster=devnet",
            "testnet" => "?cluster=testnet",
            _ => "?cluster=custom&customUrl=http%3A%2F%2F127.0.0.1%3A8899",
        }
    }

    fn tx(&self, sig: &str) -> Markup {
        html! {
            a.mono.tx href=(format!("https://explorer.solana.com/tx/{sig}{}", self.suffix()))
                title=(sig) { (timeline::short(sig)) }
        }
    }
}

fn sol(lamports: Option<u64>) -> String {
    lamports.map_or("–".into(), |l| format!("{:.4} SOL", l as f64 / 1e9))
}

/// A listing's price in what it settles in (see [`in_currency`]).
fn price(l: &crate::fold::ListingState) -> String {
    match &l.currency {
        node::settle::Currency::Sol => sol(l.price_lamports),
        node::settle::Currency::Token { .. } => in_currency(l, l.price_units),
    }
}

/// `units` of what `l` settles in: SOL, or whole tokens of its mint (shown
/// by the mint's first characters; the decimals are the manifest's, at a
/// fixed price or at settle time).
fn in_currency(l: &crate::fold::ListingState, units: Option<u64>) -> String {
    let node::settle::Currency::Token { mint } = &l.currency else {
        return sol(units);
    };
    let Some(units) = units else {
        return "–".into();
    };
    let decimals = ["/settlement/decimals", "/usd_at_settle/token/decimals"]
        .iter()
        .find_map(|p| l.manifest.pointer(p).and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
        .min(18) as i32;
    let whole = units as f64 / 10f64.powi(decimals);
    format!("{whole} {}…", &mint[..mint.len().min(6)])
}

fn date(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_else(|| unix.to_string())
}

fn seller_link(pk: &str) -> Markup {
    html! { a.mono.seller href=(format!("/s/{pk}")) title=(pk) { (timeline::short(pk)) } }
}

fn categories(manifest: &Value) -> String {
    match manifest.pointer("/preview/categories_summary") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::Object(o)) => o.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => String::new(),
    }
}

/// The page frame.
pub fn layout(title: &str, state: &State, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · brainctl market" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    a href="/" { "brainctl market" }
                    span.meta {
                        (state.totals().listings) " listings · "
                        (state.totals().settlements) " buys · "
                        "folded through slot " (state.last.as_ref().map_or(0, |p| p.0))
                    }
                }
                main { (body) }
            }
        }
    }
}

/// One page of listings with the filters that chose it.
pub fn listings(
    state: &State,
    f: &ListingFilter,
    page: &[&ListingState],
    next_cursor: Option<&str>,
) -> Markup {
    let status = f.status.as_deref().unwrap_or("live");
    let with = |cursor: &str| {
        let mut q = vec![format!("status={status}")];
        if let Some(c) = &f.category {
            q.push(format!("category={}", urlencode(c)));
        }
        if let Some(s) = &f.seller {
            q.push(format!("seller_pubkey={s}"));
        }
        if let Some(p) = f.max_price_usd {
            q.push(format!("max_price_usd={p}"));
        }
        if !cursor.is_empty() {
            q.push(format!("cursor={cursor}"));
        }
        format!("/?{}", q.join("&"))
    };
    let body = html! {
        h1 { "Listings" }
        form.filters method="get" action="/" {
            label { "status "
                select name="status" {
                    @for s in ["live", "cancelled", "expired", "all"] {
                        option value=(s) selected[s == status] { (s) }
                    }
                }
            }
            label { "category " input name="category" value=(f.category.as_deref().unwrap_or("")) size="12"; }
            label { "max USD " input name="max_price_usd" value=(f.max_price_usd.map(|p| p.to_string()).unwrap_or_default()) size="6"; }
            label { "seller " input name="seller_pubkey" value=(f.seller.as_deref().unwrap_or("")) size="20"; }
            button type="submit" { "filter" }
        }
        @if page.is_empty() {
            p.empty { "No listings match." }
        } @else {
            table #listings {
                thead { tr { th { "listing" } th { "status" } th { "price" } th { "memories" } th { "categories" } th { "seller" } th { "sales" } th { "expires" } } }
                tbody {
                    @for l in page {
                        @let v = crate::views::listing(state, l, None);
                        tr.listing data-listing=(l.listing_id) {
                            td { a.mono href=(format!("/l/{}", l.listing_id)) { (l.listing_id) } }
                            td { span.status.(l.status(state.view_now())) { (l.status(state.view_now())) } }
                            td { (price(l)) br; span.note { "$" (l.price_usd) } }
                            td { (l.manifest.pointer("/preview/memories_count").and_then(Value::as_u64).unwrap_or(0)) }
                            td { (categories(&l.manifest)) }
                            td { (seller_link(&l.seller)) }
                            td.sales { (v.sales()) }
                            td { (date(l.expires_at)) }
                        }
                    }
                }
            }
        }
        nav.pages {
            @if f.after.is_some() { a href=(with("")) { "« first page" } }
            @if let Some(c) = next_cursor { a.next href=(with(c)) { "next page »" } }
        }
    };
    layout("Listings", state, body)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A listing's page: facts, preview, price history, timeline, escrow.
pub fn listing(
    state: &State,
    l: &ListingState,
    rows: &[Row<'_>],
    escrows: &[(&String, &EscrowState)],
    links: &Links<'_>,
) -> Markup {
    let preview = l.manifest.get("preview").unwrap_or(&Value::Null);
    let escrow_program = l.manifest.get("escrow_program").and_then(Value::as_str);
    let v = crate::views::listing(state, l, None);
    let body = html! {
        h1.mono { (l.listing_id) " " span.status.(l.status(state.view_now())) { (l.status(state.view_now())) } }
        dl.facts {
            dt { "price" } dd #price { (price(l)) " ($" (l.price_usd) ")" }
            dt { "seller" } dd { (seller_link(&l.seller)) }
            dt { "settles" } dd {
                @match escrow_program {
                    Some(p) => { "through the escrow program " code { (p) } }
                    None => { "by direct payment to " code { (l.payment_address) } }
                }
            }
            dt { "visibility" } dd { (l.visibility) }
            dt { "listed" } dd { (l.listed.block_time.map(date).unwrap_or_default()) " · slot " (l.listed.slot) " · " (links.tx(&l.listed.signature)) }
            dt { "expires" } dd { (date(l.expires_at)) }
            dt { "sales" } dd #sales { (v.sales()) " (" (v.releases()) " released)" }
            dt { "manifest" } dd { code { (l.manifest_id) } }
            dt { "bundle hash" } dd { code { (l.bundle_hash) } }
        }
        section #preview {
            h2 { "Preview" }
            @if let Some(d) = preview.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()) {
                p.description { (d) }
            }
            dl.facts {
                dt { "memories" } dd { (preview.get("memories_count").and_then(Value::as_u64).unwrap_or(0)) }
                dt { "categories" } dd { (categories(&l.manifest)) }
                dt { "tags" } dd { (preview.get("tags_summary").and_then(Value::as_array).map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                dt { "written" } dd { (preview.get("min_created_at").and_then(Value::as_str).unwrap_or("?")) " – " (preview.get("max_created_at").and_then(Value::as_str).unwrap_or("?")) }
            }
        }
        section #prices {
            h2 { "Price history" }
            ul {
                @for r in rows.iter().filter(|r| r.lamports.is_some()) {
                    li { (r.event.label()) ": " (in_currency(l, r.lamports)) " · slot " (r.at.slot) }
                }
            }
        }
        section #timeline {
            h2 { "Timeline" }
            @if l.visibility == "private" {
                p.note { "A private listing: its offers and buys are shown only to its seller and that buyer, signed in, through the API." }
            }
            table {
                thead { tr { th { "slot" } th { "time" } th { "event" } th { "by" } th { "price" } th { "detail" } th { "transaction" } } }
                tbody {
                    @for r in rows {
                        tr.event.(r.event.label().replace(' ', "-")) data-event=(r.event.label()) {
                            td { (r.at.slot) }
                            td { (r.at.block_time.map(date).unwrap_or_default()) }
                            td { (r.event.label()) }
                            td { (seller_link(r.who)) }
                            td { (in_currency(l, r.lamports)) }
                            td { (r.detail.as_deref().unwrap_or("")) }
                            td { (links.tx(&r.at.signature)) }
                        }
                    }
                }
            }
        }
        @if escrow_program.is_some() {
            section #escrow {
                h2 { "Escrow" }
                @if escrows.is_empty() {
                    p.empty { "No deposits held or settled." }
                } @else {
                    table {
                        thead { tr { th { "escrow account" } th { "buyer" } th { "amount" } th { "state" } th { "deposited" } th { "settled" } } }
                        tbody {
                            @for (pk, e) in escrows {
                                tr.escrow data-status=(e.status) {
                                    td { code { (timeline::short(pk)) } }
                                    td { (seller_link(&e.buyer)) }
                                    td { (in_currency(l, Some(e.amount))) }
                                    td { (e.status) }
                                    td { (links.tx(&e.deposited.signature)) }
                                    td { @if let Some(s) = &e.settled { (links.tx(&s.signature)) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout(&l.listing_id, state, body)
}

/// A seller's page: the API's reputation figures, the latency chart, and
/// their listings.
pub fn seller(
    state: &State,
    rep: &Reputation,
    latencies: &[Latency],
    listings: &[&ListingState],
) -> Markup {
    let body = html! {
        h1 { "Seller " span.mono { (rep.seller_pubkey) } }
        dl.facts #reputation {
            dt { "listings" } dd #rep-listings { (rep.listings) }
            dt { "sales" } dd #rep-sales { (rep.sales) }
            dt { "released" } dd #rep-releases { (rep.releases) }
            dt { "paid, never released" } dd #rep-unreleased { (rep.unreleased_paid_buys) }
            dt { "refunded (escrow)" } dd { (rep.refunded_buys) " (" (sol(Some(rep.slashed_lamports))) " of stake slashed)" }
            dt { "median release latency" } dd #rep-latency { (rep.median_release_latency_secs.map_or("–".into(), |s| format!("{s} s"))) }
            dt { "volume" } dd { (sol(Some(rep.volume_lamports))) }
            dt { "self-trades (in no figure)" } dd { (rep.self_trades) }
        }
        section #latency {
            h2 { "Release latency" }
            (latency_chart(latencies))
        }
        section {
            h2 { "Listings" }
            ul {
                @for l in listings {
                    li { a.mono href=(format!("/l/{}", l.listing_id)) { (l.listing_id) } " " span.status.(l.status(state.view_now())) { (l.status(state.view_now())) } " " (price(l)) }
                }
            }
        }
    };
    layout("Seller", state, body)
}

/// An error page.
pub fn error(state: &State, title: &str, detail: &str) -> Markup {
    layout(
        title,
        state,
        html! { h1 { (title) } p.detail { (detail) } p { a href="/" { "back to the listings" } } },
    )
}
