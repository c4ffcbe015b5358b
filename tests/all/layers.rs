//! Imports only go down: a layer names the layers below it, never one above or beside it.
//! Reads every file under `src/`; a new module must be given its place here.

use std::path::{Path, PathBuf};

/// The layers, bottom up. A module may name modules of lower rank only (and itself).
const LAYERS: &[(&str, u8)] = &[
    ("time", 0),
    ("paths", 0),
    ("inert", 0),
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
/// socket's helpers (the dispatcher answers requests for the server and for a link in process).
const PARTS: &[(&str, &[(&str, u8)])] = &[
    (
        "interface",
        &[
            ("app", 0),
            ("ui", 1),
            ("event_loop", 2),
            ("terminal", 3),
            ("headless", 3),
        ],
    ),
    (
        "remote",
        &[
            ("protocol", 0),
            ("socket", 0),
            ("dispatch", 1),
            ("client", 1),
            ("server", 2),
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

/// The module paths a source names through `crate::`, each as its first two segments.
fn named_modules(source: &str) -> Vec<Vec<String>> {
    let mut named = Vec::new();
    for (at, _) in source.match_indices("crate::") {
        let rest = &source[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::b, c}`: each item's path.
            let group = &group[..group.find('}').unwrap_or(group.len())];
            named.extend(group.split(',').map(path_segments));
        } else {
            named.push(path_segments(rest));
        }
    }
    named.retain(|path| !path.is_empty());
    named
}

fn path_segments(text: &str) -> Vec<String> {
    text.trim_start()
        .split("::")
        .map(|segment| {
            segment
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|segment| !segment.is_empty())
        .take(2)
        .collect()
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
        for named in named_modules(&source) {
            if let Some(why) = upward(&module, &named) {
                breaks.push(format!("{}: {why}", relative.display()));
            }
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

#[test]
fn the_layer_check_sees_an_upward_import() {
    let module = module_of(Path::new("core/tasks.rs"));
    let named = named_modules("use crate::interface::app::App;\nuse crate::{pty::TermSize, link};");
    let breaks: Vec<String> = named
        .iter()
        .filter_map(|named| upward(&module, named))
        .collect();
    assert_eq!(
        breaks,
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
