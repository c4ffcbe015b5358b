//! `oino man`: one whole manual page, roff. `clap_mangen` renders the synopsis and the options
//! of oino and of each subcommand (a subsection each: no page is referred to that does not
//! exist); the interface's keys come from its key table, the settings from a table checked
//! against their parser, then the project file, the environment, the files and the statuses.

use std::io::Write as _;

use clap::CommandFactory;

/// The settings file's keys: an example line, and what it does.
pub(crate) const SETTINGS: [(&str, &str); 10] = [
    (
        "list_width = 32",
        "Columns of the list, 10 to 200 (default: a quarter of the terminal, 24 to 40).",
    ),
    (
        "mouse = true",
        "false leaves the mouse to the terminal, whose own selection then works.",
    ),
    (
        "notify = \"none\"",
        "When a task ends: \"none\", \"bell\", or \"desktop\" (notify-send, when there).",
    ),
    (
        "log_retention_days = 7",
        "Logs older than this go when a server (or --embedded) starts.",
    ),
    (
        "log_cap = \"4G\"",
        "One call's log on disk (bytes, or with K, M, G; at least 1M): past it, the first quarter \
         and the newest part are kept, and what was left out is said.",
    ),
    (
        "ssh_command = \"ssh\"",
        "The program and options --host runs to reach another machine, as `ssh -F FILE`.",
    ),
    (
        "hosts = [\"box\", \"gpu\"]",
        "Machines the interface lists below this one's calls when no --host is given, each \
         reached as --host reaches it.",
    ),
    (
        "link_persist = 0",
        "Seconds a link to another machine is kept ready after its last use: a keeper starts \
         the next ssh ahead, so a command there pays no ssh connection of its own (0: none).",
    ),
    (
        "[keys]",
        "An action = a key or a list of keys, in place of its default keys (see KEYS for the \
         actions' names), e.g. kill = [\"x\", \"delete\"].",
    ),
    (
        "[theme]",
        "A part = a color name (red, darkgray, ...), a number 0-255 or \"#rrggbb\"; the parts \
         are running, task, done, failed, waiting and border.",
    ),
];

/// The project file's keys (`oino.toml`), as `KEY`, what it does.
const PROJECT_KEYS: [(&str, &str); 14] = [
    ("name", "The project's name (default: its folder's)."),
    (
        "env_file",
        "Environment files read after .env, for every process (also per process).",
    ),
    (
        "[processes.NAME] cmd",
        "The process's command, run by bash -c; ${VAR} and ${VAR:-default} are expanded.",
    ),
    (
        "cwd",
        "Its folder, from the file's (default: the file's folder).",
    ),
    (
        "env",
        "Variables over the env files and oino's environment.",
    ),
    (
        "after",
        "Processes it waits for: a list, or NAME = \"ready\", \"started\", \"succeeded\" or \"ended\".",
    ),
    (
        "ready",
        "A regular expression: ready once a line of output matches.",
    ),
    (
        "ready_http, ready_cmd",
        "Ready at a 2xx or 3xx answer, or once the command exits 0; ready_interval and ready_timeout in seconds.",
    ),
    (
        "alive_http, alive_cmd",
        "Liveness: ended (and restarted by its policy) after alive_failures failures in a row, one try every alive_interval seconds.",
    ),
    ("restart", "never (default), on-failure or always."),
    (
        "restart_limit",
        "Restarts in a row before it gives up (default 5).",
    ),
    (
        "backoff",
        "Seconds before the first restart, doubled each time up to 30.",
    ),
    (
        "autostart",
        "false: started only by oino start NAME or oino up NAME.",
    ),
    (
        "env_file (per process)",
        "This process's own env files, after the project's.",
    ),
];

/// The environment variables oino reads or sets.
const ENVIRONMENT: [(&str, &str); 10] = [
    (
        "OINO_SOCKET",
        "The server's socket, when neither --socket nor -s is given.",
    ),
    (
        "OINO_CONFIG",
        "The settings file, instead of $XDG_CONFIG_HOME/oino/config.toml.",
    ),
    (
        "XDG_RUNTIME_DIR",
        "Where the sockets are: $XDG_RUNTIME_DIR/oino/SESSION.sock (else $TMPDIR/oino-UID).",
    ),
    (
        "XDG_STATE_HOME",
        "Where the logs are: $XDG_STATE_HOME/oino (else ~/.local/state/oino).",
    ),
    (
        "XDG_CONFIG_HOME",
        "Where the settings are: $XDG_CONFIG_HOME/oino/config.toml (else ~/.config/oino).",
    ),
    (
        "NO_COLOR",
        "When set and not empty, oino's own chrome has no colors; the programs' own colors stay.",
    ),
    ("TMPDIR", "The sockets' folder without XDG_RUNTIME_DIR."),
    (
        "OINO_COMPLETE",
        "Set by the completion scripts when they call oino back for candidates.",
    ),
    ("OINO_CALL_ID", "Set in every call: its id."),
    (
        "OINO_TREE, OINO_SERVER",
        "Set in every call: how oino finds its processes, and whose server started it.",
    ),
];

/// The files oino reads and makes.
const FILES: [(&str, &str); 6] = [
    ("~/.config/oino/config.toml", "The settings (see SETTINGS)."),
    (
        "oino.toml, process-compose.yaml, mprocs.yaml, Procfile",
        "The project file oino looks for here, in that order; a .env beside it is read too.",
    ),
    (
        "$XDG_RUNTIME_DIR/oino/SESSION.sock",
        "A server's socket (default.sock without -s), with its lock beside it.",
    ),
    (
        "~/.local/state/oino/logs/ID.log",
        "Each call's whole raw output, kept log_retention_days days.",
    ),
    (
        "~/.local/state/oino/server-NAME-HASH.log",
        "The log of a server started in the background.",
    ),
    (
        "~/.local/state/oino/logs/*",
        "What a result's cut left out, named in the result.",
    ),
];

/// The exit statuses.
const EXIT_STATUSES: [(&str, &str); 6] = [
    ("0", "Done."),
    (
        "1",
        "It failed: no server runs, a server went away, a process would not end.",
    ),
    (
        "2",
        "What was asked must change: a wrong flag, id, name or file, a typo of a subcommand.",
    ),
    ("124", "oino run --timeout or oino wait --timeout ran out."),
    ("128+N", "Ended by signal N (130 after Ctrl-C)."),
    (
        "any other",
        "oino run, oino wait and oino logs --follow exit with the command's own status.",
    ),
];

/// The whole page.
pub(crate) fn page() -> anyhow::Result<Vec<u8>> {
    let mut command = super::Cli::command();
    command.build();
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    subcommands(&command, &mut out)?;
    keys(&mut out)?;
    let settings = SETTINGS.map(|(key, does)| (key.to_owned(), does.to_owned()));
    section(
        &mut out,
        "SETTINGS",
        "Read from ~/.config/oino/config.toml ($XDG_CONFIG_HOME/oino/config.toml, or the file OINO_CONFIG names); every key is optional. A mistake names the file, line and column: the interface starts with the defaults and shows it, the other commands exit 2.",
        &settings,
    )?;
    let project = PROJECT_KEYS.map(|(key, does)| (key.to_owned(), does.to_owned()));
    section(
        &mut out,
        "PROJECT FILE",
        "oino in a folder with an oino.toml (or oino --config FILE) starts the processes it declares on its server, each a background task named after it; with no oino.toml, a process-compose.yaml, an mprocs.yaml or a Procfile is read as it is. oino up applies a changed file, oino down stops the project, oino start NAME starts one process. The keys of an oino.toml:",
        &project,
    )?;
    let environment = ENVIRONMENT.map(|(key, does)| (key.to_owned(), does.to_owned()));
    section(&mut out, "ENVIRONMENT", "", &environment)?;
    let files = FILES.map(|(key, does)| (key.to_owned(), does.to_owned()));
    section(&mut out, "FILES", "", &files)?;
    let statuses = EXIT_STATUSES.map(|(key, does)| (key.to_owned(), does.to_owned()));
    section(&mut out, "EXIT STATUS", "", &statuses)?;
    if let Some(examples) = command.get_after_help() {
        writeln!(
            out,
            ".SH EXAMPLES\n.nf\n{}\n.fi",
            escape(&examples.to_string())
        )?;
    }
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Each subcommand in a subsection of its own: synopsis, description, options, notes.
fn subcommands(command: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    writeln!(out, ".SH SUBCOMMANDS")?;
    for sub in command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
    {
        let name = format!("oino {}", sub.get_name());
        writeln!(out, ".SS \"{name}\"")?;
        let man = clap_mangen::Man::new(sub.clone().bin_name(&name));
        let mut part = Vec::new();
        man.render_synopsis_section(&mut part)?;
        man.render_description_section(&mut part)?;
        if sub.get_arguments().any(|arg| !arg.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        if sub.get_after_help().is_some() {
            man.render_extra_section(&mut part)?;
        }
        // Its sections are paragraphs of its subsection here.
        let part = String::from_utf8_lossy(&part)
            .lines()
            .map(|line| {
                if line.starts_with(".SH ") {
                    ".PP"
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        writeln!(out, "{part}")?;
    }
    Ok(())
}

/// The interface's keys, from its key table.
fn keys(out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut entries: Vec<(String, String)> = crate::interface::app::default_keymap()
        .into_iter()
        .map(|binding| {
            (
                format!("{} ({})", binding.label, binding.action.name()),
                binding.action.describe().to_owned(),
            )
        })
        .collect();
    entries.extend(
        crate::interface::app::OTHER_KEYS
            .iter()
            .map(|(label, does)| ((*label).to_owned(), (*does).to_owned())),
    );
    section(
        out,
        "KEYS",
        "The interface's keys (? shows them there); the name in parentheses is the action's in \
         the settings' [keys].",
        &entries,
    )
}

/// A section: a paragraph, then each entry as a tagged paragraph.
fn section(
    out: &mut Vec<u8>,
    heading: &str,
    intro: &str,
    entries: &[(String, String)],
) -> std::io::Result<()> {
    writeln!(out, ".SH \"{heading}\"")?;
    if !intro.is_empty() {
        writeln!(out, "{}", escape(intro))?;
    }
    for (tag, does) in entries {
        writeln!(out, ".TP\n\\fB{}\\fR\n{}", escape(tag), escape(does))?;
    }
    Ok(())
}

/// Text as roff shows it: backslashes and dashes escaped, no line read as a request.
fn escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e").replace('-', "\\-");
            if line.starts_with(['.', '\'']) {
                format!("\\&{line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_in_the_manual_is_one_the_settings_take() {
        let mut file = String::new();
        let mut tables = String::new();
        for (key, _) in SETTINGS {
            if key.starts_with('[') {
                tables.push_str(key);
                tables.push('\n');
                tables.push_str(match key {
                    "[keys]" => "kill = \"x\"\n",
                    _ => "running = \"cyan\"\n",
                });
            } else {
                file.push_str(key);
                file.push('\n');
            }
        }
        file.push_str(&tables);
        let dir = std::env::temp_dir().join(format!("oino-man-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        let path = dir.join("config.toml");
        std::fs::write(&path, &file).expect("settings");
        crate::interface::app::settings::Config::read(&path).expect("every documented key reads");
    }

    #[test]
    fn roff_text_is_escaped() {
        assert_eq!(escape(".x -y \\z"), "\\&.x \\-y \\ez");
    }
}
