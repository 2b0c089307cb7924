//! Which tools a `brainctl mcp` server exposes: the reference's allowlists
//! (`BRAINCTL_ALLOWED_TOOLS` on stdio, optional; `BRAINCTL_HTTP_ALLOWED_TOOLS`
//! over HTTP, required) and, beyond the reference, capability groups
//! (`BRAINCTL_TOOL_GROUPS`, e.g. `memory,market_read`; also `quarantine`
//! and `market_trade`) that expand to tool
//! names, so an operator can expose reading without spending. A name that
//! is no tool (or no group) is a start-up error with the closest match, so
//! a typo never shrinks the surface silently.
//!
//! Owns parsing and naming only; the server removes what is not allowed.

use anyhow::{anyhow, Result};
use std::collections::BTreeSet;

/// The capability groups and their tools.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("memory", &["memory_search", "memory_list", "memory_add"]),
    ("bundle", &["bundle_export", "bundle_verify"]),
    (
        "quarantine",
        &["quarantine_list", "quarantine_promote", "quarantine_purge"],
    ),
    (
        "market_read",
        &[
            "market_browse",
            "market_show",
            "market_quote",
            "market_budget",
            "market_status",
        ],
    ),
    (
        "market_trade",
        &[
            "market_buy",
            "market_fetch",
            "market_pending",
            "market_list",
            "market_offer",
            "market_counter",
            "market_accept",
            "market_reject",
            "market_cancel",
            "market_withdraw",
            "market_refund",
            "market_dispute",
        ],
    ),
];

/// The closest of `known` to `name`, if any is close.
fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

fn names(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(',').map(str::trim).filter(|n| !n.is_empty())
}

/// The tools to expose from `tools` (a comma list, `tools_var` names it in
/// errors) and `groups` (a comma list of [`GROUPS`]), checked against
/// `all` (every tool the server has). `None`: neither is set, everything
/// is exposed.
pub fn allowed(
    tools_var: &str,
    tools: Option<&str>,
    groups: Option<&str>,
    all: &BTreeSet<String>,
) -> Result<Option<BTreeSet<String>>> {
    let (tools, groups) = (tools.unwrap_or(""), groups.unwrap_or(""));
    if names(tools).next().is_none() && names(groups).next().is_none() {
        return Ok(None);
    }
    let mut out = BTreeSet::new();
    let mut wrong = Vec::new();
    for name in names(tools) {
        if all.contains(name) {
            out.insert(name.to_string());
        } else {
            wrong.push(match closest(name, all.iter().map(String::as_str)) {
                Some(k) => format!("{tools_var}: {name:?} is no tool; did you mean {k:?}?"),
                None => format!("{tools_var}: {name:?} is no tool"),
            });
        }
    }
    for name in names(groups) {
        match GROUPS.iter().find(|(g, _)| *g == name) {
            Some((_, members)) => out.extend(members.iter().map(|m| m.to_string())),
            None => wrong.push(
                match closest(name, GROUPS.iter().map(|(g, _)| *g)) {
                    Some(g) => format!("BRAINCTL_TOOL_GROUPS: {name:?} is no group; did you mean {g:?}?"),
                    None => format!(
                        "BRAINCTL_TOOL_GROUPS: {name:?} is no group (groups: memory, bundle, quarantine, market_read, market_trade)"
                    ),
                },
            ),
        }
    }
    if !wrong.is_empty() {
        return Err(anyhow!("{}", wrong.join("\n")));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> BTreeSet<String> {
        GROUPS
            .iter()
            .flat_map(|(_, t)| t.iter().map(|t| t.to_string()))
            .collect()
    }

    #[test]
    fn unset_exposes_everything_and_groups_expand() {
        assert_eq!(allowed("X", None, Some(" , "), &all()).unwrap(), None);
        let got = allowed("X", Some("market_buy"), Some("memory"), &all())
            .unwrap()
            .unwrap();
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            ["market_buy", "memory_add", "memory_list", "memory_search"]
        );
    }

    #[test]
    fn typos_fail_with_the_closest_name() {
        let e = allowed(
            "BRAINCTL_ALLOWED_TOOLS",
            Some("memory-add,nonsense"),
            Some("market_reed"),
            &all(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("\"memory-add\" is no tool; did you mean \"memory_add\"?"),
            "{e}"
        );
        assert!(e.contains("\"nonsense\" is no tool"), "{e}");
        assert!(e.contains("did you mean \"market_read\"?"), "{e}");
    }

    #[test]
    fn every_group_member_is_a_tool_name_once() {
        let mut seen = BTreeSet::new();
        for (_, tools) in GROUPS {
            for t in *tools {
                assert!(seen.insert(*t), "{t} in two groups");
            }
        }
        assert_eq!(seen.len(), 25);
    }
}
