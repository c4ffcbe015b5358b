//! The user's settings: `$XDG_CONFIG_HOME/oino/config.toml` (`~/.config/oino/config.toml`), or
//! the file `OINO_CONFIG` names. Every key is optional; a mistake is reported with its file,
//! line and column (the interface then starts with the defaults and shows it).
//!
//! ```toml
//! list_width = 32          # columns of the list (default: a quarter of the terminal, 24 to 40)
//! mouse = true             # oino takes the mouse (false: the terminal's own selection works)
//! notify = "bell"          # when a task ends: "none" (default), "bell", "desktop"
//!
//! [keys]                   # an action = a key or a list of keys
//! restart = "R"
//! kill = ["x", "delete"]
//!
//! [theme]                  # colors: a name (red, darkgray, …), a number 0-255 or "#rrggbb"
//! running = "cyan"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use serde::Deserialize;
use toml::Spanned;

use crate::interface::app::{Action, Binding};

/// When a task ends, whom to tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Notify {
    /// Nobody is told.
    #[default]
    None,
    /// The terminal's bell.
    Bell,
    /// A desktop notification through `notify-send`, when it is there.
    Desktop,
}

/// The colors of oino's own chrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// A running call's state.
    pub running: Color,
    /// A running task's state.
    pub task: Color,
    /// The state of one that exited 0.
    pub done: Color,
    /// The state of one that failed, and errors in the bar.
    pub failed: Color,
    /// The state of one waiting for someone to type.
    pub waiting: Color,
    /// Rules, borders and dim text.
    pub border: Color,
}

impl Default for Theme {
    fn default() -> Self {
        Self {
            running: Color::Cyan,
            task: Color::Magenta,
            done: Color::Green,
            failed: Color::Red,
            waiting: Color::Yellow,
            border: Color::DarkGray,
        }
    }
}

impl Theme {
    /// Sets the color of one `part` of the chrome (`[theme]`).
    fn set(
        &mut self,
        part: &Spanned<String>,
        color: &Spanned<String>,
    ) -> Result<(), (usize, String)> {
        let parsed = parse_color(color.get_ref()).ok_or_else(|| {
            (
                color.span().start,
                format!(
                    "`{}` is no color: a name (red, darkgray, …), a number 0-255 or #rrggbb",
                    color.get_ref()
                ),
            )
        })?;
        let slot = match part.get_ref().as_str() {
            "running" => &mut self.running,
            "task" => &mut self.task,
            "done" => &mut self.done,
            "failed" => &mut self.failed,
            "waiting" => &mut self.waiting,
            "border" => &mut self.border,
            other => {
                return Err((
                    part.span().start,
                    format!(
                        "no theme color `{other}`: they are running, task, done, failed, \
                         waiting, border"
                    ),
                ));
            }
        };
        *slot = parsed;
        Ok(())
    }
}

/// The settings, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Columns of the list; `None` for a quarter of the terminal, 24 to 40.
    pub list_width: Option<u16>,
    /// Whether oino takes the mouse (if not, the terminal's own selection works).
    pub mouse: bool,
    /// Whom to tell when a task ends.
    pub notify: Notify,
    /// Each action's keys: the defaults, with those `[keys]` names replaced.
    pub keymap: Vec<Binding>,
    /// The chrome's colors (`[theme]`).
    pub theme: Theme,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            list_width: None,
            mouse: true,
            notify: Notify::None,
            keymap: crate::interface::app::default_keymap(),
            theme: Theme::default(),
        }
    }
}

/// A mistake in the settings, where it is.
pub(crate) type ConfigError = crate::core::project::FileError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Model {
    list_width: Option<Spanned<u16>>,
    mouse: Option<bool>,
    notify: Option<Notify>,
    // The core's (`core::settings`): known here, checked there.
    #[serde(rename = "log_retention_days")]
    _log_retention_days: Option<serde::de::IgnoredAny>,
    #[serde(rename = "log_cap")]
    _log_cap: Option<serde::de::IgnoredAny>,
    #[serde(rename = "ssh_command")]
    _ssh_command: Option<String>,
    #[serde(rename = "hosts")]
    _hosts: Option<serde::de::IgnoredAny>,
    #[serde(rename = "link_persist")]
    _link_persist: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    keys: BTreeMap<Spanned<String>, Spanned<OneOrMore>>,
    #[serde(default)]
    theme: BTreeMap<Spanned<String>, Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMore {
    One(String),
    More(Vec<String>),
}

impl Config {
    /// The settings file (see [`crate::core::settings::path`]).
    #[must_use]
    pub fn path() -> Option<PathBuf> {
        crate::core::settings::path()
    }

    /// The user's settings; the defaults when there is no file.
    pub fn load() -> Result<Self, ConfigError> {
        match Self::path() {
            // There in any form but a dangling link (a FIFO, a device): read, and refused in
            // words when it is no regular file.
            Some(file) if file.exists() => Self::read(&file),
            _ => Ok(Self::default()),
        }
    }

    /// Reads and checks `file`.
    pub fn read(file: &Path) -> Result<Self, ConfigError> {
        let text = ConfigError::read_text(file)?;
        Self::parse(&text)
            .map_err(|(offset, message)| ConfigError::at_offset(file, &text, offset, message))
    }

    fn parse(text: &str) -> Result<Self, (usize, String)> {
        let model: Model = toml::from_str(text).map_err(|err| {
            (
                err.span().map_or(0, |span| span.start),
                format!(
                    "{} (expected: list_width, mouse, notify, log_retention_days, log_cap, \
                     ssh_command, hosts, link_persist, [keys], [theme])",
                    crate::spelling::unknown_key(err.message().trim_end())
                ),
            )
        })?;
        let mut config = Self::default();
        if let Some(width) = &model.list_width {
            if !(10..=200).contains(width.get_ref()) {
                return Err((width.span().start, "list_width is 10 to 200 columns".into()));
            }
            config.list_width = Some(*width.get_ref());
        }
        config.mouse = model.mouse.unwrap_or(true);
        config.notify = model.notify.unwrap_or_default();
        // The keys the core reads are checked as it reads them.
        crate::core::settings::LogSettings::parse(text)?;
        crate::core::settings::FarSettings::parse(text)?;
        for (name, keys) in &model.keys {
            config.bind(name, keys)?;
        }
        for (part, color) in &model.theme {
            config.theme.set(part, color)?;
        }
        Ok(config)
    }

    /// Binds the action `name` to `keys` (`[keys]`), in place of its default keys.
    fn bind(
        &mut self,
        name: &Spanned<String>,
        keys: &Spanned<OneOrMore>,
    ) -> Result<(), (usize, String)> {
        let action = Action::from_name(name.get_ref()).ok_or_else(|| {
            (
                name.span().start,
                format!(
                    "no action `{}`: the actions are {}",
                    name.get_ref(),
                    Action::names().collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        let names = match keys.get_ref() {
            OneOrMore::One(key) => vec![key.clone()],
            OneOrMore::More(keys) => keys.clone(),
        };
        let parsed: Vec<KeyEvent> = names
            .iter()
            .map(|key| crate::interface::app::parse_key(key))
            .collect::<Result<_, _>>()
            .map_err(|err| (keys.span().start, err))?;
        if let Some(binding) = self.keymap.iter_mut().find(|b| b.action == action) {
            // A capital letter comes with Shift from some terminals and without from others.
            binding.keys = parsed
                .iter()
                .flat_map(|key| {
                    let plain = matches!(key.code, KeyCode::Char(c) if c.is_uppercase())
                        .then_some((key.code, KeyModifiers::NONE));
                    std::iter::once((key.code, key.modifiers)).chain(plain)
                })
                .collect();
            binding.label = names
                .iter()
                .map(|key| crate::interface::app::key_label(key))
                .collect::<Vec<_>>()
                .join(" ");
        }
        Ok(())
    }
}

/// A color by name, number or `#rrggbb`, as ratatui reads one.
fn parse_color(text: &str) -> Option<Color> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_rebind_keys_and_set_colors() {
        let config = Config::parse(
            "list_width = 30\nmouse = false\nnotify = \"bell\"\n\
             [keys]\nrestart = \"R\"\nkill = [\"x\", \"delete\"]\n\
             [theme]\nrunning = \"#102030\"\nfailed = \"lightred\"\nborder = \"240\"\n",
        )
        .unwrap();
        assert_eq!(config.list_width, Some(30));
        assert!(!config.mouse);
        assert_eq!(config.notify, Notify::Bell);
        let binding = |action| {
            config
                .keymap
                .iter()
                .find(|binding| binding.action == action)
                .unwrap()
                .clone()
        };
        assert_eq!(
            binding(Action::Restart).keys,
            [
                (KeyCode::Char('R'), KeyModifiers::SHIFT),
                (KeyCode::Char('R'), KeyModifiers::NONE)
            ]
        );
        assert_eq!(binding(Action::Restart).label, "R");
        assert_eq!(binding(Action::Kill).keys.len(), 2);
        assert_eq!(binding(Action::Kill).label, "x Delete");
        assert_eq!(config.theme.running, Color::Rgb(0x10, 0x20, 0x30));
        assert_eq!(config.theme.failed, Color::LightRed);
        assert_eq!(config.theme.border, Color::Indexed(240));
        assert_eq!(config.theme.done, Color::Green);
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert!(Config::parse("log_retention_days = 30\nlog_cap = \"2g\"\n").is_ok());
    }

    #[test]
    fn mistakes_say_where_and_what_was_expected() {
        for (text, offset, message) in [
            ("mouse = 3\n", 8, "invalid type"),
            ("colour = 1\n", 0, "unknown key `colour`"),
            (
                "mouze = true\n",
                0,
                "unknown key `mouze`: did you mean `mouse`?",
            ),
            ("[keys]\nexplode = \"e\"\n", 7, "no action `explode`"),
            ("[keys]\nkill = \"hyper-x\"\n", 14, "unknown key"),
            ("[theme]\nrunning = \"plaid\"\n", 18, "is no color"),
            ("[theme]\nstripes = \"red\"\n", 8, "no theme color"),
            ("list_width = 3\n", 13, "10 to 200"),
            ("notify = \"loud\"\n", 9, "unknown variant"),
            ("log_retention_days = 0\n", 21, "1 or more"),
            ("log_cap = \"lots\"\n", 10, "is no size"),
            ("log_cap = \"5 parsecs\"\n", 10, "is no size"),
            ("log_cap = 1000\n", 10, "1M or more"),
            ("hosts = [\"-oProxyCommand=x\"]\n", 8, "leading -"),
            ("ssh_command = \"\"\n", 14, "ssh_command is empty"),
        ] {
            let (at, said) = Config::parse(text).unwrap_err();
            assert_eq!(at, offset, "{text:?}: {said}");
            assert!(said.contains(message), "{text:?}: {said}");
        }
    }
}
