//! The settings the core uses, from the user's settings file (the interface reads the rest of
//! the same file): how long logs are kept, and how much of each.
//!
//! ```toml
//! log_retention_days = 7   # logs older than this go when a server starts (default 7)
//! log_cap = "4G"           # bytes of one call's log kept on disk (default 4 GiB, at least 1M)
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::project::FileError;

/// The settings file: `OINO_CONFIG`, else `$XDG_CONFIG_HOME/oino/config.toml`, else
/// `~/.config/oino/config.toml`.
#[must_use]
pub fn path() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("OINO_CONFIG") {
        return Some(file.into());
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))?;
    Some(base.join("oino/config.toml"))
}

/// How long logs are kept, and how much of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogSettings {
    /// Logs older than this are removed when a server (or an interface of its own) starts.
    pub retention: Duration,
    /// Bytes of one call's log kept on disk.
    pub cap: u64,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            retention: crate::output::LOG_RETENTION,
            cap: crate::output::DEFAULT_LOG_CAP,
        }
    }
}

/// The keys of the file the core reads; the others are the interface's.
#[derive(Deserialize)]
struct Model {
    log_retention_days: Option<Spanned<u32>>,
    log_cap: Option<Spanned<Size>>,
}

/// A size: bytes, or a number with a unit (`500M`, `4GiB`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    fn bytes(&self) -> Result<u64, String> {
        let text = match self {
            Self::Bytes(bytes) => return Ok(*bytes),
            Self::Text(text) => text.trim(),
        };
        let no_size = || format!("`{text}` is no size: write bytes, or e.g. \"500M\", \"4G\"");
        let digits = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(digits);
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(no_size()),
        };
        let number: f64 = number.parse().map_err(|_| no_size())?;
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        Ok((number * scale as f64) as u64)
    }
}

impl LogSettings {
    /// The user's; the defaults when there is no file.
    pub fn load() -> Result<Self, FileError> {
        match path() {
            // There in any form but a dangling link: read, and refused in words when it is no
            // regular file.
            Some(file) if file.exists() => Self::read(&file),
            _ => Ok(Self::default()),
        }
    }

    /// Reads and checks `file`.
    pub fn read(file: &Path) -> Result<Self, FileError> {
        let text = FileError::read_text(file)?;
        Self::parse(&text)
            .map_err(|(offset, message)| FileError::at_offset(file, &text, offset, message))
    }

    /// Reads the settings' text: what is wrong, and where (a byte offset), if it is.
    pub fn parse(text: &str) -> Result<Self, (usize, String)> {
        let model: Model = toml::from_str(text).map_err(|err| {
            (
                err.span().map_or(0, |span| span.start),
                err.message().trim_end().to_owned(),
            )
        })?;
        let mut settings = Self::default();
        if let Some(days) = &model.log_retention_days {
            if *days.get_ref() == 0 {
                return Err((days.span().start, "log_retention_days is 1 or more".into()));
            }
            settings.retention = Duration::from_secs(u64::from(*days.get_ref()) * 24 * 3600);
        }
        if let Some(cap) = &model.log_cap {
            let bytes = cap
                .get_ref()
                .bytes()
                .map_err(|err| (cap.span().start, err))?;
            if bytes < crate::output::MIN_LOG_CAP {
                return Err((cap.span().start, "log_cap is 1M or more".into()));
            }
            settings.cap = bytes;
        }
        Ok(settings)
    }
}

/// How oino reaches other machines, as the settings file says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FarSettings {
    /// `ssh_command`: the program and options `--host` reaches another machine with (default
    /// `ssh`), e.g. `"ssh -F ~/.ssh/oino_config"`.
    pub ssh_command: Option<String>,
    /// `hosts`: the machines the interface lists beside this one when no `--host` is given.
    pub hosts: Vec<String>,
    /// `link_persist`: seconds a link to a far side is kept ready after its last use (0, the
    /// default: none is); see [`crate::remote::ready`].
    pub link_persist: Duration,
}

impl FarSettings {
    /// The settings file's `ssh_command` and `hosts`; none when there is no file.
    pub fn load() -> Result<Self, FileError> {
        let Some(file) = path().filter(|file| file.exists()) else {
            return Ok(Self::default());
        };
        let text = FileError::read_text(&file)?;
        Self::parse(&text).map_err(|(offset, why)| FileError::at_offset(&file, &text, offset, why))
    }

    /// The far settings in a settings file's text; where it is wrong (an offset) and why.
    pub(crate) fn parse(text: &str) -> Result<Self, (usize, String)> {
        #[derive(Deserialize)]
        struct Model {
            ssh_command: Option<Spanned<String>>,
            hosts: Option<Spanned<Vec<String>>>,
            link_persist: Option<u64>,
        }
        let model: Model = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            (offset, err.message().trim_end().to_owned())
        })?;
        if let Some(command) = &model.ssh_command
            && command.get_ref().trim().is_empty()
        {
            return Err((
                command.span().start,
                "ssh_command is empty: name the ssh program and its options, or leave the key out"
                    .into(),
            ));
        }
        if let Some(hosts) = &model.hosts
            && let Some(bad) = hosts
                .get_ref()
                .iter()
                .find(|host| host.is_empty() || host.starts_with('-') || host.contains(':'))
        {
            return Err((
                hosts.span().start,
                format!(
                    "hosts holds `{}`: name each machine as ssh knows it (a host or an alias of \
                     ~/.ssh/config), without a leading - or a :",
                    crate::inert::escaped(bad)
                ),
            ));
        }
        Ok(Self {
            ssh_command: model.ssh_command.map(Spanned::into_inner),
            hosts: model.hosts.map(Spanned::into_inner).unwrap_or_default(),
            link_persist: Duration::from_secs(model.link_persist.unwrap_or_default()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_settings_name_the_ssh_program_and_the_hosts_and_refuse_what_ssh_would_misread() {
        assert_eq!(
            FarSettings::parse("mouse = true").unwrap(),
            FarSettings::default()
        );
        let far = FarSettings::parse("ssh_command = \"ssh -F x\"\nhosts = [\"box\", \"me@gpu\"]\n")
            .unwrap();
        assert_eq!(far.ssh_command.as_deref(), Some("ssh -F x"));
        assert_eq!(far.hosts, ["box", "me@gpu"]);
        assert_eq!(far.link_persist, Duration::ZERO);
        let kept = FarSettings::parse("link_persist = 600\n").unwrap();
        assert_eq!(kept.link_persist, Duration::from_secs(600));
        assert!(FarSettings::parse("link_persist = -1").is_err());
        assert!(FarSettings::parse("link_persist = \"10m\"").is_err());
        let (_, why) = FarSettings::parse("hosts = [\"box\", \"-oProxyCommand=x\"]").unwrap_err();
        assert!(
            why.contains("-oProxyCommand=x") && why.contains("leading -"),
            "{why}"
        );
        let (_, why) = FarSettings::parse("hosts = [\"a:b\"]").unwrap_err();
        assert!(why.contains("a:b"), "{why}");
        let (_, why) = FarSettings::parse("ssh_command = \" \"").unwrap_err();
        assert!(why.contains("ssh_command is empty"), "{why}");
        assert!(FarSettings::parse("hosts = \"box\"").is_err());
    }

    #[test]
    fn logs_are_kept_as_the_file_says_whatever_else_it_holds() {
        assert_eq!(LogSettings::parse("").unwrap(), LogSettings::default());
        let kept =
            LogSettings::parse("mouse = false\nlog_retention_days = 30\n[keys]\nkill = \"x\"\n")
                .unwrap()
                .retention;
        assert_eq!(kept, Duration::from_secs(30 * 24 * 3600));
        assert_eq!(LogSettings::default().cap, 4 << 30);
        for (text, bytes) in [
            ("log_cap = 2097152\n", 2 << 20),
            ("log_cap = \"500M\"\n", 500 << 20),
            ("log_cap = \"1.5 GiB\"\n", 3 << 29),
            ("log_cap = \"2g\"\n", 2 << 30),
        ] {
            assert_eq!(LogSettings::parse(text).unwrap().cap, bytes, "{text}");
        }
        for (text, offset, message) in [
            ("log_retention_days = 0\n", 21, "1 or more"),
            ("log_cap = \"lots\"\n", 10, "is no size"),
            ("log_cap = \"5 parsecs\"\n", 10, "is no size"),
            ("log_cap = 1000\n", 10, "1M or more"),
        ] {
            let (at, said) = LogSettings::parse(text).unwrap_err();
            assert_eq!(at, offset, "{text:?}: {said}");
            assert!(said.contains(message), "{text:?}: {said}");
        }
    }
}
