//! Environment files (`.env` beside the project file, as foreman, honcho, overmind and docker
//! compose read it; `env_file = [...]`) and `${VAR}` in a command or a value.
//!
//! A line is `NAME=value` (`export NAME=value` too); `#` starts a comment line, or a comment
//! after an unquoted value; `'single'` quotes keep their text as it is, `"double"` ones take `\n`,
//! `\t`, `\"` and `\\`. `${NAME}` (and `${NAME:-default}`) in an unquoted or double-quoted value,
//! in `cmd` and in `env` is replaced by the variable's value: those read before it, then the
//! environment `oino` was started in. A `${NAME}` that names nothing is left as written, for the
//! shell to see.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use super::FileError;

/// The most one value may grow to once its `${VAR}`s are replaced.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The most reading one project may build in all: its values once expanded, each process's
/// environment, aliases of a YAML file expanded. A small file can repeat a large value many
/// times over; a project needs far less.
pub const MAX_PROJECT_BYTES: usize = 16 << 20;

/// What reading one project has built so far, against [`MAX_PROJECT_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct Budget {
    spent: Cell<usize>,
}

impl Budget {
    /// Counts `bytes` more; past the budget, the words of the refusal.
    pub(crate) fn spend(&self, bytes: usize) -> Result<(), String> {
        let spent = self.spent.get().saturating_add(bytes);
        self.spent.set(spent);
        if spent > MAX_PROJECT_BYTES {
            return Err(format!(
                "the project grows past {} MiB once read (its ${{VAR}}s replaced, its YAML \
                 aliases copied, each process with its environment files' variables): a \
                 project needs far less; look for a value repeated through ${{VAR}} or an alias",
                MAX_PROJECT_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// Counts the bytes of the variables `env`.
    pub(crate) fn spend_on(&self, env: &[(String, String)]) -> Result<(), String> {
        self.spend(
            env.iter()
                .map(|(name, value)| name.len() + value.len())
                .sum(),
        )
    }
}

/// The value of a variable of the environment a file is read in.
pub(crate) type Known<'a> = &'a dyn Fn(&str) -> Option<String>;

/// An environment file read, with its variables in order.
pub(crate) type EnvFile = (PathBuf, Vec<(String, String)>);

/// Sets `name` in `env`, over an earlier value.
pub(crate) fn set(env: &mut Vec<(String, String)>, name: &str, value: String) {
    env.retain(|(other, _)| other != name);
    env.push((name.to_owned(), value));
}

/// The value of `name`: its last in `env`, else what `known` gives.
pub(crate) fn value_of(env: &[(String, String)], name: &str, known: Known) -> Option<String> {
    env.iter()
        .rev()
        .find(|(other, _)| other == name)
        .map(|(_, value)| value.clone())
        .or_else(|| known(name))
}

/// The variables of `files`, each over those read before it.
pub(crate) fn of_files(files: &[EnvFile]) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for (name, value) in files.iter().flat_map(|(_, vars)| vars) {
        set(&mut env, name, value.clone());
    }
    env
}

/// The variables of the environment file `file`, in order; a mistake names its line.
pub(crate) fn read_file(
    file: &Path,
    known: Known,
    budget: &Budget,
) -> Result<Vec<(String, String)>, FileError> {
    let text = FileError::read_text(file)?;
    parse(&text, known, budget).map_err(|(line, message)| FileError {
        file: file.to_owned(),
        line,
        column: 1,
        message,
    })
}

/// The variables of an environment file's `text`, or the line (from 1) of a mistake and what
/// it is. `known` gives the value of a variable not set in the file (the environment's).
fn parse(
    text: &str,
    known: Known,
    budget: &Budget,
) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let trimmed = trimmed.strip_prefix("export ").unwrap_or(trimmed);
        let Some((name, value)) = trimmed.split_once('=') else {
            return Err((
                index + 1,
                "expected NAME=value (an environment file's line)".into(),
            ));
        };
        let name = name.trim();
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err((
                index + 1,
                format!("`{name}` cannot name a variable: use letters, digits and _"),
            ));
        }
        let lookup = |wanted: &str| value_of(&vars, wanted, known);
        let value = value.trim();
        let value = if let Some(quoted) = value.strip_prefix('\'') {
            quoted
                .strip_suffix('\'')
                .ok_or((index + 1, "a ' is not closed on its line".to_owned()))?
                .to_owned()
        } else if let Some(quoted) = value.strip_prefix('"') {
            let inner = quoted
                .strip_suffix('"')
                .ok_or((index + 1, "a \" is not closed on its line".to_owned()))?;
            expand(&unescaped(inner), &lookup, budget).map_err(|why| (index + 1, why))?
        } else {
            let value = value.split(" #").next().unwrap_or_default().trim_end();
            expand(value, &lookup, budget).map_err(|why| (index + 1, why))?
        };
        // What the server would refuse when it starts the process (a NUL byte, a variable too
        // long) is refused here, at its line, before anything starts.
        if let Some(why) = super::file::variables_refusal(std::iter::once((name, value.as_str()))) {
            return Err((index + 1, why));
        }
        set(&mut vars, name, value);
    }
    Ok(vars)
}

/// `\n`, `\t`, `\"` and `\\` of a double-quoted value.
fn unescaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other @ ('"' | '\\')) => out.push(other),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `text` with each `${NAME}` and `${NAME:-default}` replaced by the value `lookup` gives (the
/// default when it gives none, or an empty one); left as written when it names nothing. What it
/// grows to is counted in `budget`; a value past [`MAX_VALUE_BYTES`] is refused in words.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    budget: &Budget,
) -> Result<String, String> {
    let expanded = expand_within(text, lookup, MAX_VALUE_BYTES).ok_or_else(|| {
        format!(
            "this value grows past {} MiB once its ${{VAR}}s are replaced: look for a value \
             repeated through ${{VAR}}",
            MAX_VALUE_BYTES >> 20
        )
    })?;
    budget.spend(expanded.len())?;
    Ok(expanded)
}

/// [`expand`] up to `most` bytes: `None` past them (before building more).
fn expand_within(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    most: usize,
) -> Option<String> {
    let mut out = String::with_capacity(text.len().min(most));
    let mut rest = text;
    let room = |out: &String, more: usize| out.len().saturating_add(more) <= most;
    while let Some(start) = rest.find("${") {
        if !room(&out, start) {
            return None;
        }
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return room(&out, 0).then_some(out);
        };
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        let is_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let value = lookup(name).filter(|value| !value.is_empty() || default.is_none());
        let piece = match (is_name, &value) {
            (true, Some(value)) => value.as_str(),
            (true, None) if default.is_some() => default.unwrap_or_default(),
            _ => &rest[start..=start + 2 + end],
        };
        if !room(&out, piece.len()) {
            return None;
        }
        out.push_str(piece);
        rest = &after[end + 1..];
    }
    if !room(&out, rest.len()) {
        return None;
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn from(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        move |wanted| {
            vars.iter()
                .find(|(name, _)| name == wanted)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn variables_are_expanded_from_what_is_known_and_the_rest_left_for_the_shell() {
        let known = from(&[("PORT", "3000"), ("EMPTY", "")]);
        let cases = [
            ("serve --port ${PORT}", "serve --port 3000"),
            ("${HOST:-localhost}:${PORT}", "localhost:3000"),
            ("${EMPTY:-x}", "x"),
            ("[${EMPTY}]", "[]"),
            ("echo ${NOPE} $$ $PORT", "echo ${NOPE} $$ $PORT"),
            ("${1} ${a-b} ${", "${1} ${a-b} ${"),
        ];
        for (text, expanded) in cases {
            assert_eq!(
                expand(text, &known, &Budget::default()).as_deref(),
                Ok(expanded),
                "{text}"
            );
        }
    }

    #[test]
    fn an_environment_file_reads_as_docker_compose_and_foreman_read_it() {
        let text = "# db\nexport DB=shop\nPORT=5432 # the port\nURL=\"postgres://${HOST:-localhost}:${PORT}/${DB}\"\nRAW='${PORT} \\n'\nMULTI=\"a\\nb\"\nPORT=5433\n\nUSER_HOME=${HOME}\n";
        let vars = parse(text, &from(&[("HOME", "/home/me")]), &Budget::default()).unwrap();
        let vars: Vec<(&str, &str)> = vars
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            vars,
            [
                ("DB", "shop"),
                ("URL", "postgres://localhost:5432/shop"),
                ("RAW", "${PORT} \\n"),
                ("MULTI", "a\nb"),
                ("PORT", "5433"),
                ("USER_HOME", "/home/me"),
            ]
        );
        for (text, line, message) in [
            ("A=1\nnonsense\n", 2, "expected NAME=value"),
            ("1A=1\n", 1, "cannot name a variable"),
            ("A='open\n", 1, "is not closed"),
        ] {
            let err = parse(text, &from(&[]), &Budget::default()).unwrap_err();
            assert_eq!(err.0, line, "{text:?}");
            assert!(err.1.contains(message), "{text:?}: {}", err.1);
        }
    }
}
