//! A project file: the processes a project runs, declared once. `oino.toml` in a folder (or a
//! file given with `--config`), else a `process-compose.yaml` (or `.yml`), an `mprocs.yaml`
//! (read by `compose` and `mprocs`), or a `Procfile` (`name: command` lines, as foreman,
//! overmind and honcho read it). A file is checked whole before anything starts: a mistake is
//! refused with its file, line and column and what was expected.
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

use serde::Deserialize;
use toml::Spanned;

use super::env::{Budget, EnvFile, Known};

use super::{
    After, Condition, DEFAULT_BACKOFF_MS, DEFAULT_RESTART_LIMIT, MAX_BACKOFF_MS, MIN_INTERVAL_MS,
    Probe, Probes, Project, ProjectProcess, Restart,
};

/// The project file looked for first.
pub const PROJECT_FILE: &str = "oino.toml";
/// The file looked for when there is no project file.
pub const PROCFILE: &str = "Procfile";
/// process-compose's file, looked for after `oino.toml` (`.yaml`, then `.yml`).
pub const PROCESS_COMPOSE_FILES: [&str; 2] = ["process-compose.yaml", "process-compose.yml"];
/// mprocs's file, looked for after process-compose's.
pub const MPROCS_FILE: &str = "mprocs.yaml";
/// The files a folder's project is looked for in, in this order.
pub const PROJECT_FILES: [&str; 5] = [
    PROJECT_FILE,
    PROCESS_COMPOSE_FILES[0],
    PROCESS_COMPOSE_FILES[1],
    MPROCS_FILE,
    PROCFILE,
];
/// The environment file read beside a project file, when there is one.
pub const DOT_ENV: &str = ".env";

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
        let mut bytes = crate::paths::read_regular_file(file, crate::paths::MAX_SETTINGS_BYTES)
            .map_err(|err| Self::unreadable(file, &err))?;
        // A byte order mark, as editors on Windows write one, is no part of the text.
        if bytes.starts_with(b"\xef\xbb\xbf") {
            bytes.drain(..3);
        }
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
    name: Option<Spanned<String>>,
    #[serde(default)]
    env_file: Vec<Spanned<String>>,
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
    #[serde(default)]
    env_file: Vec<Spanned<String>>,
    #[serde(default = "yes")]
    autostart: bool,
    #[serde(default)]
    restart: Restart,
    restart_limit: Option<u32>,
    /// Seconds before the first restart.
    backoff: Option<Spanned<f64>>,
    ready: Option<Spanned<String>>,
    ready_cmd: Option<Spanned<String>>,
    ready_http: Option<Spanned<String>>,
    ready_interval: Option<Spanned<f64>>,
    ready_timeout: Option<Spanned<f64>>,
    alive_cmd: Option<Spanned<String>>,
    alive_http: Option<Spanned<String>>,
    alive_interval: Option<Spanned<f64>>,
    alive_failures: Option<Spanned<u32>>,
    after: Option<Spanned<toml::Value>>,
}

/// A variable of this process's environment.
fn from_this_process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Project {
    /// The project of folder `dir`: the first of [`PROJECT_FILES`] it has (`oino.toml`,
    /// `process-compose.yaml`, `process-compose.yml`, `mprocs.yaml`, `Procfile`); `None` with
    /// none.
    pub fn find(dir: &Path) -> Result<Option<Self>, ProjectError> {
        for name in PROJECT_FILES {
            let file = dir.join(name);
            if file.is_file() {
                return Self::load(&file).map(Some);
            }
        }
        Ok(None)
    }

    /// Reads and checks `file` (a Procfile when it is named so, YAML when it ends in `.yaml` or
    /// `.yml`, else TOML), `${VAR}` taken from its environment files and this process's
    /// environment.
    pub fn load(file: &Path) -> Result<Self, ProjectError> {
        Self::load_in(file, &from_this_process)
    }

    /// [`Project::load`] in an environment `known` (the one a client started the project in).
    pub(crate) fn load_in(file: &Path, known: Known) -> Result<Self, ProjectError> {
        // Its links looked at as written, before they are resolved: a link of another user's
        // would choose which project runs.
        crate::paths::no_planted_link(file).map_err(|err| FileError::unreadable(file, &err))?;
        // One project, however its path is written (`..`, a link): the server keys it by this.
        let file = std::fs::canonicalize(file)
            .or_else(|_| std::path::absolute(file))
            .unwrap_or_else(|_| file.to_owned());
        let text = FileError::read_text(&file)?;
        let dir = file.parent().unwrap_or(Path::new("/")).to_owned();
        let dot_env = dir.join(DOT_ENV);
        // What reading it builds, however much the file repeats through ${VAR} or aliases.
        let budget = Budget::default();
        let base = if dot_env.is_file() {
            vec![(
                dot_env.clone(),
                super::env::read_file(&dot_env, known, &budget)?,
            )]
        } else {
            Vec::new()
        };
        if file.file_name().is_some_and(|name| name == PROCFILE) {
            let mut processes =
                parse_procfile(&text, &dir).map_err(|(line, column, message)| ProjectError {
                    file: file.clone(),
                    line,
                    column,
                    message,
                })?;
            for process in &mut processes {
                process.env_files = base.iter().map(|(path, _)| path.clone()).collect();
                process.env = base.iter().flat_map(|(_, vars)| vars.clone()).collect();
                budget
                    .spend_on(&process.env)
                    .map_err(|why| FileError::at_offset(&file, &text, 0, why))?;
            }
            let name = Project::name_of_folder(&file);
            return Ok(Self {
                name,
                file,
                processes,
                ignored: Vec::new(),
            });
        }
        if file
            .extension()
            .is_some_and(|extension| extension == "yaml" || extension == "yml")
        {
            return super::yaml::read(&file, &text, base, known, &budget);
        }
        let at =
            |offset: usize, message: String| FileError::at_offset(&file, &text, offset, message);
        let model: FileModel = toml::from_str(&text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            at(
                offset,
                format!(
                    "{} (expected: [processes.NAME] tables with cmd, and optionally cwd, env, \
                     env_file, autostart, restart, restart_limit, backoff, ready, ready_cmd, \
                     ready_http, ready_interval, ready_timeout, alive_cmd, alive_http, \
                     alive_interval, alive_failures, after; name and env_file at the top)",
                    crate::spelling::unknown_key(err.message().trim_end())
                ),
            )
        })?;
        let mut base = base;
        base.extend(env_files(&model.env_file, &dir, &at, known, &budget)?);
        let reading = Reading {
            dir: &dir,
            at: &at,
            known,
            base: &base,
            budget: &budget,
        };
        let processes = reading.processes(&model)?;
        let name = model
            .name
            .map_or_else(|| Project::name_of_folder(&file), Spanned::into_inner);
        Ok(Self {
            name,
            file,
            processes,
            ignored: Vec::new(),
        })
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
                .after_names()
                .find(|after| self.process(after).is_none())
            {
                return Err(format!(
                    "{}: after names `{after}`, which is no process",
                    process.name
                ));
            }
        }
        super::order::in_start_order(self.processes.clone()).map_err(|cycle| {
            format!(
                "these processes wait for each other, so none could start: {}",
                cycle.join(" -> ")
            )
        })?;
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

/// The environment files `names` (within `dir`), each with its variables: one that is missing
/// is a mistake at its name.
fn env_files(
    names: &[Spanned<String>],
    dir: &Path,
    at: &dyn Fn(usize, String) -> FileError,
    known: Known,
    budget: &Budget,
) -> Result<Vec<EnvFile>, FileError> {
    names
        .iter()
        .map(|name| {
            let path = dir.join(name.get_ref());
            if !path.is_file() {
                return Err(at(
                    name.span().start,
                    format!("env_file {} is no file", path.display()),
                ));
            }
            Ok((path.clone(), super::env::read_file(&path, known, budget)?))
        })
        .collect()
}

/// What reading an `oino.toml` needs beside its processes.
struct Reading<'a> {
    dir: &'a Path,
    at: &'a dyn Fn(usize, String) -> FileError,
    known: Known<'a>,
    /// The environment files of every process (`.env`, the top `env_file`), with their variables.
    base: &'a [EnvFile],
    /// What reading the file built so far.
    budget: &'a Budget,
}

impl Reading<'_> {
    /// The processes of `model`, in the file's order, checked (a cycle of waits included).
    fn processes(&self, model: &FileModel) -> Result<Vec<ProjectProcess>, FileError> {
        if model.processes.is_empty() {
            return Err((self.at)(
                0,
                "no processes: add a [processes.NAME] table with cmd".into(),
            ));
        }
        let mut written: Vec<(&Spanned<String>, &ProcessModel)> = model
            .processes
            .iter()
            .map(|(name, process)| (name, process.get_ref()))
            .collect();
        written.sort_by_key(|(name, _)| name.span().start);
        let names: Vec<&str> = written
            .iter()
            .map(|(name, _)| name.get_ref().as_str())
            .collect();
        let processes = written
            .iter()
            .map(|(name, process)| self.checked(name, process, &names))
            .collect::<Result<Vec<_>, _>>()?;
        let spans: HashMap<&str, usize> = written
            .iter()
            .map(|(name, _)| (name.get_ref().as_str(), name.span().start))
            .collect();
        super::order::in_start_order(processes.clone()).map_err(|cycle| {
            let offset = spans.get(cycle[0].as_str()).copied().unwrap_or(0);
            (self.at)(
                offset,
                format!(
                    "these processes wait for each other, so none could start: {}",
                    cycle.join(" -> ")
                ),
            )
        })?;
        Ok(processes)
    }

    /// One process of the file, checked.
    fn checked(
        &self,
        name: &Spanned<String>,
        process: &ProcessModel,
        names: &[&str],
    ) -> Result<ProjectProcess, FileError> {
        let mistake = |offset: usize, message: String| (self.at)(offset, message);
        crate::core::tasks::validate_name(name.get_ref())
            .map_err(|err| mistake(name.span().start, format!("{err}")))?;
        let mut files: Vec<EnvFile> = self.base.to_vec();
        files.extend(env_files(
            &process.env_file,
            self.dir,
            self.at,
            self.known,
            self.budget,
        )?);
        let mut env = super::env::of_files(&files);
        self.budget
            .spend_on(&env)
            .map_err(|why| mistake(name.span().start, why))?;
        let known = |wanted: &str| super::env::value_of(&env, wanted, self.known);
        let own: Vec<(String, String)> = process
            .env
            .iter()
            .map(|(var, value)| {
                let expanded = super::env::expand(value, &known, self.budget)
                    .map_err(|why| mistake(name.span().start, format!("env {var}: {why}")))?;
                Ok((var.clone(), expanded))
            })
            .collect::<Result<_, FileError>>()?;
        let pairs = process
            .env
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        if let Some(why) = variables_refusal(pairs) {
            return Err(mistake(name.span().start, format!("env: {why}")));
        }
        for (name, value) in own {
            super::env::set(&mut env, &name, value);
        }
        let known = |wanted: &str| super::env::value_of(&env, wanted, self.known);
        let cmd = super::env::expand(process.cmd.get_ref(), &known, self.budget)
            .map_err(|why| mistake(process.cmd.span().start, why))?;
        if cmd.trim().is_empty() {
            return Err(mistake(
                process.cmd.span().start,
                "cmd is empty: give a command".into(),
            ));
        }
        if let Some(why) = command_refusal(&cmd) {
            return Err(mistake(process.cmd.span().start, why));
        }
        if let Some(ready) = &process.ready {
            regex::Regex::new(ready.get_ref()).map_err(|err| {
                mistake(
                    ready.span().start,
                    format!("ready is not a regular expression: {err}"),
                )
            })?;
        }
        let after = self.after(process, names)?;
        let probes = self.probes(name, process, &known)?;
        let mut checked = ProjectProcess::new(name.get_ref(), &cmd, self.cwd(name, process)?);
        checked.env = env;
        checked.env_files = files.into_iter().map(|(path, _)| path).collect();
        checked.autostart = process.autostart;
        checked.restart = process.restart;
        checked.restart_limit = process.restart_limit.unwrap_or(DEFAULT_RESTART_LIMIT);
        checked.backoff_ms = seconds(process.backoff.as_ref(), "backoff", self.at)?
            .map_or(DEFAULT_BACKOFF_MS, |ms| ms.min(MAX_BACKOFF_MS));
        checked.ready = process.ready.as_ref().map(|ready| ready.get_ref().clone());
        checked.probes = probes;
        checked.after = after;
        Ok(checked)
    }

    /// Its folder: `cwd` within the file's folder, else that folder; it must be there (a mistake
    /// without `cwd` is shown at the process's `name`).
    fn cwd(&self, name: &Spanned<String>, process: &ProcessModel) -> Result<PathBuf, FileError> {
        let cwd = process
            .cwd
            .as_ref()
            .map_or_else(|| self.dir.to_owned(), |cwd| self.dir.join(cwd.get_ref()));
        if !cwd.is_dir() {
            let offset = process
                .cwd
                .as_ref()
                .map_or(name.span().start, |cwd| cwd.span().start);
            return Err((self.at)(
                offset,
                format!("cwd {} is no folder", cwd.display()),
            ));
        }
        Ok(cwd)
    }

    /// What it waits for: a list of names (each ready), or a table of name = condition.
    fn after(&self, process: &ProcessModel, names: &[&str]) -> Result<Vec<After>, FileError> {
        let Some(after) = &process.after else {
            return Ok(Vec::new());
        };
        let offset = after.span().start;
        let expected = || {
            (self.at)(
                offset,
                "after is a list of names, or a table of name = condition (ready, started, \
                 succeeded, ended)"
                    .into(),
            )
        };
        let list: Vec<After> = match after.get_ref() {
            toml::Value::Array(items) => items
                .iter()
                .map(|item| item.as_str().map(After::ready).ok_or_else(expected))
                .collect::<Result<_, _>>()?,
            toml::Value::Table(table) => table
                .iter()
                .map(|(name, condition)| {
                    let condition = condition.as_str().ok_or_else(expected)?;
                    let condition = Condition::from_word(condition).ok_or_else(|| {
                        (self.at)(
                            offset,
                            format!(
                                "after: `{condition}` is no condition (they are: ready, \
                                 started, succeeded, ended)"
                            ),
                        )
                    })?;
                    Ok(After {
                        name: name.clone(),
                        condition,
                    })
                })
                .collect::<Result<_, FileError>>()?,
            _ => return Err(expected()),
        };
        if let Some(unknown) = list
            .iter()
            .find(|after| !names.contains(&after.name.as_str()))
        {
            return Err((self.at)(
                offset,
                format!(
                    "after names `{}`, which is no process of this file (they are: {})",
                    unknown.name,
                    names.join(", ")
                ),
            ));
        }
        Ok(list)
    }

    /// Its readiness and liveness probes, checked.
    fn probes(
        &self,
        name: &Spanned<String>,
        process: &ProcessModel,
        known: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Probes, FileError> {
        let ready_ways = [
            process.ready.is_some(),
            process.ready_cmd.is_some(),
            process.ready_http.is_some(),
        ];
        if ready_ways.iter().filter(|given| **given).count() > 1 {
            return Err((self.at)(
                name.span().start,
                "give one way to tell it is ready: ready (a line), ready_cmd or ready_http".into(),
            ));
        }
        if process.alive_cmd.is_some() && process.alive_http.is_some() {
            return Err((self.at)(
                name.span().start,
                "give one liveness probe: alive_cmd or alive_http".into(),
            ));
        }
        let ready = self.probe(
            process.ready_cmd.as_ref(),
            process.ready_http.as_ref(),
            known,
        )?;
        let alive = self.probe(
            process.alive_cmd.as_ref(),
            process.alive_http.as_ref(),
            known,
        )?;
        let defaults = Probes::default();
        Ok(Probes {
            ready,
            ready_interval_ms: interval(
                process.ready_interval.as_ref(),
                "ready_interval",
                self.at,
            )?
            .unwrap_or(defaults.ready_interval_ms),
            ready_timeout_ms: seconds(process.ready_timeout.as_ref(), "ready_timeout", self.at)?,
            alive,
            alive_interval_ms: interval(
                process.alive_interval.as_ref(),
                "alive_interval",
                self.at,
            )?
            .unwrap_or(defaults.alive_interval_ms),
            alive_failures: match &process.alive_failures {
                None => defaults.alive_failures,
                Some(failures) if *failures.get_ref() == 0 => {
                    return Err((self.at)(
                        failures.span().start,
                        "alive_failures is at least 1: the failures in a row that restart it"
                            .into(),
                    ));
                }
                Some(failures) => *failures.get_ref(),
            },
        })
    }

    /// A probe by command or by address, checked as a command or an `http://` address.
    fn probe(
        &self,
        cmd: Option<&Spanned<String>>,
        http: Option<&Spanned<String>>,
        known: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Probe>, FileError> {
        if let Some(cmd) = cmd {
            let expanded = super::env::expand(cmd.get_ref(), known, self.budget)
                .map_err(|why| (self.at)(cmd.span().start, why))?;
            if expanded.trim().is_empty() {
                return Err((self.at)(
                    cmd.span().start,
                    "the probe's command is empty".into(),
                ));
            }
            if let Some(why) = command_refusal(&expanded) {
                return Err((self.at)(cmd.span().start, why));
            }
            return Ok(Some(Probe::Cmd(expanded)));
        }
        if let Some(http) = http {
            let url = super::env::expand(http.get_ref(), known, self.budget)
                .map_err(|why| (self.at)(http.span().start, why))?;
            if let Err(why) = super::probe::check_address(&url) {
                return Err((self.at)(http.span().start, why));
            }
            return Ok(Some(Probe::Http(url)));
        }
        Ok(None)
    }
}

/// How often a probe is tried, in ms: seconds, at least [`MIN_INTERVAL_MS`] (each try is a shell
/// or a connection).
fn interval(
    value: Option<&Spanned<f64>>,
    what: &str,
    at: &dyn Fn(usize, String) -> FileError,
) -> Result<Option<u64>, FileError> {
    match (seconds(value, what, at)?, value) {
        (Some(ms), Some(written)) if ms < MIN_INTERVAL_MS => Err(at(
            written.span().start,
            format!(
                "{what} is at least 0.{} s: a probe is tried at most ten times a second",
                MIN_INTERVAL_MS / 100
            ),
        )),
        (ms, _) => Ok(ms),
    }
}

/// A time given in seconds, in ms: a number, 0 or more.
fn seconds(
    value: Option<&Spanned<f64>>,
    what: &str,
    at: &dyn Fn(usize, String) -> FileError,
) -> Result<Option<u64>, FileError> {
    match value {
        None => Ok(None),
        Some(seconds) if seconds.get_ref().is_finite() && *seconds.get_ref() >= 0.0 => {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ms = (seconds.get_ref() * 1000.0).min(86_400_000.0) as u64;
            Ok(Some(ms))
        }
        Some(seconds) => Err(at(
            seconds.span().start,
            format!("{what} is seconds: a number, 0 or more"),
        )),
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
        let mut process = ProjectProcess::new(name, cmd.trim(), dir.to_owned());
        // Heroku runs `release` once per deploy (migrations): never by merely opening oino.
        process.autostart = name != "release";
        processes.push(process);
    }
    if processes.is_empty() {
        return Err((1, 1, "no processes: add `name: command` lines".into()));
    }
    Ok(processes)
}

/// Why the server would refuse to run `cmd` (a NUL byte, longer than `bash -c` takes), if it
/// would: the file is refused at once, with the place, rather than a process that never runs.
pub(super) fn command_refusal(cmd: &str) -> Option<String> {
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
pub(super) fn variables_refusal<'a>(
    env: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let args = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new("")];
    let env = env.map(|(name, value)| (OsStr::new(name), OsStr::new(value)));
    crate::pty::exec::check(&args, env)
        .err()
        .map(|err| err.to_string())
}

#[cfg(test)]
mod tests;
