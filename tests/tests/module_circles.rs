//! No import circles between sibling modules, in any folder of the node,
//! the indexer or the CLI: when two modules of one folder need each other,
//! what they share belongs to a third (or to the one that owns it). A
//! module's code is its file, or its folder's files; a sibling is named
//! as `super::x` (from the module's own file), `super::super::x` (one
//! folder down) or `crate::<folder path>::x`. Comments, doc links and
//! `#[cfg(test)]` code are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates' source roots, from this crate's directory.
const ROOTS: &[&str] = &["../node/src", "../indexer/src", "../cli/src"];

/// Code with line comments and everything from the first `#[cfg(test)]`
/// removed.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Names that follow `prefix` in `code`, as `prefix` + name or inside a
/// `prefix{a, b::c}` group.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let word = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(0)];
            out.extend(group.split(',').map(word));
        } else {
            out.insert(word(rest));
        }
    }
    out.remove("");
    out
}

/// Every `.rs` file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The sibling modules of folder `dir` (module path `path`, e.g.
/// `crate::mint`) each names: module name → siblings it uses.
fn sibling_edges(dir: &Path, path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, Vec<(PathBuf, usize)>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            // the folder's own file is at depth 0, the rest one further down
            for f in files_under(&p) {
                let depth = f.strip_prefix(&p).unwrap().components().count()
                    - usize::from(f.file_name().unwrap() == "mod.rs");
                modules.entry(stem.clone()).or_default().push((f, depth));
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && !["mod", "lib", "main"].contains(&stem.as_str())
        {
            modules.entry(stem).or_default().push((p, 0));
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (module, files) in &modules {
        let mut used = BTreeSet::new();
        for (file, depth) in files {
            let code = code_of(file);
            used.extend(names_after(&code, &format!("{path}::")));
            let supers = "super::".repeat(depth + 1);
            // `super::super::x` must not count as `super::x` one level up
            if *depth == 0 {
                let once: String = code.replace("super::super::", "");
                used.extend(names_after(&once, &supers));
            } else {
                used.extend(names_after(&code, &supers));
            }
        }
        used.retain(|n| n != module && names.contains(n));
        edges.insert(module.clone(), used);
    }
    edges
}

/// A circle in `edges`, if any (as the path around it).
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut c = stack[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// Every folder under `root` with its module path.
fn folders(root: &Path, path: &str, out: &mut Vec<(PathBuf, String)>) {
    out.push((root.to_path_buf(), path.to_string()));
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            folders(&p, &format!("{path}::{name}"), out);
        }
    }
}

#[test]
fn no_folder_has_an_import_circle() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut checked = 0;
    for root in ROOTS {
        let mut all = Vec::new();
        folders(&here.join(root), "crate", &mut all);
        for (dir, path) in all {
            checked += 1;
            if let Some(c) = circle(&sibling_edges(&dir, &path)) {
                found.push(format!("{}: {}", dir.display(), c.join(" -> ")));
            }
        }
    }
    assert!(checked > 20, "only {checked} folders found");
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "use super::b::B;\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "use crate::m::{c, a};\n").unwrap();
    std::fs::write(dir.path().join("c.rs"), "// super::a is a comment\n").unwrap();
    let edges = sibling_edges(dir.path(), "crate::m");
    assert_eq!(
        circle(&edges),
        Some(vec!["a".to_string(), "b".into(), "a".into()])
    );
    std::fs::write(dir.path().join("b.rs"), "use crate::m::c;\n").unwrap();
    assert_eq!(circle(&sibling_edges(dir.path(), "crate::m")), None);
}
