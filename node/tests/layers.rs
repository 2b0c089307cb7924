//! The node's layering, checked: every `crate::<module>` a module's code
//! names must sit in its own layer or below (tests inside a file are not
//! counted). A new import running back up the layers fails this test; the
//! known ones are listed in `KNOWN_UPWARD` with the issue that removes them.

use std::collections::BTreeSet;
use std::path::Path;

/// Lowest first. A module may use its own layer and those below.
const LAYERS: &[&[&str]] = &[
    &["crypto", "clock", "stop", "fault"],
    &[
        "wallet",
        "bundle",
        "seal",
        "keys",
        "scan",
        "store",
        "spend",
        "brainctl_db",
        "arweave",
        "memo",
        "import",
        "provider_import",
        "export",
        "publish",
    ],
    &["chain"],
    &["escrow", "mint"],
    &["settle"],
    &["seller"],
    &["market"],
    // the x402 endpoint serves beside `listen` (it reads its state)
    &["listen", "x402", "watch"],
];

/// Upward edges still to remove: (from, to).
const KNOWN_UPWARD: &[(&str, &str)] = &[];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level module a file under `src/` belongs to.
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// `crate::x` names in `code` (up to its first `#[cfg(test)]`).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    // `use crate::{a, b::c}` groups
    for (i, _) in code.match_indices("crate::{") {
        let rest = &code[i + "crate::{".len()..];
        let group = &rest[..rest.find('}').unwrap_or(0)];
        for part in group.split(',') {
            let name: String = part
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_import_runs_back_up_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut upward = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    for path in all {
        let rel = path.strip_prefix(&src).unwrap();
        if rel == Path::new("lib.rs") {
            continue;
        }
        let from = module_of(rel);
        let Some(from_layer) = layer_of(&from) else {
            unknown.insert(from);
            continue;
        };
        let code = std::fs::read_to_string(&path).unwrap();
        for to in crate_refs(&code) {
            // items of lib.rs itself (Error, Result) are the crate's roof
            let Some(to_layer) = layer_of(&to) else {
                if !["Error", "Result"].contains(&to.as_str()) {
                    unknown.insert(to);
                }
                continue;
            };
            if to_layer > from_layer {
                upward.insert((from.clone(), to, rel.display().to_string()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules missing from LAYERS: {unknown:?}"
    );
    let new: Vec<_> = upward
        .iter()
        .filter(|(f, t, _)| !KNOWN_UPWARD.contains(&(f.as_str(), t.as_str())))
        .collect();
    assert!(
        new.is_empty(),
        "imports running back up the layers (from, to, file): {new:#?}"
    );
    // a known edge that is gone must leave the list too
    for (f, t) in KNOWN_UPWARD {
        assert!(
            upward.iter().any(|(a, b, _)| a == f && b == t),
            "{f} -> {t} no longer exists: remove it from KNOWN_UPWARD"
        );
    }
}
