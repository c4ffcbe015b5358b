//! What the two YAML readers share (`process-compose.yaml`, `mprocs.yaml`): the file read into
//! nodes that know their line and column (saphyr, YAML 1.2), a node read as text, a number, a
//! switch, a list or a mapping (`<<` merges taken), each mistake with its place, and each key oino
//! does not take listed once with its place, for [`Project::ignored`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, ScanError, YamlData};
use saphyr_parser::{Event, Parser};

use super::env::{Budget, EnvFile, Known};
use super::{FileError, Project, ProjectProcess};

/// How deep collections may nest, aliases expanded. saphyr builds and drops a document by
/// recursion, so a file of a few thousand nested `- ` would overflow the stack; a project file
/// nests a handful deep.
const MAX_DEPTH: usize = 64;

/// A node of the document, borrowed.
pub(super) type Node<'n> = &'n MarkedYaml<'n>;

/// One key of a mapping and its value.
#[derive(Clone, Copy)]
pub(super) struct Entry<'n> {
    /// The key, as written.
    pub key: &'n str,
    /// The key's node: its place.
    pub at: Node<'n>,
    /// The value.
    pub value: Node<'n>,
}

/// Reads the YAML project `file` (its `text`): process-compose's when the top has `processes`,
/// mprocs's when it has `procs`. `base` are the environment files every process reads (`.env`).
pub(super) fn read(
    file: &Path,
    text: &str,
    base: Vec<EnvFile>,
    known: Known,
    budget: &Budget,
) -> Result<Project, FileError> {
    let yaml = Yaml::new(file);
    let root = document(file, text, budget)?;
    let top = yaml.mapping(&root, "the file")?;
    let dir = file.parent().unwrap_or(Path::new("/"));
    let context = Context {
        yaml,
        dir,
        known,
        base,
        budget,
    };
    let has = |wanted: &str| top.iter().any(|entry| entry.key == wanted);
    let processes = if has("processes") {
        super::compose::processes(&context, &top)?
    } else if has("procs") {
        super::mprocs::processes(&context, &top)?
    } else {
        return Err(context.yaml.at(
            &root,
            "no processes: a process-compose file has `processes:` at the top, an mprocs file \
             `procs:`",
        ));
    };
    Ok(Project {
        name: Project::name_of_folder(file),
        file: file.to_owned(),
        processes,
        ignored: context.yaml.ignored(),
    })
}

/// What reading a YAML project file needs beside its nodes.
pub(super) struct Context<'a> {
    /// The file's reader: its places, and what it ignored.
    pub yaml: Yaml<'a>,
    /// The file's folder.
    pub dir: &'a Path,
    /// The environment the file is read in.
    pub known: Known<'a>,
    /// The environment files every process reads (`.env` beside the file), with their variables.
    pub base: Vec<EnvFile>,
    /// What reading the file built so far.
    pub budget: &'a Budget,
}

impl Context<'_> {
    /// The variables of the environment files, in order, each over those before it, for one
    /// process (counted in the budget: each process gets them all); a mistake at `node`.
    pub fn base_env(&self, node: Node) -> Result<Vec<(String, String)>, FileError> {
        let env = super::env::of_files(&self.base);
        self.charge(&env, node)?;
        Ok(env)
    }

    /// Counts the variables `env` (one process's) in the budget; past it, a mistake at `node`.
    pub fn charge(&self, env: &[(String, String)], node: Node) -> Result<(), FileError> {
        self.budget
            .spend_on(env)
            .map_err(|why| self.yaml.at(node, why))
    }

    /// `text` with `${VAR}` expanded from `env` and the environment (a mistake at `node`).
    pub fn expand(
        &self,
        text: &str,
        env: &[(String, String)],
        node: Node,
    ) -> Result<String, FileError> {
        super::env::expand(text, &|name| self.lookup(env, name), self.budget)
            .map_err(|why| self.yaml.at(node, why))
    }

    /// The environment files' paths.
    pub fn base_files(&self) -> Vec<PathBuf> {
        self.base.iter().map(|(path, _)| path.clone()).collect()
    }

    /// The value of `name` in `env`, else in the environment the file is read in.
    pub fn lookup(&self, env: &[(String, String)], name: &str) -> Option<String> {
        super::env::value_of(env, name, self.known)
    }

    /// A folder within the file's folder (an absolute one as it is): it must be there.
    pub fn folder(&self, written: &str, node: Node) -> Result<PathBuf, FileError> {
        let cwd = self.dir.join(written);
        if !cwd.is_dir() {
            return Err(self
                .yaml
                .at(node, format!("{} is no folder", cwd.display())));
        }
        Ok(cwd)
    }

    /// A process's command, checked: not empty, and one the server runs.
    pub fn command(&self, cmd: String, node: Node) -> Result<String, FileError> {
        if cmd.trim().is_empty() {
            return Err(self.yaml.at(node, "the command is empty: give a command"));
        }
        if let Some(why) = super::file::command_refusal(&cmd) {
            return Err(self.yaml.at(node, why));
        }
        Ok(cmd)
    }

    /// A process's own variables, checked as the server checks them (a mistake at `node`).
    pub fn variables(&self, own: &[(String, String)], node: Node) -> Result<(), FileError> {
        let pairs = own
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        match super::file::variables_refusal(pairs) {
            Some(why) => Err(self.yaml.at(node, why)),
            None => Ok(()),
        }
    }

    /// The names of the processes, each checked as a task's name, in the file's order.
    pub fn names<'n>(&self, processes: &[Entry<'n>]) -> Result<Vec<&'n str>, FileError> {
        processes
            .iter()
            .map(|entry| {
                crate::core::tasks::validate_name(entry.key)
                    .map_err(|err| self.yaml.at(entry.at, err.to_string()))?;
                Ok(entry.key)
            })
            .collect()
    }

    /// `processes` refused when some wait for each other (at the first one's name).
    pub fn without_cycles(
        &self,
        processes: &[ProjectProcess],
        entries: &[Entry],
    ) -> Result<(), FileError> {
        super::order::in_start_order(processes.to_vec()).map_err(|cycle| {
            let first = entries.iter().find(|entry| entry.key == cycle[0]);
            let message = format!(
                "these processes wait for each other, so none could start: {}",
                cycle.join(" -> ")
            );
            match first {
                Some(entry) => self.yaml.at(entry.at, message),
                None => self.yaml.at_start(message),
            }
        })?;
        Ok(())
    }
}

/// The one document of `text`, the YAML file `file` (an empty file reads as an empty one).
fn document<'t>(file: &Path, text: &'t str, budget: &Budget) -> Result<MarkedYaml<'t>, FileError> {
    within_bounds(file, text, budget)?;
    let mut documents = MarkedYaml::load_from_str(text).map_err(|err| not_yaml(file, &err))?;
    if let Some(second) = documents.get(1) {
        return Err(Yaml::new(file).at(
            second,
            "a second YAML document (after ---): a project file holds one",
        ));
    }
    Ok(documents
        .pop()
        .unwrap_or_else(|| MarkedYaml::from_bare_yaml(saphyr::Yaml::Value(Scalar::Null))))
}

/// What one node costs once built, beside its text.
const NODE_BYTES: usize = 64;

/// Refuses `text` before saphyr builds it if its collections nest deeper than [`MAX_DEPTH`], or
/// if it would build more than the budget allows, aliases expanded: saphyr builds a copy of the
/// anchored node for each alias, so 190 KB repeating one 100 KB string through 30,000 aliases
/// would be 3 GB. Each anchor's depth and size are remembered where it is defined. A text that is
/// not YAML is refused here with its place.
fn within_bounds(file: &Path, text: &str, budget: &Budget) -> Result<(), FileError> {
    /// A collection open around the next event: its anchor, its depth and size so far.
    struct Open {
        anchor: usize,
        depth: usize,
        bytes: usize,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut anchored: HashMap<usize, (usize, usize)> = HashMap::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|err| not_yaml(file, &err))?;
        let at = |message: String| FileError {
            file: file.to_owned(),
            line: span.start.line().max(1),
            column: span.start.col() + 1,
            message,
        };
        let (anchor, depth, bytes) = match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                open.push(Open {
                    anchor,
                    depth: 0,
                    bytes: NODE_BYTES,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match open.pop() {
                Some(closed) => (closed.anchor, closed.depth + 1, closed.bytes),
                None => continue,
            },
            Event::Scalar(value, _, anchor, _) => (anchor, 1, NODE_BYTES + value.len()),
            Event::Alias(id) => {
                let (depth, bytes) = anchored.get(&id).copied().unwrap_or((1, NODE_BYTES));
                // The copy an alias becomes is built anew: it counts each time.
                budget.spend(bytes).map_err(at)?;
                (0, depth, bytes)
            }
            _ => continue,
        };
        if open.len() + depth > MAX_DEPTH {
            return Err(at(format!(
                "this nests deeper than {MAX_DEPTH} lists and mappings: a project file needs a few"
            )));
        }
        if anchor > 0 {
            anchored.insert(anchor, (depth, bytes));
        }
        if let Some(parent) = open.last_mut() {
            parent.depth = parent.depth.max(depth);
            parent.bytes = parent.bytes.saturating_add(bytes);
        }
    }
    Ok(())
}

/// A mistake of YAML itself, at its place.
fn not_yaml(file: &Path, err: &ScanError) -> FileError {
    FileError {
        file: file.to_owned(),
        line: err.marker().line().max(1),
        column: err.marker().col() + 1,
        message: format!("this is not YAML: {}", err.info()),
    }
}

/// The reader of one YAML file: places, and what it ignored.
pub(super) struct Yaml<'a> {
    file: &'a Path,
    /// The file's name, as places are shown.
    shown: String,
    /// What was not taken, with its line and column.
    ignored: RefCell<Vec<(usize, usize, String)>>,
}

impl<'a> Yaml<'a> {
    fn new(file: &'a Path) -> Self {
        let shown = file.file_name().map_or_else(
            || file.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        Self {
            file,
            shown,
            ignored: RefCell::new(Vec::new()),
        }
    }

    /// A mistake at `node`.
    pub fn at(&self, node: &MarkedYaml, message: impl Into<String>) -> FileError {
        let (line, column) = place(node);
        FileError {
            file: self.file.to_owned(),
            line,
            column,
            message: message.into(),
        }
    }

    /// A mistake of the whole file.
    pub fn at_start(&self, message: impl Into<String>) -> FileError {
        FileError {
            file: self.file.to_owned(),
            line: 1,
            column: 1,
            message: message.into(),
        }
    }

    /// Lists `what`, at `node`, as not taken (once: a key merged into several processes from
    /// one anchor is written once).
    pub fn ignore(&self, node: &MarkedYaml, what: &str) {
        let (line, column) = place(node);
        let said = format!("{what} at {}:{line}:{column}", self.shown);
        let mut ignored = self.ignored.borrow_mut();
        if !ignored.iter().any(|(_, _, other)| *other == said) {
            ignored.push((line, column, said));
        }
    }

    /// What was not taken, in the file's order.
    fn ignored(self) -> Vec<String> {
        let mut ignored = self.ignored.into_inner();
        ignored.sort_by_key(|(line, column, _)| (*line, *column));
        ignored.into_iter().map(|(_, _, said)| said).collect()
    }

    /// The keys and values of the mapping `node` (`what` in a mistake), in the file's order; a
    /// `<<` key merges the mappings it names (an alias, or a list of them) under the keys written
    /// beside it, as YAML 1.1 did and process-compose still does. Nothing (`~`) is no key.
    pub fn mapping<'n>(&self, node: Node<'n>, what: &str) -> Result<Vec<Entry<'n>>, FileError> {
        let map = match &node.data {
            YamlData::Mapping(map) => map,
            YamlData::Value(Scalar::Null) => return Ok(Vec::new()),
            _ => return Err(self.at(node, format!("{what} is a mapping of key: value"))),
        };
        let mut written = Vec::with_capacity(map.len());
        for (key, value) in map {
            let Some(name) = key.data.as_str() else {
                return Err(self.at(key, format!("a key of {what} is a name (text)")));
            };
            written.push(Entry {
                key: name,
                at: key,
                value,
            });
        }
        let mut entries: Vec<Entry<'n>> = Vec::with_capacity(written.len());
        for entry in &written {
            if entry.key != "<<" {
                entries.push(*entry);
                continue;
            }
            let merged: Vec<Node<'n>> = match &entry.value.data {
                YamlData::Sequence(items) => items.iter().collect(),
                _ => vec![entry.value],
            };
            for from in merged {
                for inner in self.mapping(from, "what << merges")? {
                    let given = written.iter().chain(&entries).any(|e| e.key == inner.key);
                    if !given {
                        entries.push(inner);
                    }
                }
            }
        }
        Ok(entries)
    }

    /// The text `node` holds (`what` in a mistake).
    pub fn text<'n>(&self, node: Node<'n>, what: &str) -> Result<&'n str, FileError> {
        node.data
            .as_str()
            .ok_or_else(|| self.at(node, format!("{what} is text{}", given(node))))
    }

    /// The text of a scalar: text as it is, a number or a switch as written (`3000`, `true`).
    pub fn scalar(&self, node: Node, what: &str) -> Result<String, FileError> {
        match &node.data {
            YamlData::Value(Scalar::String(text)) => Ok(text.to_string()),
            YamlData::Value(Scalar::Integer(number)) => Ok(number.to_string()),
            YamlData::Value(Scalar::FloatingPoint(number)) => Ok(number.to_string()),
            YamlData::Value(Scalar::Boolean(switch)) => Ok(switch.to_string()),
            _ => Err(self.at(node, format!("{what} is text or a number{}", given(node)))),
        }
    }

    /// The switch `node` holds: `true` or `false`.
    pub fn switch(&self, node: Node, what: &str) -> Result<bool, FileError> {
        node.data
            .as_bool()
            .ok_or_else(|| self.at(node, format!("{what} is true or false{}", given(node))))
    }

    /// A whole number, 0 or more.
    pub fn count(&self, node: Node, what: &str) -> Result<u32, FileError> {
        node.data
            .as_integer()
            .and_then(|number| u32::try_from(number).ok())
            .ok_or_else(|| self.at(node, format!("{what} is a whole number, 0 or more")))
    }

    /// A time given in seconds, in ms: a number, 0 or more (at most a day).
    pub fn seconds(&self, node: Node, what: &str) -> Result<u64, FileError> {
        #[allow(clippy::cast_precision_loss)]
        let seconds = match &node.data {
            YamlData::Value(Scalar::Integer(number)) => Some(*number as f64),
            YamlData::Value(Scalar::FloatingPoint(number)) => Some(number.into_inner()),
            _ => None,
        };
        match seconds {
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let ms = (seconds * 1000.0).min(86_400_000.0) as u64;
                Ok(ms)
            }
            _ => Err(self.at(node, format!("{what} is seconds: a number, 0 or more"))),
        }
    }

    /// The items of the list `node` (nothing, `~`, is an empty one).
    pub fn list<'n>(&self, node: Node<'n>, what: &str) -> Result<&'n [MarkedYaml<'n>], FileError> {
        match &node.data {
            YamlData::Sequence(items) => Ok(items),
            YamlData::Value(Scalar::Null) => Ok(&[]),
            _ => Err(self.at(node, format!("{what} is a list{}", given(node)))),
        }
    }
}

/// Line and column (from 1) where `node` starts.
fn place(node: &MarkedYaml) -> (usize, usize) {
    (node.span.start.line().max(1), node.span.start.col() + 1)
}

/// What `node` holds instead, for a mistake: ", not a number".
fn given(node: &MarkedYaml) -> &'static str {
    match &node.data {
        YamlData::Value(Scalar::String(_)) => ", not text",
        YamlData::Value(Scalar::Integer(_) | Scalar::FloatingPoint(_)) => ", not a number",
        YamlData::Value(Scalar::Boolean(_)) => ", not true or false",
        YamlData::Value(Scalar::Null) => ", not nothing",
        YamlData::Sequence(_) => ", not a list",
        YamlData::Mapping(_) => ", not a mapping",
        _ => "",
    }
}
