//! A project file: the processes a project runs, declared once. `oino.toml` in a folder (or a
//! file given with `--config`), else a `Procfile` (`name: command` lines, as foreman, overmind
//! and honcho read it). A file is checked whole before anything starts: a mistake is refused with
//! its file, line and column and what was expected.
//!
//! ```toml
//! [processes.db]
//! cmd = "postgres -D data"
//! ready = "ready to accept connections"
//!
//! [processes.web]
//! cmd = "npm run dev"
//! cwd = "web"
//! env = { PORT = "3000" }
//! after = ["db"]
//! restart = "on-failure"
//! ```

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// The project file looked for first.
pub const PROJECT_FILE: &str = "oino.toml";
/// The file looked for when there is no project file.
pub const PROCFILE: &str = "Procfile";
/// Restarts after which a process that keeps failing is left ended, unless the file says.
pub const DEFAULT_RESTART_LIMIT: u32 = 5;
/// The first wait before a restart, unless the file says; it doubles up to [`MAX_BACKOFF_MS`].
pub const DEFAULT_BACKOFF_MS: u64 = 1000;
/// The longest wait before a restart: a backoff doubles up to it.
pub const MAX_BACKOFF_MS: u64 = 30_000;

/// When a process that ended is started again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// It stays ended.
    #[default]
    Never,
    /// When it ends other than by exiting 0.
    OnFailure,
    /// Whenever it ends (up to `restart_limit` times in a row).
    Always,
}

/// One process of a project, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectProcess {
    /// Its name: the name of the task it runs as.
    pub name: String,
    /// The shell command, run by `bash -c`.
    pub cmd: String,
    /// Its folder, absolute.
    pub cwd: PathBuf,
    /// Variables set for it, over the environment `oino` was started in.
    pub env: Vec<(String, String)>,
    /// Whether a start of the project starts it (else only a start of it by name does).
    pub autostart: bool,
    /// When it is started again once it ends.
    pub restart: Restart,
    /// Restarts in a row after which it is left ended (one that ran over 30 s starts the count
    /// over); 5 unless the file says.
    pub restart_limit: u32,
    /// The wait before its first restart, in ms (the file gives `backoff` in seconds); it doubles
    /// with each, up to [`MAX_BACKOFF_MS`].
    pub backoff_ms: u64,
    /// A pattern: it is ready once a line of its output matches (ready at once without one).
    pub ready: Option<String>,
    /// Processes that must be ready before it starts.
    pub after: Vec<String>,
}

/// A project: its file and its processes, each after those it waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// The file, absolute: a project is known by it.
    pub file: PathBuf,
    /// Its processes, each after those it waits for.
    pub processes: Vec<ProjectProcess>,
}

/// A mistake in a file oino reads (a project file, the settings), where it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}:{line}:{column}: {message}", file.display())]
pub struct FileError {
    /// The file with the mistake.
    pub file: PathBuf,
    /// The mistake's line, from 1.
    pub line: usize,
    /// The mistake's column, from 1, in characters.
    pub column: usize,
    /// What is wrong, and what was expected.
    pub message: String,
}

/// A mistake in a project file.
pub type ProjectError = FileError;

impl FileError {
    /// A mistake at byte `offset` of `text`, the file's content.
    #[must_use]
    pub(crate) fn at_offset(file: &Path, text: &str, offset: usize, message: String) -> Self {
        let (line, column) = line_and_column(text, offset);
        Self {
            file: file.to_owned(),
            line,
            column,
            message,
        }
    }

    /// A file that could not be read.
    #[must_use]
    pub(crate) fn unreadable(file: &Path, err: &impl std::fmt::Display) -> Self {
        Self {
            file: file.to_owned(),
            line: 1,
            column: 1,
            message: format!("cannot read it: {err}"),
        }
    }

    /// The text of a file of settings or processes: a regular file of at most
    /// [`crate::paths::MAX_SETTINGS_BYTES`] (never a device or a FIFO, which could be endless or
    /// wait forever), in UTF-8; a byte that is not names its line and column.
    pub(crate) fn read_text(file: &Path) -> Result<String, Self> {
        let bytes = crate::paths::read_regular_file(file, crate::paths::MAX_SETTINGS_BYTES)
            .map_err(|err| Self::unreadable(file, &err))?;
        String::from_utf8(bytes).map_err(|err| {
            let valid = err.utf8_error().valid_up_to();
            let bytes = err.as_bytes();
            let text = String::from_utf8_lossy(&bytes[..valid]);
            let bad = bytes[valid];
            Self::at_offset(
                file,
                &text,
                valid,
                format!("the byte 0x{bad:02x} is not UTF-8: save the file as UTF-8"),
            )
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    processes: BTreeMap<Spanned<String>, Spanned<ProcessModel>>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessModel {
    cmd: Spanned<String>,
    cwd: Option<Spanned<PathBuf>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default = "yes")]
    autostart: bool,
    #[serde(default)]
    restart: Restart,
    restart_limit: Option<u32>,
    /// Seconds before the first restart.
    backoff: Option<Spanned<f64>>,
    ready: Option<Spanned<String>>,
    #[serde(default)]
    after: Vec<Spanned<String>>,
}

impl Project {
    /// The project of folder `dir`: its `oino.toml`, else its `Procfile`; `None` with neither.
    pub fn find(dir: &Path) -> Result<Option<Self>, ProjectError> {
        for name in [PROJECT_FILE, PROCFILE] {
            let file = dir.join(name);
            if file.is_file() {
                return Self::load(&file).map(Some);
            }
        }
        Ok(None)
    }

    /// Reads and checks `file` (a Procfile when it is named so, else TOML).
    pub fn load(file: &Path) -> Result<Self, ProjectError> {
        // One project, however its path is written (`..`, a link): the server keys it by this.
        let file = std::fs::canonicalize(file)
            .or_else(|_| std::path::absolute(file))
            .unwrap_or_else(|_| file.to_owned());
        let text = FileError::read_text(&file)?;
        let dir = file.parent().unwrap_or(Path::new("/")).to_owned();
        let processes = if file.file_name().is_some_and(|name| name == PROCFILE) {
            parse_procfile(&text, &dir).map_err(|(line, column, message)| ProjectError {
                file: file.clone(),
                line,
                column,
                message,
            })?
        } else {
            parse_toml(&text, &dir)
                .map_err(|(offset, message)| FileError::at_offset(&file, &text, offset, message))?
        };
        Ok(Self { file, processes })
    }
}

impl Project {
    /// Checks a project that came from elsewhere (a client) as [`Project::load`] checked it:
    /// names, patterns, and what `after` names.
    pub fn check(&self) -> Result<(), String> {
        for process in &self.processes {
            crate::core::tasks::validate_name(&process.name).map_err(|err| err.to_string())?;
            if let Some(ready) = &process.ready {
                regex::Regex::new(ready).map_err(|err| {
                    format!("{}: ready is not a regular expression: {err}", process.name)
                })?;
            }
            if let Some(after) = process
                .after
                .iter()
                .find(|after| !self.processes.iter().any(|other| &other.name == *after))
            {
                return Err(format!(
                    "{}: after names `{after}`, which is no process",
                    process.name
                ));
            }
        }
        Ok(())
    }
}

/// Line and column (from 1, in characters) of byte `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |start| start.chars().count())
        + 1;
    (line, column)
}

/// A mistake at a byte offset.
type Mistake = (usize, String);

fn parse_toml(text: &str, dir: &Path) -> Result<Vec<ProjectProcess>, Mistake> {
    let model: FileModel = toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start);
        (
            offset,
            format!(
                "{} (expected: [processes.NAME] tables with cmd, and optionally cwd, env, \
                 autostart, restart, restart_limit, backoff, ready, after)",
                err.message().trim_end()
            ),
        )
    })?;
    if model.processes.is_empty() {
        return Err((
            0,
            "no processes: add a [processes.NAME] table with cmd".into(),
        ));
    }
    let names: Vec<&str> = model
        .processes
        .keys()
        .map(|name| name.get_ref().as_str())
        .collect();
    let processes = model
        .processes
        .iter()
        .map(|(name, process)| checked(name, process.get_ref(), &names, dir))
        .collect::<Result<Vec<_>, _>>()?;
    let spans: HashMap<&str, usize> = model
        .processes
        .keys()
        .map(|name| (name.get_ref().as_str(), name.span().start))
        .collect();
    in_start_order(processes).map_err(|cycle| {
        let at = spans.get(cycle[0].as_str()).copied().unwrap_or(0);
        (
            at,
            format!(
                "these processes wait for each other, so none could start: {}",
                cycle.join(" -> ")
            ),
        )
    })
}

/// One process of the file, checked.
fn checked(
    name: &Spanned<String>,
    process: &ProcessModel,
    names: &[&str],
    dir: &Path,
) -> Result<ProjectProcess, Mistake> {
    crate::core::tasks::validate_name(name.get_ref())
        .map_err(|err| (name.span().start, format!("{err}")))?;
    if process.cmd.get_ref().trim().is_empty() {
        return Err((
            process.cmd.span().start,
            "cmd is empty: give a command".into(),
        ));
    }
    if let Some(why) = command_refusal(process.cmd.get_ref()) {
        return Err((process.cmd.span().start, why));
    }
    if let Some(why) = variables_refusal(&process.env) {
        return Err((name.span().start, format!("env: {why}")));
    }
    if let Some(ready) = &process.ready {
        regex::Regex::new(ready.get_ref()).map_err(|err| {
            (
                ready.span().start,
                format!("ready is not a regular expression: {err}"),
            )
        })?;
    }
    if let Some(after) = process
        .after
        .iter()
        .find(|after| !names.contains(&after.get_ref().as_str()))
    {
        return Err((
            after.span().start,
            format!(
                "after names `{}`, which is no process of this file (they are: {})",
                after.get_ref(),
                names.join(", ")
            ),
        ));
    }
    let cwd = process.checked_cwd(name, dir)?;
    let backoff_ms = process.backoff_ms()?;
    Ok(ProjectProcess {
        name: name.get_ref().clone(),
        cmd: process.cmd.get_ref().clone(),
        cwd,
        env: process
            .env
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
        autostart: process.autostart,
        restart: process.restart,
        restart_limit: process.restart_limit.unwrap_or(DEFAULT_RESTART_LIMIT),
        backoff_ms,
        ready: process.ready.as_ref().map(|ready| ready.get_ref().clone()),
        after: process
            .after
            .iter()
            .map(|after| after.get_ref().clone())
            .collect(),
    })
}

impl ProcessModel {
    /// Its folder: `cwd` within the file's folder `dir`, else `dir`; it must be there (a mistake
    /// without `cwd` is shown at the process's `name`).
    fn checked_cwd(&self, name: &Spanned<String>, dir: &Path) -> Result<PathBuf, Mistake> {
        let cwd = self
            .cwd
            .as_ref()
            .map_or_else(|| dir.to_owned(), |cwd| dir.join(cwd.get_ref()));
        if !cwd.is_dir() {
            let at = self
                .cwd
                .as_ref()
                .map_or(name.span().start, |cwd| cwd.span().start);
            return Err((at, format!("cwd {} is no folder", cwd.display())));
        }
        Ok(cwd)
    }

    /// The first wait before a restart, from `backoff` in seconds, at most [`MAX_BACKOFF_MS`].
    fn backoff_ms(&self) -> Result<u64, Mistake> {
        match &self.backoff {
            None => Ok(DEFAULT_BACKOFF_MS),
            Some(seconds) if seconds.get_ref().is_finite() && *seconds.get_ref() >= 0.0 => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let ms = (seconds.get_ref() * 1000.0).min(30_000.0) as u64;
                Ok(ms)
            }
            Some(seconds) => Err((
                seconds.span().start,
                "backoff is seconds: a number, 0 or more".into(),
            )),
        }
    }
}

/// `name: command` lines; `#` comments and blank lines are skipped. A mistake is (line, column,
/// message).
fn parse_procfile(text: &str, dir: &Path) -> Result<Vec<ProjectProcess>, (usize, usize, String)> {
    let mut processes: Vec<ProjectProcess> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((name, cmd)) = line.split_once(':') else {
            return Err((
                number,
                1,
                "expected `name: command` (a Procfile line)".into(),
            ));
        };
        let name = name.trim();
        crate::core::tasks::validate_name(name).map_err(|err| (number, 1, format!("{err}")))?;
        if processes.iter().any(|process| process.name == name) {
            return Err((number, 1, format!("`{name}` is named twice")));
        }
        if cmd.trim().is_empty() {
            return Err((
                number,
                line.find(':').map_or(1, |at| at + 2),
                "expected a command after the colon".into(),
            ));
        }
        if let Some(why) = command_refusal(cmd) {
            return Err((number, line.find(':').map_or(1, |at| at + 2), why));
        }
        processes.push(ProjectProcess {
            name: name.to_owned(),
            cmd: cmd.trim().to_owned(),
            cwd: dir.to_owned(),
            env: Vec::new(),
            // Heroku runs `release` once per deploy (migrations): never by merely opening oino.
            autostart: name != "release",
            restart: Restart::Never,
            restart_limit: DEFAULT_RESTART_LIMIT,
            backoff_ms: DEFAULT_BACKOFF_MS,
            ready: None,
            after: Vec::new(),
        });
    }
    if processes.is_empty() {
        return Err((1, 1, "no processes: add `name: command` lines".into()));
    }
    Ok(processes)
}

/// Why the server would refuse to run `cmd` (a NUL byte, longer than `bash -c` takes), if it
/// would: the file is refused at once, with the place, rather than a process that never runs.
fn command_refusal(cmd: &str) -> Option<String> {
    if cmd.len() > crate::core::MAX_COMMAND_BYTES {
        return Some(crate::core::CoreError::CommandTooLong(cmd.len()).to_string());
    }
    let args = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new(cmd)];
    crate::pty::exec::check(&args, std::iter::empty())
        .err()
        .map(|err| err.to_string())
}

/// Why the server would refuse a process's own variables (a name that is empty or holds `=`
/// or NUL, a NUL in a value, one too long), if it would.
fn variables_refusal(env: &BTreeMap<String, String>) -> Option<String> {
    let args = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new("")];
    let env = env
        .iter()
        .map(|(name, value)| (OsStr::new(name.as_str()), OsStr::new(value.as_str())));
    crate::pty::exec::check(&args, env)
        .err()
        .map(|err| err.to_string())
}

/// The processes ordered so that each comes after those it waits for (else in the order given),
/// or the names of a cycle. Linear in the processes and their waits (Kahn's order, taking the
/// first ready one as given each time), so that a long chain of `after` loads at once.
fn in_start_order(processes: Vec<ProjectProcess>) -> Result<Vec<ProjectProcess>, Vec<String>> {
    let at: HashMap<&str, usize> = processes
        .iter()
        .enumerate()
        .map(|(index, process)| (process.name.as_str(), index))
        .collect();
    // For each process, how many waits are not met yet, and who waits for it.
    let mut unmet = vec![0_usize; processes.len()];
    let mut waited_by: Vec<Vec<usize>> = vec![Vec::new(); processes.len()];
    for (index, process) in processes.iter().enumerate() {
        for after in &process.after {
            if let Some(&other) = at.get(after.as_str()) {
                unmet[index] += 1;
                waited_by[other].push(index);
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..processes.len())
        .filter(|&index| unmet[index] == 0)
        .collect();
    let mut order = Vec::with_capacity(processes.len());
    while let Some(index) = ready.pop_first() {
        order.push(index);
        for &waiter in &waited_by[index] {
            unmet[waiter] -= 1;
            if unmet[waiter] == 0 {
                ready.insert(waiter);
            }
        }
    }
    if order.len() < processes.len() {
        return Err(a_cycle(&processes, &at, &unmet));
    }
    let mut slots: Vec<Option<ProjectProcess>> = processes.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .filter_map(|index| slots[index].take())
        .collect())
}

/// The names of a cycle among the processes whose waits are not all met: every one of them
/// waits for another of them, so following the waits from the first comes back to a name.
fn a_cycle(
    processes: &[ProjectProcess],
    at: &HashMap<&str, usize>,
    unmet: &[usize],
) -> Vec<String> {
    let stuck = |index: &usize| unmet[*index] > 0;
    let Some(mut current) = (0..processes.len()).find(stuck) else {
        return Vec::new();
    };
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut path: Vec<usize> = Vec::new();
    loop {
        if let Some(&start) = seen_at.get(&current) {
            path.push(current);
            return path[start..]
                .iter()
                .map(|&index| processes[index].name.clone())
                .collect();
        }
        seen_at.insert(current, path.len());
        path.push(current);
        let next = processes[current]
            .after
            .iter()
            .filter_map(|after| at.get(after.as_str()).copied())
            .find(stuck);
        match next {
            Some(next) => current = next,
            // Cannot be: a stuck process waits for a stuck one.
            None => return vec![processes[current].name.clone()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn written(name: &str, text: &str) -> (PathBuf, Result<Project, ProjectError>) {
        let dir = std::env::temp_dir().join(format!(
            "oino-project-{}-{}",
            std::process::id(),
            name.replace('/', "-")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        (dir, Project::load(&file))
    }

    #[test]
    fn a_project_file_is_read_in_start_order() {
        let web =
            std::env::temp_dir().join(format!("oino-project-{}-oino.toml/web", std::process::id()));
        std::fs::create_dir_all(&web).unwrap();
        let (dir, loaded) = written(
            "oino.toml",
            r#"
[processes.web]
cmd = "npm run dev"
cwd = "web"
env = { PORT = "3000" }
after = ["db", "cache"]
restart = "on-failure"
backoff = 0.5

[processes.db]
cmd = "postgres"
ready = "accept connections"

[processes.cache]
cmd = "redis-server"
autostart = false
restart = "always"
restart_limit = 2
"#,
        );
        let project = loaded.unwrap();
        let names: Vec<&str> = project.processes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["cache", "db", "web"]);
        let web = &project.processes[2];
        assert_eq!(web.cwd, dir.join("web"));
        assert_eq!(web.env, [("PORT".to_owned(), "3000".to_owned())]);
        assert_eq!((web.restart, web.backoff_ms), (Restart::OnFailure, 500));
        assert_eq!(web.restart_limit, DEFAULT_RESTART_LIMIT);
        let cache = &project.processes[0];
        assert_eq!((cache.autostart, cache.restart_limit), (false, 2));
        assert_eq!(
            project.processes[1].ready.as_deref(),
            Some("accept connections")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn mistakes_are_refused_with_where_and_what_was_expected() {
        let cases = [
            ("[processes.web]\ncmd = 3\n", 2, 7, "invalid type"),
            (
                "[processes.web]\ncmd = \"x\"\ncolor = \"red\"\n",
                3,
                1,
                "unknown field `color`",
            ),
            (
                "[processes.web]\ncmd = \"x\"\nafter = [\"db\"]\n",
                3,
                10,
                "which is no process",
            ),
            (
                "[processes.web]\ncmd = \"x\"\nready = \"(\"\n",
                3,
                9,
                "not a regular expression",
            ),
            (
                "[processes.web]\ncmd = \"x\"\nrestart = \"sometimes\"\n",
                3,
                11,
                "unknown variant",
            ),
            (
                "[processes.\"t3\"]\ncmd = \"x\"\n",
                1,
                12,
                "looks like a task or call id",
            ),
            ("[processes.web]\ncmd = \" \"\n", 2, 7, "cmd is empty"),
            (
                "[processes.web]\ncmd = \"x\"\ncwd = \"nowhere\"\n",
                3,
                7,
                "is no folder",
            ),
            ("[processes.web\ncmd = \"x\"\n", 1, 15, ""),
            (
                "[processes.a]\ncmd = \"x\"\nafter = [\"b\"]\n[processes.b]\ncmd = \"y\"\nafter = [\"a\"]\n",
                1,
                12,
                "wait for each other, so none could start: a -> b -> a",
            ),
            ("# nothing\n", 1, 1, "missing field `processes`"),
            // What the server would refuse to run is refused here, with its place.
            (
                "[processes.web]\ncmd = \"a\\u0000b\"\n",
                2,
                7,
                "contains a NUL byte",
            ),
            (
                "[processes.web]\ncmd = \"x\"\nenv = { \"A=B\" = \"1\" }\n",
                1,
                12,
                "env: \"A=B\" cannot name an environment variable",
            ),
            (
                "[processes.web]\ncmd = \"x\"\nenv = { \"\" = \"1\" }\n",
                1,
                12,
                "cannot name an environment variable",
            ),
        ];
        for (index, (text, line, column, message)) in cases.into_iter().enumerate() {
            let (dir, loaded) = written(&format!("case{index}/oino.toml"), text);
            let err = loaded.unwrap_err();
            assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
            assert!(err.message.contains(message), "{text:?}: {err}");
            assert!(
                err.to_string()
                    .starts_with(&format!("{}:{line}:{column}: ", err.file.display()))
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_procfile_is_read_as_foreman_reads_it() {
        let (dir, loaded) = written(
            "Procfile",
            "# the app\nweb: bundle exec rails s -p $PORT\n\nworker:   sidekiq -c 5\nrelease: rake db:migrate\n",
        );
        let project = loaded.unwrap();
        let read: Vec<(&str, &str)> = project
            .processes
            .iter()
            .map(|p| (p.name.as_str(), p.cmd.as_str()))
            .collect();
        assert_eq!(
            read,
            [
                ("web", "bundle exec rails s -p $PORT"),
                ("worker", "sidekiq -c 5"),
                ("release", "rake db:migrate")
            ]
        );
        assert!(project.processes.iter().all(|p| p.cwd == dir));
        // Heroku's release step (migrations) never starts by itself.
        let autostart: Vec<bool> = project.processes.iter().map(|p| p.autostart).collect();
        assert_eq!(autostart, [true, true, false]);
        for (text, line, column) in [
            ("web: a\nno colon here\n", 2, 1),
            ("web:\n", 1, 5),
            ("web: a\nweb: b\n", 2, 1),
            ("\n# only a comment\n", 1, 1),
        ] {
            let (dir, loaded) = written(&format!("p{line}{column}/Procfile"), text);
            let err = loaded.unwrap_err();
            assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
            std::fs::remove_dir_all(dir).unwrap();
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_folder_has_its_oino_toml_else_its_procfile_else_nothing() {
        let dir = std::env::temp_dir().join(format!("oino-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(Project::find(&dir), Ok(None));
        std::fs::write(dir.join(PROCFILE), "worker: sleep 1\n").unwrap();
        assert_eq!(
            Project::find(&dir).unwrap().unwrap().processes[0].name,
            "worker"
        );
        std::fs::write(dir.join(PROJECT_FILE), "[processes.web]\ncmd = \"x\"\n").unwrap();
        assert_eq!(
            Project::find(&dir).unwrap().unwrap().processes[0].name,
            "web"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn named(name: &str, after: &[&str]) -> ProjectProcess {
        ProjectProcess {
            name: name.into(),
            cmd: "x".into(),
            cwd: PathBuf::from("/"),
            env: Vec::new(),
            autostart: true,
            restart: Restart::Never,
            restart_limit: DEFAULT_RESTART_LIMIT,
            backoff_ms: DEFAULT_BACKOFF_MS,
            ready: None,
            after: after.iter().map(|&after| after.to_owned()).collect(),
        }
    }

    /// The order as it was first written (quadratic, and cubic on a chain written backwards):
    /// the reference the linear one must agree with.
    fn reference_order(mut left: Vec<ProjectProcess>) -> Result<Vec<String>, Vec<String>> {
        let mut ordered: Vec<String> = Vec::new();
        while !left.is_empty() {
            let placed = |name: &String| ordered.contains(name);
            if let Some(next) = left
                .iter()
                .position(|process| process.after.iter().all(placed))
            {
                ordered.push(left.remove(next).name);
            } else {
                let mut cycle = vec![left[0].name.clone()];
                loop {
                    let current = cycle.last().cloned().unwrap_or_default();
                    let next = left
                        .iter()
                        .find(|process| process.name == current)
                        .and_then(|process| process.after.iter().find(|after| !placed(after)))
                        .cloned()
                        .unwrap_or_default();
                    if let Some(start) = cycle.iter().position(|name| *name == next) {
                        cycle.push(next);
                        return Err(cycle.split_off(start));
                    }
                    cycle.push(next);
                }
            }
        }
        Ok(ordered)
    }

    fn names(order: Result<Vec<ProjectProcess>, Vec<String>>) -> Result<Vec<String>, Vec<String>> {
        order.map(|processes| processes.into_iter().map(|process| process.name).collect())
    }

    #[test]
    fn a_long_chain_written_backwards_is_ordered_and_a_cycle_is_named() {
        let count = 4000;
        // Written backwards: each waits for the one after it, the last one first to start.
        let chain: Vec<ProjectProcess> = (0..count)
            .map(|n| {
                let before = format!("p{}", n + 1);
                let after: &[&str] = if n + 1 < count { &[&before] } else { &[] };
                named(&format!("p{n}"), after)
            })
            .collect();
        let order = names(in_start_order(chain)).expect("no cycle");
        let expected: Vec<String> = (0..count).rev().map(|n| format!("p{n}")).collect();
        assert_eq!(order, expected);

        let cycle = vec![
            named("web", &["api"]),
            named("api", &["db"]),
            named("db", &["web"]),
            named("docs", &[]),
        ];
        assert_eq!(
            names(in_start_order(cycle)),
            Err(vec!["web".into(), "api".into(), "db".into(), "web".into()])
        );
    }

    proptest::proptest! {
        /// On any graph of waits, cycles included, the order (or the cycle named) is the one the
        /// first way of ordering gave.
        #[test]
        fn the_order_is_the_reference_order(waits in proptest::collection::vec(
            proptest::collection::vec(0_usize..7, 0..3), 1..7,
        )) {
            let processes: Vec<ProjectProcess> = waits
                .iter()
                .enumerate()
                .map(|(index, after)| {
                    let after: Vec<String> = after
                        .iter()
                        .filter(|&&other| other < waits.len())
                        .map(|other| format!("p{other}"))
                        .collect();
                    let after: Vec<&str> = after.iter().map(String::as_str).collect();
                    named(&format!("p{index}"), &after)
                })
                .collect();
            proptest::prop_assert_eq!(
                names(in_start_order(processes.clone())),
                reference_order(processes)
            );
        }
    }

    #[test]
    fn a_command_longer_than_bash_takes_is_refused_at_load_in_either_file() {
        let long = "x".repeat(140 * 1024);
        for (name, text, line, column) in [
            (
                "long/oino.toml",
                format!("[processes.web]\ncmd = \"{long}\"\n"),
                2,
                7,
            ),
            ("long/Procfile", format!("web: {long}\n"), 1, 5),
        ] {
            let (dir, loaded) = written(name, &text);
            let err = loaded.unwrap_err();
            assert_eq!((err.line, err.column), (line, column), "{name}: {err}");
            assert!(
                err.message.contains("more than `bash -c` takes"),
                "{name}: {err}"
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
