//! The confirm mode: a question in the bar (kill, restart, quit) that `y` answers; any other
//! key says no.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Effect, ModeKeys};

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
    Quit {
        running: usize,
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
