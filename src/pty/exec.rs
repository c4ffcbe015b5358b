//! What `execve` takes, checked before a spawn: a refusal then names the thing that is too large
//! (the command, one variable, the whole environment) and its limit, where the kernel would only
//! say "Argument list too long".

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::PtyError;

/// The longest single argument or `NAME=VALUE`: Linux's `MAX_ARG_STRLEN` (32 pages of 4 KiB),
/// less its terminating NUL.
pub(crate) const MAX_ARG_BYTES: usize = 128 * 1024 - 1;

/// Room kept for what is counted beside the arguments and the environment: the program's path,
/// and `SHELL` when the PTY crate sets it.
const RESERVED_BYTES: usize = 1024;

/// The kernel's cap on arguments and environment together (`fs/exec.c`): a quarter of the stack
/// limit (`ulimit -s`), no less than 128 KiB and no more than 6 MiB.
#[must_use]
pub(crate) fn total_limit() -> usize {
    const FLOOR: u64 = 128 * 1024;
    const CEILING: u64 = 6 * 1024 * 1024;
    let stack = rustix::process::getrlimit(rustix::process::Resource::Stack).current;
    let quarter = stack.map_or(CEILING, |stack| stack / 4);
    usize::try_from(quarter.clamp(FLOOR, CEILING)).unwrap_or(usize::MAX)
}

/// Whether a program can be started with `args` and `env`; if not, what is too large or
/// malformed, named.
pub fn check<'a>(
    args: &[&OsStr],
    env: impl IntoIterator<Item = (&'a OsStr, &'a OsStr)>,
) -> Result<(), PtyError> {
    let pointer = std::mem::size_of::<usize>();
    let mut total = RESERVED_BYTES;
    for arg in args {
        if arg.as_bytes().contains(&0) {
            return Err(PtyError::NulByte("the command".into()));
        }
        total += arg.len() + 1 + pointer;
    }
    for (name, value) in env {
        let shown = name.to_string_lossy();
        if name.is_empty() || name.as_bytes().contains(&b'=') || name.as_bytes().contains(&0) {
            return Err(PtyError::BadVariableName(shown.into_owned()));
        }
        if value.as_bytes().contains(&0) {
            return Err(PtyError::NulByte(format!("the variable {shown}")));
        }
        let bytes = name.len() + 1 + value.len();
        if bytes > MAX_ARG_BYTES {
            return Err(PtyError::VariableTooLong {
                name: shown.into_owned(),
                bytes,
            });
        }
        total += bytes + 1 + pointer;
    }
    let limit = total_limit();
    if total > limit {
        return Err(PtyError::EnvironmentTooLarge {
            bytes: total,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, String)]) -> impl Iterator<Item = (&'a OsStr, &'a OsStr)> {
        pairs
            .iter()
            .map(|(name, value)| (OsStr::new(*name), OsStr::new(value.as_str())))
    }

    #[test]
    fn a_variable_is_refused_past_one_arguments_length_naming_it() {
        let fits = [("V", "x".repeat(MAX_ARG_BYTES - 2))];
        assert!(check(&[OsStr::new("bash")], env(&fits)).is_ok());
        let past = [("V", "x".repeat(MAX_ARG_BYTES - 1))];
        let err = check(&[OsStr::new("bash")], env(&past)).expect_err("too long");
        assert!(err.to_string().contains("`V`"), "{err}");
        assert!(err.to_string().contains("131071"), "{err}");
    }

    #[test]
    fn the_whole_environment_is_refused_past_the_kernels_limit() {
        let limit = total_limit();
        assert!((128 * 1024..=6 * 1024 * 1024).contains(&limit));
        let count = limit / 100_000 + 1;
        let values: Vec<(&str, String)> = (0..count).map(|_| ("V", "x".repeat(100_000))).collect();
        let err = check(&[OsStr::new("bash")], env(&values)).expect_err("too large");
        assert!(err.to_string().contains(&limit.to_string()), "{err}");
        assert!(err.to_string().contains("ulimit -s"), "{err}");
        let fewer = &values[..count / 2];
        assert!(check(&[OsStr::new("bash")], env(fewer)).is_ok());
    }

    #[test]
    fn names_and_bytes_no_program_can_get_are_refused() {
        for (name, value) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("A", "x\0y")] {
            let pairs = [(name, value.to_owned())];
            assert!(
                check(&[OsStr::new("bash")], env(&pairs)).is_err(),
                "{name:?}"
            );
        }
        let nul = check(&[OsStr::new("echo a\0b")], std::iter::empty());
        assert!(nul.is_err());
    }
}
