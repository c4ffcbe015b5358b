//! The confirm mode: a question in the bar (kill, restart, quit) that `y` answers; any other
//! key says no.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Effect, ModeKeys};
use crate::core::{EntryInfo, EntryKind};

/// How many calls and tasks still run, said in words: `2 calls and 1 task`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Running {
    /// Calls still running.
    pub calls: usize,
    /// Tasks still running.
    pub tasks: usize,
}

impl Running {
    /// What runs among `entries`.
    #[must_use]
    pub fn of(entries: &[EntryInfo]) -> Self {
        let mut running = Self::default();
        // A far host's entries are its server's: quitting here ends none of them.
        let here = |entry: &&EntryInfo| crate::interface::fleet::split_id(&entry.id).is_none();
        for entry in entries
            .iter()
            .filter(here)
            .filter(|entry| entry.state.is_running())
        {
            match entry.kind {
                EntryKind::Call => running.calls += 1,
                EntryKind::Task => running.tasks += 1,
            }
        }
        running
    }

    /// Whether nothing runs.
    #[must_use]
    pub fn is_none(self) -> bool {
        self.calls + self.tasks == 0
    }

    /// The line said when an interface of the server quits: what keeps running and how to come
    /// back to it, as tmux says `[detached]`; `None` when nothing runs.
    #[must_use]
    pub fn left_running_line(self) -> Option<String> {
        if self.is_none() {
            return None;
        }
        let (verb, them) = if self.calls + self.tasks == 1 {
            ("keeps", "it")
        } else {
            ("keep", "them")
        };
        Some(format!(
            "{self} {verb} running in the oino server: `oino` comes back to {them}"
        ))
    }
}

impl std::fmt::Display for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counted = |count: usize, word: &str| {
            let plural = if count == 1 { "" } else { "s" };
            format!("{count} {word}{plural}")
        };
        match (self.calls, self.tasks) {
            (calls, 0) => f.write_str(&counted(calls, "call")),
            (0, tasks) => f.write_str(&counted(tasks, "task")),
            (calls, tasks) => write!(
                f,
                "{} and {}",
                counted(calls, "call"),
                counted(tasks, "task")
            ),
        }
    }
}

/// A question answered with `y`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    Kill {
        id: String,
        label: String,
    },
    Restart {
        id: String,
        label: String,
    },
    /// Quitting ends the processes: they live in this interface.
    Quit {
        running: Running,
    },
    ProjectDown {
        file: std::path::PathBuf,
        name: String,
    },
}

impl ModeKeys for Confirm {
    fn key(self, app: &mut App, key: KeyEvent) -> Vec<Effect> {
        if !matches!(key.code, KeyCode::Char('y' | 'Y')) {
            return Vec::new();
        }
        match self {
            Confirm::Kill { id, .. } => vec![Effect::Kill { id }],
            Confirm::Restart { id, .. } => vec![app.restart(id)],
            Confirm::ProjectDown { file, name } => vec![Effect::ProjectDown { file, name }],
            Confirm::Quit { .. } => {
                app.quit = true;
                Vec::new()
            }
        }
    }
}

impl App {
    pub(super) fn restart(&self, id: String) -> Effect {
        let label = self
            .entries
            .iter()
            .find(|entry| entry.id == id)
            .map_or_else(|| id.clone(), |entry| entry.label().to_owned());
        Effect::Restart {
            id,
            label,
            size: self.pane_size(),
        }
    }
}
