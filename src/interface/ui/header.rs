//! The line above a pane: its entry's state, pid, age and id (the focused pane's label bright,
//! with its scroll and search).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::core::project::{ProcessPhase, ProjectMark};
use crate::core::{EntryInfo, EntryState};
use crate::interface::app::{Action, App};
use crate::time::format_elapsed;

use super::elapsed_ms;
use super::theme::{Theme, state_symbol, title_style};

pub(super) fn render_header(
    app: &App,
    entry: &EntryInfo,
    now_ms: u64,
    theme: &Theme,
    area: Rect,
    buffer: &mut Buffer,
) {
    let focused = app.selected.as_deref() == Some(entry.id.as_str());
    let state = match (&entry.task_id, entry.state) {
        (Some(task_id), EntryState::Running) => format!("task {task_id}, running"),
        (_, state) => state.to_string(),
    };
    let keys = ProjectKeys {
        restart: app.key_of(Action::Restart),
        up: app.key_of(Action::ProjectUp),
    };
    let mut right = entry_marks(entry, &state, now_ms, &keys, theme);
    right.extend(view_marks(app, focused, theme));
    // The label gives way to the state, the position and the search (not to the cost).
    let right_width: usize = right.iter().map(Span::width).sum();
    let label_width = usize::from(area.width)
        .saturating_sub(right_width + 3)
        .max(8);
    // What its tree costs, while it runs: last, the first to go when the line is full.
    if let (Some(usage), true) = (app.usage.get(&entry.id), entry.state.is_running()) {
        right.push(Span::styled(
            format!("  cpu {} · mem {}", usage.cpu_text(), usage.memory_text()),
            theme.dim(),
        ));
    }
    let full = crate::inert::escaped(entry.label());
    let mut label: String = full.chars().take(label_width).collect();
    if label.chars().count() < full.chars().count() {
        label.pop();
        label.push('…');
    }
    let mut spans = vec![
        Span::styled(format!(" {} ", state_symbol(entry)), theme.state(entry)),
        Span::styled(
            label,
            if focused && app.is_split() {
                title_style().add_modifier(ratatui::style::Modifier::REVERSED)
            } else if focused {
                title_style()
            } else {
                theme.dim()
            },
        ),
    ];
    spans.extend(right);
    Line::from(spans).render(area, buffer);
}

/// What the entry says of itself: its state, pid, age and id, and what it waits for or lost.
fn entry_marks(
    entry: &EntryInfo,
    state: &str,
    now_ms: u64,
    keys: &ProjectKeys,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut right = vec![if entry.pid == 0 {
        Span::styled(format!("  {state}"), theme.dim())
    } else {
        Span::styled(
            format!(
                "  {state} · pid {} · {} · {}",
                entry.pid,
                format_elapsed(elapsed_ms(entry, now_ms)),
                entry.id
            ),
            theme.dim(),
        )
    }];
    if let Some(mark) = &entry.project {
        right.extend(project_marks(mark, keys, theme));
    }
    if let (Some(prompt), true) = (&entry.waiting_for_input, entry.state.is_running()) {
        let prompt: String = crate::inert::escaped(prompt).chars().take(40).collect();
        right.push(Span::styled(
            format!("  [waiting for input: {prompt}]"),
            theme.fg(Color::Yellow),
        ));
    }
    if entry.state.is_running() && entry.ready == Some(false) {
        right.push(Span::styled(
            "  [starting: not ready yet]",
            theme.fg(Color::Yellow),
        ));
    }
    if entry.log_error.is_some() {
        right.push(Span::styled(
            "  [log not written: output kept in memory]",
            theme.fg(Color::Red),
        ));
    } else if let Some(cut) = &entry.log_cut {
        right.push(Span::styled(
            format!(
                "  [log capped: {} left out]",
                crate::output::byte_size(cut.left_out)
            ),
            theme.fg(Color::Yellow),
        ));
    }
    right
}

/// The keys a project's process's header names, as bound.
struct ProjectKeys {
    restart: String,
    up: String,
}

/// What a project's process says beyond its run: why it waits or is blocked, its backoff, that
/// it gave up or its file changed, and how many times it was restarted.
fn project_marks(mark: &ProjectMark, keys: &ProjectKeys, theme: &Theme) -> Vec<Span<'static>> {
    let mut marks = Vec::new();
    let (text, color) = match &mark.phase {
        Some(ProcessPhase::Waiting { waiting_for }) => (
            format!("[waits for {}]", waiting_for.join(", ")),
            Color::Yellow,
        ),
        Some(ProcessPhase::Blocked { reason }) => (format!("[blocked: {reason}]"), Color::Red),
        Some(ProcessPhase::Restarting { backoff_left_ms }) => (
            format!(
                "[restarting in {}]",
                crate::time::format_wait(*backoff_left_ms)
            ),
            Color::Yellow,
        ),
        Some(ProcessPhase::GaveUp) => (
            format!("[gave up: {} starts it again]", keys.restart),
            Color::Red,
        ),
        Some(ProcessPhase::Changed { change }) => (
            format!("[{change} changed in the file: {} applies it]", keys.up),
            Color::Yellow,
        ),
        None => (String::new(), Color::Reset),
    };
    if !text.is_empty() {
        marks.push(Span::styled(
            format!("  {}", crate::inert::escaped(&text)),
            theme.fg(color),
        ));
    }
    if mark.restarts > 0 {
        marks.push(Span::styled(
            format!("  ↻{} restarts", mark.restarts),
            theme.dim(),
        ));
    }
    marks
}

/// Where the focused pane's view is: scrolled back, searching.
fn view_marks(app: &App, focused: bool, theme: &Theme) -> Vec<Span<'static>> {
    let mut right = Vec::new();
    if focused && app.scroll > 0 {
        right.push(Span::styled(
            format!(
                "  [{} lines back · {} for live]",
                app.scroll,
                app.key_of(crate::interface::app::Action::Live)
            ),
            theme.fg(Color::Yellow),
        ));
    }
    if let (Some(search), true) = (&app.search, focused) {
        right.push(Span::styled(
            format!("  [search: {}]", search.pattern),
            theme.fg(Color::Yellow),
        ));
    }
    right
}
