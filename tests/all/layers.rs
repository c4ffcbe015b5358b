//! Imports only go down: a layer names the layers below it, never one above or beside it.
//! Reads every file under `src/` as Rust tokens (every path through `crate::`, `self::` and
//! `super::`, in code and macros, each leaf of nested braces); a new module must be given its
//! place here. Some crates belong to one layer (clap to the command line, crossterm and ratatui
//! to the interface, rmcp to the bridge), and only the PTY layer reads `/proc`.

use std::path::{Path, PathBuf};

use proc_macro2::TokenTree;

/// The layers, bottom up. A module may name modules of lower rank only (and itself).
const LAYERS: &[(&str, u8)] = &[
    ("time", 0),
    ("paths", 0),
    ("inert", 0),
    ("spelling", 0),
    ("pty", 1),
    ("screen", 2),
    ("output", 3),
    ("registry", 4),
    ("call", 5),
    ("core", 6),
    ("remote", 7),
    ("link", 8),
    ("interface", 9),
    ("mcp", 9),
    ("cli", 10),
];

/// Within a layer, the same rule between its parts: the interface's state does not know its
/// drawing, the loop or the terminal; the server and its clients share only the protocol and the
/// socket's helpers (the dispatcher answers requests for the server and for a link in process;
/// neither the server nor a client names the other).
const PARTS: &[(&str, &[(&str, u8)])] = &[
    (
        "interface",
        &[
            ("fit", 0),
            ("fleet", 1),
            ("app", 2),
            ("ui", 3),
            ("picture", 3),
            ("clipboard", 3),
            ("event_loop", 4),
            ("terminal", 5),
            ("headless", 5),
        ],
    ),
    (
        "remote",
        &[
            ("protocol", 0),
            ("socket", 0),
            ("address", 0),
            ("dispatch", 1),
            ("ready", 1),
            ("client", 2),
            ("server", 2),
            ("proxy", 3),
        ],
    ),
];

fn rank(table: &[(&str, u8)], name: &str) -> Option<u8> {
    table
        .iter()
        .find(|(layer, _)| *layer == name)
        .map(|(_, rank)| *rank)
}

/// The module path of a file under `src/`: `interface/app/keymap.rs` is `interface::app::keymap`.
fn module_of(relative: &Path) -> Vec<String> {
    relative
        .with_extension("")
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect()
}

/// Crates that only one layer may name: the command line, the terminal, the agent's protocol.
const CRATE_TIES: &[(&str, &str)] = &[
    ("clap", "cli"),
    ("clap_complete", "cli"),
    ("clap_mangen", "cli"),
    ("crossterm", "interface"),
    ("ratatui", "interface"),
    ("rmcp", "mcp"),
];

/// The only layer that reads the kernel's process tables.
const PROC_LAYER: &str = "pty";

/// What a source file names: the crate's modules it reaches (each path resolved from the file's
/// module, `super::` and `self::` included, every leaf of nested braces), the tied crates it
/// uses, and whether it reads `/proc`.
#[derive(Debug, Default, PartialEq)]
struct Named {
    modules: Vec<Vec<String>>,
    /// Modules whose every name is brought in (`use super::*`), resolved.
    globs: Vec<Vec<String>>,
    crates: Vec<String>,
    reads_proc: bool,
}

/// Reads `source` as Rust tokens (comments dropped, doc comments skipped) from module `module`.
fn named_in(source: &str, module: &[String]) -> Named {
    let tokens: proc_macro2::TokenStream = source.parse().expect("a source file that lexes");
    let mut named = Named::default();
    scan(&tokens.into_iter().collect::<Vec<_>>(), module, &mut named);
    named.modules.retain(|path| !path.is_empty());
    named
}

fn is_punct(token: Option<&TokenTree>, ch: char) -> bool {
    matches!(token, Some(TokenTree::Punct(punct)) if punct.as_char() == ch)
}

/// Whether `tokens[at..]` starts with `::`.
fn path_sep(tokens: &[TokenTree], at: usize) -> bool {
    is_punct(tokens.get(at), ':') && is_punct(tokens.get(at + 1), ':')
}

fn ident(token: Option<&TokenTree>) -> Option<String> {
    match token {
        Some(TokenTree::Ident(ident)) => Some(ident.to_string()),
        _ => None,
    }
}

fn scan(tokens: &[TokenTree], module: &[String], named: &mut Named) {
    let mut at = 0;
    while at < tokens.len() {
        // `#[doc = "..."]` (a doc comment): words, not code.
        if is_punct(tokens.get(at), '#') {
            let group = match tokens.get(at + 1) {
                Some(TokenTree::Group(group)) => Some(group),
                _ => tokens.get(at + 2).and_then(|token| match token {
                    TokenTree::Group(group) if is_punct(tokens.get(at + 1), '!') => Some(group),
                    _ => None,
                }),
            };
            if let Some(group) = group {
                if ident(group.stream().into_iter().next().as_ref()).as_deref() == Some("doc") {
                    at += if is_punct(tokens.get(at + 1), '!') {
                        3
                    } else {
                        2
                    };
                    continue;
                }
            }
        }
        match &tokens[at] {
            TokenTree::Group(group) => {
                scan(
                    &group.stream().into_iter().collect::<Vec<_>>(),
                    module,
                    named,
                );
            }
            TokenTree::Literal(literal) => {
                let text = literal.to_string();
                let content = text
                    .trim_start_matches(['r', '#', 'b'])
                    .trim_start_matches('"');
                if content.starts_with("/proc") {
                    named.reads_proc = true;
                }
                // Paths written in strings (`#[serde(with = "crate::x")]`) are code too.
                for (at, _) in text.match_indices("crate::") {
                    let path: Vec<String> = text[at + "crate::".len()..]
                        .split("::")
                        .map(|segment| {
                            segment
                                .chars()
                                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                                .collect::<String>()
                        })
                        .take_while(|segment| !segment.is_empty())
                        .take(2)
                        .collect();
                    named.modules.push(path);
                }
            }
            TokenTree::Ident(word) => {
                let word = word.to_string();
                let starts_a_path = !(at >= 2 && path_sep(tokens, at - 2));
                // `mod name { ... }`: what is inside is in module `name`.
                if word == "mod" {
                    if let (Some(name), Some(TokenTree::Group(body))) =
                        (ident(tokens.get(at + 1)), tokens.get(at + 2))
                    {
                        let inner: Vec<String> = module
                            .iter()
                            .cloned()
                            .chain(std::iter::once(name))
                            .collect();
                        scan(
                            &body.stream().into_iter().collect::<Vec<_>>(),
                            &inner,
                            named,
                        );
                        at += 3;
                        continue;
                    }
                }
                // A tied crate named anywhere: `clap::`, `::clap::`, `use clap as c`.
                if CRATE_TIES.iter().any(|(tied, _)| *tied == word) {
                    named.crates.push(word.clone());
                }
                if starts_a_path && path_sep(tokens, at + 1) {
                    let root = match word.as_str() {
                        "crate" => Some(Vec::new()),
                        "self" | "super" => Some(module.to_vec()),
                        _ => None,
                    };
                    if let Some(root) = root {
                        at = path(tokens, at, root, named);
                        continue;
                    }
                }
            }
            TokenTree::Punct(_) => {}
        }
        at += 1;
    }
}

/// Reads the path starting at `tokens[at]` (`crate`, `self` or `super`) from `prefix`, each of
/// its leaves into `named`; the index after it.
fn path(tokens: &[TokenTree], mut at: usize, mut prefix: Vec<String>, named: &mut Named) -> usize {
    loop {
        match ident(tokens.get(at)).as_deref() {
            Some("super") => {
                prefix.pop();
            }
            Some("crate" | "self") => {}
            Some(segment) => prefix.push(segment.to_owned()),
            None if is_punct(tokens.get(at), '*') => {
                // A glob brings in every name of a module: one that holds layers or parts of
                // other ranks hides what it reaches.
                named.globs.push(prefix);
                return at + 1;
            }
            None => {
                // `a::{b, c::{d}}`: each item is a path of its own from here.
                if let Some(TokenTree::Group(group)) = tokens.get(at) {
                    let items: Vec<TokenTree> = group.stream().into_iter().collect();
                    for item in items.split(|token| is_punct(Some(token), ',')) {
                        if !item.is_empty() {
                            path(item, 0, prefix.clone(), named);
                        }
                    }
                    return at + 1;
                }
                break;
            }
        }
        if !path_sep(tokens, at + 1) {
            at += 1;
            break;
        }
        at += 3;
    }
    named.modules.push(prefix.into_iter().take(2).collect());
    at
}

/// Why `module` may not name `named`, if it may not.
fn upward(module: &[String], named: &[String]) -> Option<String> {
    let (from, to) = (&module[0], &named[0]);
    let Some(to_rank) = rank(LAYERS, to) else {
        // An item of the crate's root (a macro, a re-export): not a layer.
        return None;
    };
    let from_rank = rank(LAYERS, from)?;
    if from != to {
        return (to_rank >= from_rank)
            .then(|| format!("{from} (layer {from_rank}) names {to} (layer {to_rank})"));
    }
    let parts = PARTS.iter().find(|(layer, _)| layer == from)?.1;
    let (Some(from_part), Some(to_part)) = (module.get(1), named.get(1)) else {
        return None;
    };
    if from_part == to_part {
        return None;
    }
    let (Some(from_rank), Some(to_rank)) = (rank(parts, from_part), rank(parts, to_part)) else {
        return None;
    };
    (to_rank >= from_rank).then(|| format!("{from}::{from_part} names {to}::{to_part}"))
}

/// Everything `module` names that it may not.
fn breaks_of(module: &[String], named: &Named) -> Vec<String> {
    let mut breaks: Vec<String> = named
        .modules
        .iter()
        .filter_map(|path| upward(module, path))
        .collect();
    let layer = module[0].as_str();
    for glob in &named.globs {
        let holds_parts = match glob.as_slice() {
            [] => true,
            [layer] => PARTS.iter().any(|(parted, _)| parted == layer),
            _ => false,
        };
        if holds_parts {
            let what = glob.first().map_or("the crate's root", String::as_str);
            breaks.push(format!(
                "{layer} takes every name of {what} (a glob): name each"
            ));
        }
    }
    for tied in &named.crates {
        if let Some((_, owner)) = CRATE_TIES.iter().find(|(name, _)| name == tied) {
            if *owner != layer {
                breaks.push(format!("{layer} uses {tied}, which only {owner} may"));
            }
        }
    }
    if named.reads_proc && layer != PROC_LAYER {
        breaks.push(format!("{layer} reads /proc, which only {PROC_LAYER} may"));
    }
    breaks
}

fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading src/").flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn imports_only_go_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut breaks = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src/");
        let module = module_of(relative);
        if matches!(module[0].as_str(), "lib" | "main") {
            continue;
        }
        assert!(
            rank(LAYERS, &module[0]).is_some(),
            "{} is in no layer: give `{}` its place in LAYERS",
            relative.display(),
            module[0]
        );
        if let Some(parts) = PARTS.iter().find(|(layer, _)| *layer == module[0]) {
            if let Some(part) = module.get(1) {
                assert!(
                    rank(parts.1, part).is_some(),
                    "{} is in no part of {}: give `{part}` its place in PARTS",
                    relative.display(),
                    module[0]
                );
            }
        }
        let source = std::fs::read_to_string(file).expect("reading a source file");
        for why in breaks_of(&module, &named_in(&source, &module)) {
            breaks.push(format!("{}: {why}", relative.display()));
        }
    }
    breaks.sort();
    breaks.dedup();
    assert!(
        breaks.is_empty(),
        "imports going up:\n{}",
        breaks.join("\n")
    );
    assert!(
        files.len() > 20,
        "only {} files found under src/",
        files.len()
    );
}

fn breaks_in(file: &str, source: &str) -> Vec<String> {
    let module = module_of(Path::new(file));
    breaks_of(&module, &named_in(source, &module))
}

#[test]
fn the_layer_check_sees_an_upward_import() {
    assert_eq!(
        breaks_in(
            "core/tasks.rs",
            "use crate::interface::app::App;\nuse crate::{pty::TermSize, link};"
        ),
        [
            "core (layer 6) names interface (layer 9)",
            "core (layer 6) names link (layer 8)"
        ]
    );
    let state = module_of(Path::new("interface/app/layout.rs"));
    assert_eq!(
        upward(&state, &["interface".into(), "ui".into()]).as_deref(),
        Some("interface::app names interface::ui")
    );
    assert_eq!(upward(&state, &["screen".into(), "Cell".into()]), None);
}

#[test]
fn the_layer_check_sees_the_second_name_in_nested_braces() {
    assert_eq!(
        breaks_in(
            "core/tasks.rs",
            "use crate::{pty::{TermSize, Waiter}, link::Link, screen};"
        ),
        ["core (layer 6) names link (layer 8)"]
    );
    assert_eq!(
        breaks_in(
            "core/tasks.rs",
            "use crate::{screen::{Cell, Screen}, output::{a, b::{c}}, mcp};"
        ),
        ["core (layer 6) names mcp (layer 9)"]
    );
}

#[test]
fn the_layer_check_follows_super_where_it_climbs() {
    // From `interface::app::keymap`, `super::super::ui` is `interface::ui`.
    assert_eq!(
        breaks_in("interface/app/keymap.rs", "use super::super::ui::Theme;"),
        ["interface::app names interface::ui"]
    );
    // Inside an inline module, `super` is the file's own module first.
    assert_eq!(
        breaks_in(
            "core/tasks.rs",
            "mod tests { use super::*; fn f() { super::super::super::link::Link::x(); } }"
        ),
        ["core (layer 6) names link (layer 8)"]
    );
    assert!(breaks_in("interface/app/keymap.rs", "use super::Layout;").is_empty());
    // In code and in macros, not only in `use`.
    assert_eq!(
        breaks_in("output/read.rs", "fn f() { assert!(crate::core::x()); }"),
        ["output (layer 3) names core (layer 6)"]
    );
    // Words are not code.
    assert!(
        breaks_in(
            "output/read.rs",
            "/// See crate::core::Core.\n// crate::link\nfn f() {}"
        )
        .is_empty()
    );
}

#[test]
fn the_layer_check_sees_crates_outside_their_layer() {
    assert_eq!(
        breaks_in(
            "call.rs",
            "#[derive(clap::ValueEnum)]\nenum Policy { Kill }"
        ),
        ["call uses clap, which only cli may"]
    );
    assert_eq!(
        breaks_in("cli.rs", "fn f() { crossterm::terminal::size(); }"),
        ["cli uses crossterm, which only interface may"]
    );
    assert_eq!(
        breaks_in("core.rs", "use rmcp::model::Tool;"),
        ["core uses rmcp, which only mcp may"]
    );
    assert_eq!(
        breaks_in(
            "interface/app/usage.rs",
            r#"fn f() { std::fs::read("/proc/self/stat"); }"#
        ),
        ["interface reads /proc, which only pty may"]
    );
    assert_eq!(
        breaks_in("call.rs", "use ::clap::ValueEnum;\nextern crate clap as c;"),
        [
            "call uses clap, which only cli may",
            "call uses clap, which only cli may"
        ]
    );
    assert_eq!(
        breaks_in("remote/client.rs", "use super::*;"),
        ["remote takes every name of remote (a glob): name each"]
    );
    assert_eq!(
        breaks_in("core/tasks.rs", "use crate::*;"),
        ["core takes every name of the crate's root (a glob): name each"]
    );
    assert!(breaks_in("core/tasks.rs", "mod tests { use super::*; }").is_empty());
    assert_eq!(
        breaks_in(
            "core/tasks.rs",
            r#"#[serde(with = "crate::link::as_text")] struct S;"#
        ),
        ["core (layer 6) names link (layer 8)"]
    );
    assert!(breaks_in("core.rs", r#"const DOC: &str = "docs/processes.md";"#).is_empty());
    assert!(breaks_in("cli.rs", "use clap::Parser;").is_empty());
    assert!(breaks_in("pty.rs", r#"const P: &str = "/proc";"#).is_empty());
}

/// Every file under `src/`, as its path from there.
fn source_paths(dir: &std::path::Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_paths(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let relative = path.strip_prefix(&src).expect("under src");
            found.push(relative.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_source_file_is_in_the_architectures_map() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the map");
    let mut files: Vec<String> = Vec::new();
    source_paths(&root.join("src"), &mut files);
    assert!(files.len() > 100, "{files:?}");
    let missing: Vec<&String> = files
        .iter()
        .filter(|file| !map.contains(&format!("| `{file}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not list {missing:?}: add a row to its map of every file"
    );
    // And lists no file that is gone.
    let listed = map
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.split_once("` |"))
        .map(|(file, _)| file.to_owned());
    let gone: Vec<String> = listed.filter(|file| !files.contains(file)).collect();
    assert!(
        gone.is_empty(),
        "docs/architecture.md lists {gone:?}, which are gone"
    );
}
