//! A first word that is no command but close to a subcommand: `oino lss` says which subcommand
//! was likely meant, instead of opening the interface on a call that fails. A word that is a
//! command (on the PATH, a path, a bash builtin or keyword) runs as a call, as does any word
//! after `--`.

use std::ffi::OsString;
use std::path::Path;

pub(crate) use crate::spelling::meant;

/// Whether `word` could name a command: a plain word (no path, no spaces, no quoting).
fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Whether bash would run `word` as a command: a program on the PATH, a builtin or a keyword.
fn is_command(word: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(word))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
    });
    // Asked of bash itself (only for a word close to a subcommand): its builtins and keywords
    // are commands of a call too. A bash that cannot be asked takes the word as a command.
    on_path
        || std::process::Command::new("bash")
            .args(["-c", "type -t -- \"$1\" >/dev/null", "oino", word])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map_or(true, |status| status.success())
}

/// The first of the interface's COMMANDs, when it is a likely typo of a subcommand: the word
/// and the subcommand meant. `args` are the program's, to tell a word after `--` apart.
pub(crate) fn typo<'a>(
    commands: &'a [String],
    args: &[OsString],
    subcommands: &[&'a str],
) -> Option<(&'a str, &'a str)> {
    let word = commands.first()?;
    let at = args
        .iter()
        .position(|arg| arg.as_os_str() == word.as_str())?;
    let escaped = args[..at].iter().any(|arg| arg == "--");
    if escaped || !plain_word(word) || Path::new(word).components().count() != 1 {
        return None;
    }
    let subcommand = meant(word, subcommands)?;
    (!is_command(word)).then_some((word.as_str(), subcommand))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const SUBCOMMANDS: [&str; 8] = [
        "ls",
        "logs",
        "kill",
        "kill-server",
        "up",
        "completions",
        "man",
        "run",
    ];

    #[test]
    fn a_near_word_or_a_beginning_is_taken_for_its_subcommand() {
        let taken = |word| meant(word, &SUBCOMMANDS);
        assert_eq!(taken("lss"), Some("ls"));
        assert_eq!(taken("kil"), Some("kill"));
        assert_eq!(taken("kill-sever"), Some("kill-server"));
        assert_eq!(taken("complet"), Some("completions"));
        assert_eq!(taken("mna"), Some("man"));
        // Too far, or too short to say.
        assert_eq!(taken("frobnicate"), None);
        assert_eq!(taken("x"), None);
        assert_eq!(taken("ls"), None);
    }

    #[test]
    fn a_word_after_dashes_or_a_path_or_a_command_is_no_typo() {
        let args = |words: &[&str]| -> Vec<OsString> {
            std::iter::once("oino")
                .chain(words.iter().copied())
                .map(OsString::from)
                .collect()
        };
        let commands = |word: &str| vec![word.to_owned()];
        assert_eq!(
            typo(
                &commands("lss"),
                &args(&["-s", "work", "lss"]),
                &SUBCOMMANDS
            ),
            Some(("lss", "ls"))
        );
        assert_eq!(
            typo(&commands("lss"), &args(&["--", "lss"]), &SUBCOMMANDS),
            None
        );
        assert_eq!(
            typo(&commands("./lss"), &args(&["./lss"]), &SUBCOMMANDS),
            None
        );
        assert_eq!(
            typo(&commands("lss -l"), &args(&["lss -l"]), &SUBCOMMANDS),
            None
        );
        // `cd` is bash's, `true` a program (and a builtin).
        assert_eq!(typo(&commands("cd"), &args(&["cd"]), &["id", "ls"]), None);
        assert_eq!(typo(&commands("true"), &args(&["true"]), &["trust"]), None);
    }
}
