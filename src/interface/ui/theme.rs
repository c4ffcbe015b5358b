//! The colors of oino's own chrome (none under `NO_COLOR`) and the symbols of states.

use ratatui::style::{Color, Modifier, Style};

use crate::core::project::ProcessPhase;
use crate::core::{EntryInfo, EntryKind, EntryState};

/// The colors of oino's own chrome, or none at all under `NO_COLOR`.
pub(super) struct Theme {
    pub(super) color: bool,
    pub(super) colors: crate::interface::app::settings::Theme,
}

impl Theme {
    pub(super) fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub(super) fn dim(&self) -> Style {
        self.fg(self.colors.border)
    }

    pub(super) fn error(&self) -> Style {
        self.fg(self.colors.failed).add_modifier(Modifier::BOLD)
    }

    pub(super) fn state(&self, entry: &EntryInfo) -> Style {
        let colors = &self.colors;
        if entry.state.is_running() && entry.waiting_for_input.is_some() {
            return self.fg(colors.waiting).add_modifier(Modifier::BOLD);
        }
        match (entry.state, entry.kind) {
            (EntryState::Running, EntryKind::Call) => self.fg(colors.running),
            (EntryState::Running, EntryKind::Task) => self.fg(colors.task),
            (EntryState::Exited { code: 0 }, _) => self.fg(colors.done),
            _ => self.fg(colors.failed),
        }
    }

    /// A search's match that is not the current one: marked, but less than the current.
    pub(super) fn match_highlight(&self) -> Style {
        if self.color {
            Style::new()
                .fg(Color::Yellow)
                .add_modifier(Modifier::UNDERLINED)
        } else {
            Style::new().add_modifier(Modifier::UNDERLINED)
        }
    }

    /// The search's current match: the brightest thing in the pane (reversed without colors).
    pub(super) fn current_match(&self) -> Style {
        if self.color {
            Style::new()
                .bg(Color::Yellow)
                .fg(Color::Black)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        }
    }
}

pub(super) fn selected_style() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

pub(super) fn title_style() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// The symbol of an entry's state.
#[must_use]
pub(crate) fn state_symbol(entry: &EntryInfo) -> &'static str {
    if entry.state.is_running() && entry.waiting_for_input.is_some() {
        return "?";
    }
    // A project's process not ready yet (no line matched its ready pattern).
    if entry.state.is_running() && entry.ready == Some(false) {
        return "◌";
    }
    if let Some(phase) = entry.project.as_ref().and_then(|mark| mark.phase.as_ref()) {
        return match phase {
            ProcessPhase::Waiting { .. } => "…",
            ProcessPhase::Blocked { .. } => "⊘",
            ProcessPhase::Restarting { .. } => "↻",
            ProcessPhase::GaveUp => "✗",
            ProcessPhase::Changed { .. } => "◈",
        };
    }
    match (entry.state, entry.kind) {
        (EntryState::NotStarted, _) => "…",
        (EntryState::Running, EntryKind::Call) => "▶",
        (EntryState::Running, EntryKind::Task) => "◆",
        (EntryState::Exited { code: 0 }, _) => "✓",
        (EntryState::Exited { .. }, _) => "✗",
        (EntryState::Killed { .. }, _) => "■",
        // A task nobody holds: left running by a server that died.
        (EntryState::Orphaned { .. }, _) => "◇",
    }
}

/// Whether oino's own colors are off (<https://no-color.org>).
#[must_use]
pub(crate) fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}
