//! A `process-compose.yaml` read as an oino project, so that a project that has one runs under
//! oino as it is:
//!
//! ```yaml
//! processes:
//!   db:
//!     command: postgres -D data
//!     readiness_probe:
//!       exec: { command: pg_isready }
//!       period_seconds: 1
//!   web:
//!     command: npm run dev
//!     working_dir: web
//!     environment: ["PORT=3000"]
//!     depends_on:
//!       db: { condition: process_healthy }
//!     availability: { restart: on_failure, max_restarts: 3, backoff_seconds: 2 }
//! ```
//!
//! Taken at the top: `processes`, `environment` (`NAME=value` items, for every process) and
//! `disable_env_expansion`. Of a process: `command`, `working_dir`, `environment`, `disabled`
//! (not started with the project), `depends_on` (its `condition`: `process_healthy` and
//! `process_log_ready` are ready, `process_started` (the default) started,
//! `process_completed_successfully` succeeded, `process_completed` ended), `ready_log_line` (a
//! line that holds it, as written), `readiness_probe` and `liveness_probe` (`exec.command`, or
//! `http_get` host, port and path in plain HTTP; `period_seconds`, at least 0.1; a liveness
//! probe's `failure_threshold`; 0 in either is the default, as in Kubernetes) and `availability` (`restart`: `no`, `on_failure`, `always`, and
//! `exit_on_failure` read as `on_failure`; `max_restarts`, 0 for no limit; `backoff_seconds`).
//! Anything else is listed in [`super::Project::ignored`] with its place. `${VAR}` is expanded in
//! commands, values and probes, as process-compose expands it (unless `disable_env_expansion:
//! true`): from `.env` beside the file, the file's variables, then the environment oino was
//! started in.

use super::env::set;
use super::yaml::{Context, Entry, Node};
use super::{
    After, Condition, FileError, MAX_BACKOFF_MS, MIN_INTERVAL_MS, Probe, ProjectProcess, Restart,
};

/// The processes of a process-compose file whose top mapping is `top`, in the file's order.
pub(super) fn processes(cx: &Context, top: &[Entry]) -> Result<Vec<ProjectProcess>, FileError> {
    let mut listed = None;
    let mut environment = None;
    let mut expand = true;
    for entry in top {
        match entry.key {
            "processes" => listed = Some(entry),
            "environment" => environment = Some(entry.value),
            "disable_env_expansion" => {
                expand = !cx.yaml.switch(entry.value, "disable_env_expansion")?;
            }
            other => cx.yaml.ignore(entry.at, other),
        }
    }
    let Some(listed) = listed else {
        return Err(cx
            .yaml
            .at_start("no processes: give processes: NAME: command: ..."));
    };
    let entries = cx.yaml.mapping(listed.value, "processes")?;
    if entries.is_empty() {
        return Err(cx.yaml.at(
            listed.at,
            "no processes: give processes: NAME: command: ...",
        ));
    }
    let names = cx.names(&entries)?;
    let mut reading = Reading {
        cx,
        expand,
        env: cx.base_env(listed.at)?,
        names: &names,
    };
    if let Some(node) = environment {
        let mut env = reading.env.clone();
        reading.variables(&mut env, node)?;
        reading.env = env;
    }
    let processes = entries
        .iter()
        .map(|entry| reading.process(entry))
        .collect::<Result<Vec<_>, _>>()?;
    cx.without_cycles(&processes, &entries)?;
    Ok(processes)
}

/// The keys of a process that oino takes, as written.
#[derive(Default)]
struct Written<'n> {
    command: Option<Node<'n>>,
    working_dir: Option<Node<'n>>,
    environment: Option<Node<'n>>,
    disabled: Option<Node<'n>>,
    depends_on: Option<Node<'n>>,
    ready_log_line: Option<Node<'n>>,
    readiness_probe: Option<Node<'n>>,
    liveness_probe: Option<Node<'n>>,
    availability: Option<Node<'n>>,
}

/// A probe as a process-compose file gives it.
struct ProbeRead {
    probe: Probe,
    interval_ms: Option<u64>,
    failures: Option<u32>,
}

/// What reading the processes of the file needs.
struct Reading<'r, 'a> {
    cx: &'r Context<'a>,
    /// Whether `${VAR}` is expanded (`disable_env_expansion` is not set).
    expand: bool,
    /// The variables of every process: `.env`'s, then the file's `environment`.
    env: Vec<(String, String)>,
    /// The names of the processes, in the file's order.
    names: &'r [&'r str],
}

impl Reading<'_, '_> {
    /// The process `entry`, checked.
    fn process(&self, entry: &Entry) -> Result<ProjectProcess, FileError> {
        let yaml = &self.cx.yaml;
        let written = self.written(entry)?;
        let mut env = self.env.clone();
        self.cx.charge(&env, entry.at)?;
        if let Some(node) = written.environment {
            self.variables(&mut env, node)?;
        }
        let Some(command) = written.command else {
            return Err(yaml.at(
                entry.at,
                format!("{} has no command: give command: ...", entry.key),
            ));
        };
        let cmd = self.expanded(yaml.text(command, "command")?, &env, command)?;
        let cmd = self.cx.command(cmd, command)?;
        let cwd = match written.working_dir {
            Some(node) => self.cx.folder(yaml.text(node, "working_dir")?, node)?,
            None => self.cx.dir.to_owned(),
        };
        let mut process = ProjectProcess::new(entry.key, &cmd, cwd);
        process.env_files = self.cx.base_files();
        if let Some(node) = written.disabled {
            process.autostart = !yaml.switch(node, "disabled")?;
        }
        if let Some(node) = written.availability {
            self.availability(node, &mut process)?;
        }
        if let Some(node) = written.ready_log_line {
            // process-compose looks for the line as written, not as a pattern.
            let line = yaml.text(node, "ready_log_line")?;
            process.ready = (!line.is_empty()).then(|| regex::escape(line));
        }
        if let Some(node) = written.readiness_probe {
            if process.ready.is_some() {
                return Err(yaml.at(
                    node,
                    "give one way to tell it is ready: ready_log_line or readiness_probe",
                ));
            }
            let read = self.probe(node, false, &env)?;
            process.probes.ready = Some(read.probe);
            if let Some(ms) = read.interval_ms {
                process.probes.ready_interval_ms = ms;
            }
        }
        if let Some(node) = written.liveness_probe {
            let read = self.probe(node, true, &env)?;
            process.probes.alive = Some(read.probe);
            if let Some(ms) = read.interval_ms {
                process.probes.alive_interval_ms = ms;
            }
            if let Some(failures) = read.failures {
                process.probes.alive_failures = failures;
            }
        }
        if let Some(node) = written.depends_on {
            process.after = self.depends_on(node)?;
        }
        process.env = env;
        Ok(process)
    }

    /// The keys of the process `entry` that oino takes; the others are listed as ignored.
    fn written<'n>(&self, entry: &Entry<'n>) -> Result<Written<'n>, FileError> {
        let yaml = &self.cx.yaml;
        let mut written = Written::default();
        for key in yaml.mapping(entry.value, &format!("process {}", entry.key))? {
            let slot = match key.key {
                "command" => &mut written.command,
                "working_dir" => &mut written.working_dir,
                "environment" => &mut written.environment,
                "disabled" => &mut written.disabled,
                "depends_on" => &mut written.depends_on,
                "ready_log_line" => &mut written.ready_log_line,
                "readiness_probe" => &mut written.readiness_probe,
                "liveness_probe" => &mut written.liveness_probe,
                "availability" => &mut written.availability,
                other => {
                    yaml.ignore(key.at, other);
                    continue;
                }
            };
            *slot = Some(key.value);
        }
        Ok(written)
    }

    /// `text` with `${VAR}` expanded from `env` and the environment, unless the file says not to.
    fn expanded(
        &self,
        text: &str,
        env: &[(String, String)],
        node: Node,
    ) -> Result<String, FileError> {
        if self.expand {
            self.cx.expand(text, env, node)
        } else {
            Ok(text.to_owned())
        }
    }

    /// Sets the `NAME=value` items of the list `node` in `env`, each expanded from those before
    /// it.
    fn variables(&self, env: &mut Vec<(String, String)>, node: Node) -> Result<(), FileError> {
        let yaml = &self.cx.yaml;
        let mut own = Vec::new();
        for item in yaml.list(node, "environment")? {
            let text = yaml.text(item, "an environment item")?;
            let Some((name, value)) = text.split_once('=') else {
                return Err(yaml.at(item, "an environment item is NAME=value"));
            };
            let value = self.expanded(value, env, item)?;
            own.push((name.to_owned(), value.clone()));
            set(env, name, value);
        }
        self.cx.variables(&own, node)
    }

    /// `availability`: the restart policy, its limit and its backoff.
    fn availability(&self, node: Node, process: &mut ProjectProcess) -> Result<(), FileError> {
        let yaml = &self.cx.yaml;
        for entry in yaml.mapping(node, "availability")? {
            match entry.key {
                "restart" => {
                    process.restart = match yaml.text(entry.value, "restart")? {
                        "no" => Restart::Never,
                        "on_failure" => Restart::OnFailure,
                        "always" => Restart::Always,
                        "exit_on_failure" => {
                            yaml.ignore(
                                entry.value,
                                "exit_on_failure's exit (read as on_failure: oino stops nothing \
                                 else when it fails)",
                            );
                            Restart::OnFailure
                        }
                        other => {
                            return Err(yaml.at(
                                entry.value,
                                format!(
                                    "restart: `{other}` is no restart policy (they are: no, \
                                     on_failure, always, exit_on_failure)"
                                ),
                            ));
                        }
                    };
                }
                // process-compose's 0 is no limit; left out, oino's own limit guards a crash loop.
                "max_restarts" => {
                    process.restart_limit = match yaml.count(entry.value, "max_restarts")? {
                        0 => u32::MAX,
                        limit => limit,
                    };
                }
                "backoff_seconds" => {
                    process.backoff_ms = yaml
                        .seconds(entry.value, "backoff_seconds")?
                        .min(MAX_BACKOFF_MS);
                }
                other => yaml.ignore(entry.at, other),
            }
        }
        Ok(())
    }

    /// What the process waits for: `NAME: { condition: ... }`, each a process of the file.
    fn depends_on(&self, node: Node) -> Result<Vec<After>, FileError> {
        let yaml = &self.cx.yaml;
        let mut after = Vec::new();
        for entry in yaml.mapping(node, "depends_on")? {
            if !self.names.contains(&entry.key) {
                return Err(yaml.at(
                    entry.at,
                    format!(
                        "depends_on names `{}`, which is no process of this file (they are: {})",
                        entry.key,
                        self.names.join(", ")
                    ),
                ));
            }
            let mut condition = Condition::Started;
            for inner in yaml.mapping(entry.value, "a depends_on entry")? {
                if inner.key != "condition" {
                    yaml.ignore(inner.at, inner.key);
                    continue;
                }
                condition = match yaml.text(inner.value, "condition")? {
                    "process_healthy" | "process_log_ready" => Condition::Ready,
                    "process_started" => Condition::Started,
                    "process_completed_successfully" => Condition::Succeeded,
                    "process_completed" => Condition::Ended,
                    other => {
                        return Err(yaml.at(
                            inner.value,
                            format!(
                                "condition: `{other}` is no condition (they are: \
                                 process_healthy, process_log_ready, process_started, \
                                 process_completed_successfully, process_completed)"
                            ),
                        ));
                    }
                };
            }
            after.push(After {
                name: entry.key.to_owned(),
                condition,
            });
        }
        Ok(after)
    }

    /// A readiness or (`alive`) liveness probe: `exec` or `http_get`, and how often.
    fn probe(
        &self,
        node: Node,
        alive: bool,
        env: &[(String, String)],
    ) -> Result<ProbeRead, FileError> {
        let yaml = &self.cx.yaml;
        let mut probe = None;
        let mut read = ProbeRead {
            probe: Probe::Cmd(String::new()),
            interval_ms: None,
            failures: None,
        };
        for entry in yaml.mapping(node, "a probe")? {
            match entry.key {
                "exec" | "http_get" if probe.is_some() => {
                    return Err(yaml.at(entry.at, "give one of exec and http_get"));
                }
                "exec" => probe = Some(self.exec(entry.value, env)?),
                "http_get" => probe = Some(self.http_get(entry.value, env)?),
                // 0 is the default, as in Kubernetes, whose probes process-compose follows.
                "period_seconds" => {
                    let ms = yaml.seconds(entry.value, "period_seconds")?;
                    if (1..MIN_INTERVAL_MS).contains(&ms) {
                        return Err(yaml.at(
                            entry.value,
                            "period_seconds is at least 0.1: a probe is tried at most ten times \
                             a second",
                        ));
                    }
                    read.interval_ms = (ms > 0).then_some(ms);
                }
                "failure_threshold" if alive => {
                    let failures = yaml.count(entry.value, "failure_threshold")?;
                    read.failures = (failures > 0).then_some(failures);
                }
                "failure_threshold" => yaml.ignore(
                    entry.at,
                    "failure_threshold (a readiness probe is tried until it passes)",
                ),
                other => yaml.ignore(entry.at, other),
            }
        }
        read.probe = probe.ok_or_else(|| yaml.at(node, "a probe has exec or http_get"))?;
        Ok(read)
    }

    /// `exec: { command }`: a command, passed at exit 0.
    fn exec(&self, node: Node, env: &[(String, String)]) -> Result<Probe, FileError> {
        let yaml = &self.cx.yaml;
        let mut command = None;
        for entry in yaml.mapping(node, "exec")? {
            if entry.key == "command" {
                command = Some(entry.value);
            } else {
                yaml.ignore(entry.at, entry.key);
            }
        }
        let command = command.ok_or_else(|| yaml.at(node, "exec has no command"))?;
        let cmd = self.expanded(yaml.text(command, "command")?, env, command)?;
        Ok(Probe::Cmd(self.cx.command(cmd, command)?))
    }

    /// `http_get: { host, port, path, scheme }`: an `http://` address.
    fn http_get(&self, node: Node, env: &[(String, String)]) -> Result<Probe, FileError> {
        let yaml = &self.cx.yaml;
        let mut host = "127.0.0.1".to_owned();
        let mut port = String::new();
        let mut path = "/".to_owned();
        for entry in yaml.mapping(node, "http_get")? {
            match entry.key {
                "host" => {
                    host = self.expanded(yaml.text(entry.value, "host")?, env, entry.value)?;
                }
                "port" => {
                    port = format!(
                        ":{}",
                        self.expanded(&yaml.scalar(entry.value, "port")?, env, entry.value)?
                    );
                }
                "path" => {
                    let written =
                        self.expanded(yaml.text(entry.value, "path")?, env, entry.value)?;
                    path = if written.starts_with('/') {
                        written
                    } else {
                        format!("/{written}")
                    };
                }
                "scheme" => {
                    let scheme = yaml.text(entry.value, "scheme")?;
                    if !scheme.eq_ignore_ascii_case("http") {
                        return Err(yaml.at(
                            entry.value,
                            format!(
                                "scheme {scheme}: probes ask servers on this machine in plain \
                                 HTTP (scheme: http)"
                            ),
                        ));
                    }
                }
                other => yaml.ignore(entry.at, other),
            }
        }
        let url = format!("http://{host}{port}{path}");
        super::probe::check_address(&url).map_err(|why| yaml.at(node, why))?;
        Ok(Probe::Http(url))
    }
}

#[cfg(test)]
mod tests;
