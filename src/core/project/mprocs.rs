//! An `mprocs.yaml` read as an oino project, so that a project that has one runs under oino as it
//! is:
//!
//! ```yaml
//! procs:
//!   server:
//!     shell: npm run dev
//!     cwd: <CONFIG_DIR>/web
//!     env: { PORT: "3000" }
//!   tests:
//!     cmd: ["cargo", "watch", "-x", "test"]
//!     autostart: false
//!     autorestart: true
//! ```
//!
//! Taken: `procs` at the top; of a process `shell` (a command line) or `cmd` (a program and its
//! arguments, quoted into a bash command line), `cwd` (within the file's folder, which
//! `<CONFIG_DIR>` names), `env`, `autostart` and `autorestart` (restarted whenever it ends, else
//! never). A process written as text is its `shell`, as a list its `cmd`; `$select: os` picks
//! this system's value (else `$else`), as mprocs does. Anything else is listed in
//! [`super::Project::ignored`] with its place, and so is a variable set to `~` (mprocs unsets it;
//! oino only sets variables).
//!
//! `.env` beside the file is read, as for `oino.toml`. `${VAR}` is not expanded, since mprocs does
//! not: a `shell` line is still expanded by bash when it runs, with the same variables, while
//! `cmd` arguments and `env` values stay as written, as mprocs passes them.

use super::env::set;
use super::yaml::{Context, Entry, Node};
use super::{FileError, ProjectProcess, Restart};

/// The processes of an mprocs file whose top mapping is `top`, in the file's order.
pub(super) fn processes(cx: &Context, top: &[Entry]) -> Result<Vec<ProjectProcess>, FileError> {
    let mut listed = None;
    for entry in top {
        if entry.key == "procs" {
            listed = Some(entry);
        } else {
            cx.yaml.ignore(entry.at, entry.key);
        }
    }
    let Some(listed) = listed else {
        return Err(cx
            .yaml
            .at_start("no processes: give procs: NAME: shell: ..."));
    };
    let mut entries = Vec::new();
    for entry in cx.yaml.mapping(listed.value, "procs")? {
        let value = select(cx, entry.value)?;
        if value.data.is_null() {
            cx.yaml.ignore(
                entry.at,
                &format!("{}: ~ (mprocs leaves it out)", entry.key),
            );
            continue;
        }
        entries.push(Entry { value, ..entry });
    }
    if entries.is_empty() {
        return Err(cx
            .yaml
            .at(listed.at, "no processes: give procs: NAME: shell: ..."));
    }
    cx.names(&entries)?;
    entries.iter().map(|entry| process(cx, entry)).collect()
}

/// The keys of a process that oino takes, as written.
#[derive(Default)]
struct Written<'n> {
    shell: Option<Node<'n>>,
    cmd: Option<Node<'n>>,
    cwd: Option<Node<'n>>,
    env: Option<Node<'n>>,
    autostart: Option<Node<'n>>,
    autorestart: Option<Node<'n>>,
}

/// The process `entry`, checked.
fn process(cx: &Context, entry: &Entry) -> Result<ProjectProcess, FileError> {
    let yaml = &cx.yaml;
    let written = written(cx, entry)?;
    let (cmd, at) = match (written.shell, written.cmd) {
        (Some(_), Some(_)) => {
            return Err(yaml.at(entry.at, "give one of shell and cmd"));
        }
        (Some(shell), None) => (yaml.text(shell, "shell")?.to_owned(), shell),
        (None, Some(cmd)) => (command_line(cx, cmd)?, cmd),
        (None, None) => {
            return Err(yaml.at(
                entry.at,
                format!(
                    "{} has no command: give shell: ... or cmd: [...]",
                    entry.key
                ),
            ));
        }
    };
    let cmd = cx.command(cmd, at)?;
    let cwd = match written.cwd {
        Some(node) => {
            let cwd = yaml.text(node, "cwd")?;
            let within = cwd
                .strip_prefix("<CONFIG_DIR>")
                .map_or(cwd, |rest| rest.trim_start_matches(['/', '\\']));
            cx.folder(within, node)?
        }
        None => cx.dir.to_owned(),
    };
    let mut process = ProjectProcess::new(entry.key, &cmd, cwd);
    process.env = cx.base_env(at)?;
    process.env_files = cx.base_files();
    if let Some(node) = written.env {
        variables(cx, &mut process.env, node)?;
    }
    if let Some(node) = written.autostart {
        process.autostart = yaml.switch(node, "autostart")?;
    }
    if let Some(node) = written.autorestart {
        process.restart = if yaml.switch(node, "autorestart")? {
            Restart::Always
        } else {
            Restart::Never
        };
    }
    Ok(process)
}

/// The keys of the process `entry` that oino takes (the others are listed as ignored); a process
/// written as text is its `shell`, as a list its `cmd`.
fn written<'n>(cx: &Context, entry: &Entry<'n>) -> Result<Written<'n>, FileError> {
    let yaml = &cx.yaml;
    let mut written = Written::default();
    if entry.value.data.is_string() {
        written.shell = Some(entry.value);
        return Ok(written);
    }
    if entry.value.data.is_sequence() {
        written.cmd = Some(entry.value);
        return Ok(written);
    }
    if !entry.value.data.is_mapping() {
        return Err(yaml.at(
            entry.value,
            format!(
                "process {} is a mapping (shell or cmd, cwd, env, ...), a command line, or a \
                 list of a program and its arguments",
                entry.key
            ),
        ));
    }
    for key in yaml.mapping(entry.value, &format!("process {}", entry.key))? {
        let slot = match key.key {
            "shell" => &mut written.shell,
            "cmd" => &mut written.cmd,
            "cwd" => &mut written.cwd,
            "env" => &mut written.env,
            "autostart" => &mut written.autostart,
            "autorestart" => &mut written.autorestart,
            other => {
                yaml.ignore(key.at, other);
                continue;
            }
        };
        *slot = Some(select(cx, key.value)?);
    }
    Ok(written)
}

/// `cmd`: a list of a program and its arguments, quoted into one bash command line (a command
/// line as it is, as newer mprocs reads one).
fn command_line(cx: &Context, node: Node) -> Result<String, FileError> {
    let yaml = &cx.yaml;
    if node.data.is_string() {
        return Ok(yaml.text(node, "cmd")?.to_owned());
    }
    let args = yaml
        .list(node, "cmd")?
        .iter()
        .map(|arg| yaml.scalar(arg, "an argument of cmd"))
        .collect::<Result<Vec<_>, _>>()?;
    if args.is_empty() {
        return Err(yaml.at(node, "cmd is empty: give the program and its arguments"));
    }
    Ok(args
        .iter()
        .enumerate()
        .map(|(index, arg)| quoted(arg, index == 0))
        .collect::<Vec<_>>()
        .join(" "))
}

/// `arg` as one word of bash, quoted when bash would read more into it (a first word with `=`
/// would set a variable).
fn quoted(arg: &str, first: bool) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c))
        && !(first && arg.contains('='));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Sets the variables of the mapping `node` in `env` (a `~` one is listed as ignored).
fn variables(cx: &Context, env: &mut Vec<(String, String)>, node: Node) -> Result<(), FileError> {
    let yaml = &cx.yaml;
    let mut own = Vec::new();
    for entry in yaml.mapping(node, "env")? {
        let value = select(cx, entry.value)?;
        if value.data.is_null() {
            yaml.ignore(
                entry.at,
                &format!(
                    "{}: ~ (mprocs unsets it; oino only sets variables)",
                    entry.key
                ),
            );
            continue;
        }
        let value = yaml.scalar(value, &format!("env {}", entry.key))?;
        own.push((entry.key.to_owned(), value.clone()));
        set(env, entry.key, value);
    }
    cx.variables(&own, node)
}

/// `node`, or when it is `{$select: os, linux: ..., $else: ...}` the value for this system.
fn select<'n>(cx: &Context, node: Node<'n>) -> Result<Node<'n>, FileError> {
    if !node.data.is_mapping() {
        return Ok(node);
    }
    let entries = cx.yaml.mapping(node, "a value")?;
    let Some(by) = entries.iter().find(|entry| entry.key == "$select") else {
        return Ok(node);
    };
    if by.value.data.as_str() != Some("os") {
        return Err(cx
            .yaml
            .at(by.value, "$select: os is the only choice mprocs knows"));
    }
    let chosen = entries
        .iter()
        .find(|entry| entry.key == std::env::consts::OS)
        .or_else(|| entries.iter().find(|entry| entry.key == "$else"))
        .ok_or_else(|| {
            cx.yaml.at(
                node,
                format!(
                    "$select: os has no value for {} and no $else",
                    std::env::consts::OS
                ),
            )
        })?;
    select(cx, chosen.value)
}

#[cfg(test)]
mod tests;
