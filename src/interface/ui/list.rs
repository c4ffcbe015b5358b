//! The list of calls and tasks on the left, in sections, the selected one in view.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Style};

use crate::core::project::ProcessPhase;
use crate::core::{EntryInfo, EntryState};
use crate::interface::app::{
    App, Layout, ListLine, Section, host_down_rows, list_lines, list_offset,
};
use crate::interface::fleet::HostState;
use crate::time::format_elapsed;

use super::elapsed_ms;
use super::theme::{Theme, selected_style, state_symbol, title_style};

/// The narrowest list that shows what each running call costs (the header always does), in
/// labelled columns: every row's time in one column.
const USAGE_WIDTH: usize = 36;

/// The columns of a wide list's right side: what a running entry costs, its time, how it
/// ended. A narrow list gives its labels the room instead: a time, and how it ended.
fn columns(cpu: &str, mem: &str, time: &str, end: &str) -> String {
    format!("{cpu:>4} {mem:>4} {time:>6} {end:>4}")
}

/// A wide list's labels over the columns of `section`'s rows (a project's rows run or ended).
fn labels(section: Option<Section>) -> String {
    let (usage, end) = match section {
        Some(Section::Running | Section::Tasks) => (true, ""),
        Some(Section::Finished) => (false, "exit"),
        Some(Section::Project) | None => (true, "exit"),
    };
    let text = if usage {
        columns("cpu", "mem", "time", end)
    } else {
        columns("", "", "time", end)
    };
    text.trim_start().to_owned()
}

/// The right side of a project's process row when it says more than its run's state: whom it
/// waits for, blocked, its backoff, gave up, changed; and its restarts.
fn project_right(entry: &EntryInfo) -> String {
    let Some(mark) = &entry.project else {
        return String::new();
    };
    let what = match &mark.phase {
        Some(ProcessPhase::Waiting { waiting_for }) => format!("waits {}", waiting_for.join(",")),
        Some(ProcessPhase::Blocked { .. }) => "blocked".to_owned(),
        Some(ProcessPhase::Restarting { backoff_left_ms }) => {
            format!("restart {}", crate::time::format_wait(*backoff_left_ms))
        }
        Some(ProcessPhase::GaveUp) => "gave up".to_owned(),
        Some(ProcessPhase::Changed { .. }) => "changed".to_owned(),
        None => String::new(),
    };
    if mark.restarts > 0 {
        format!("{what} ↻{}", mark.restarts)
    } else {
        what
    }
}

/// The right side of an entry's row: its state's mark, time (and cost while it runs), and a
/// project's process's restarts; in a wide list, each in its column.
fn row_right(app: &App, entry: &EntryInfo, now_ms: u64, width: usize) -> String {
    let elapsed = format_elapsed(elapsed_ms(entry, now_ms));
    let wide = width >= USAGE_WIDTH;
    let ended = |end: String| {
        if wide {
            columns("", "", &elapsed, &end).trim_start().to_owned()
        } else {
            format!("{elapsed} {end:>3}")
        }
    };
    let right = match entry.state {
        _ if entry
            .project
            .as_ref()
            .is_some_and(|mark| mark.phase.is_some()) =>
        {
            project_right(entry)
        }
        EntryState::NotStarted => "not started".to_owned(),
        EntryState::Exited { code } => ended(code.to_string()),
        EntryState::Killed { signal } if wide => ended(format!("s{signal}")),
        EntryState::Killed { signal } => format!("{elapsed} s{signal:<2}"),
        EntryState::Orphaned { .. } => ended("left".to_owned()),
        EntryState::Running if wide => match app.usage.get(&entry.id) {
            Some(usage) => columns(&usage.cpu_text(), &usage.memory_text(), &elapsed, ""),
            None => columns("", "", &elapsed, "").trim_start().to_owned(),
        },
        EntryState::Running => elapsed,
    };
    match &entry.project {
        Some(mark) if mark.restarts > 0 && mark.phase.is_none() => {
            format!("↻{} {right}", mark.restarts)
        }
        _ => right,
    }
}

/// A wide list's labels, at the right of a section's title row: the columns left for the
/// title.
fn render_labels(
    section: Option<Section>,
    x: u16,
    y: u16,
    width: usize,
    theme: &Theme,
    buffer: &mut Buffer,
) -> usize {
    if width < USAGE_WIDTH {
        return width;
    }
    let labels = labels(section);
    let at = width.saturating_sub(labels.chars().count());
    buffer.set_stringn(
        x + u16::try_from(at).unwrap_or(u16::MAX),
        y,
        &labels,
        width - at,
        theme.dim(),
    );
    at.saturating_sub(1)
}

/// A machine's heading: this one's, or a far host's with how its link stands.
fn host_heading(app: &App, far: Option<usize>) -> String {
    let Some(host) = far.map(|far| &app.hosts[far]) else {
        return "■ this machine".to_owned();
    };
    let state = match host.state {
        HostState::Linking => " · linking…",
        HostState::Up => "",
        HostState::Down { .. } => " · unreachable",
    };
    format!("■ {}{state}", crate::inert::escaped(&host.name))
}

/// One entry's row at `(x, y)`, `width` wide: its state's mark, label, time and costs.
fn render_entry_row(
    app: &App,
    entry: &EntryInfo,
    now_ms: u64,
    theme: &Theme,
    (x, y, width): (u16, u16, usize),
    buffer: &mut Buffer,
) {
    let selected = app.selected.as_deref() == Some(entry.id.as_str());
    let right = row_right(app, entry, now_ms, width);
    let label_width = width.saturating_sub(right.chars().count() + 4);
    let label = crate::interface::fit::cut(&crate::inert::escaped(entry.label()), label_width);
    // `!`: its log could not be written; `~`: its log reached its cap (the header
    // and a notice say more).
    let mark = if entry.log_error.is_some() {
        '!'
    } else if entry.log_cut.is_some() {
        '~'
    } else {
        ' '
    };
    let text = format!(
        " {}{mark}{label:<label_width$} {right}",
        state_symbol(entry)
    );
    let style = if selected {
        selected_style()
    } else {
        Style::new()
    };
    buffer.set_stringn(x, y, &text, width, style);
    if !selected {
        buffer.set_stringn(x + 1, y, state_symbol(entry), 1, theme.state(entry));
        if entry.log_error.is_some() {
            buffer.set_stringn(x + 2, y, "!", 1, theme.fg(Color::Red));
        } else if entry.log_cut.is_some() {
            buffer.set_stringn(x + 2, y, "~", 1, theme.fg(Color::Yellow));
        }
    }
}

pub(super) fn render_list(
    app: &App,
    now_ms: u64,
    theme: &Theme,
    layout: Layout,
    buffer: &mut Buffer,
) {
    let area = layout.list;
    let lines = list_lines(app);
    let offset = list_offset(app, &lines, usize::from(area.height));
    let width = usize::from(area.width);
    for (row, line) in lines
        .iter()
        .skip(offset)
        .take(usize::from(area.height))
        .enumerate()
    {
        let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
        match *line {
            ListLine::Filter => {
                let filter = app.filter.as_deref().unwrap_or_default();
                let shown = if lines.len() > 1 { "" } else { " · none" };
                let text = format!("filter: {}{shown}", crate::inert::escaped(filter));
                buffer.set_stringn(area.x, y, &text, width, theme.fg(Color::Yellow));
            }
            ListLine::Host(far) => {
                let heading = host_heading(app, far);
                let heading = crate::interface::fit::cut(&heading, width);
                buffer.set_stringn(area.x, y, &heading, width, title_style().fg(Color::Cyan));
            }
            ListLine::HostDown(far, row) => {
                let rows = host_down_rows(app, far);
                let text = format!("  {}", rows.get(row).map_or("", String::as_str));
                buffer.set_stringn(area.x, y, &text, width, theme.fg(Color::Red));
            }
            ListLine::Title(section) => {
                let room = render_labels(Some(section), area.x, y, width, theme, buffer);
                buffer.set_stringn(area.x, y, section.title(), room, title_style());
            }
            ListLine::Heading(index) => {
                let name = app.entries[index]
                    .project
                    .as_ref()
                    .map_or("", |mark| mark.project.as_str());
                let heading = format!("▾ {}", crate::inert::escaped(name));
                let room = render_labels(None, area.x, y, width, theme, buffer);
                let heading = crate::interface::fit::cut(&heading, room);
                buffer.set_stringn(area.x, y, &heading, room, title_style());
            }
            ListLine::Entry(index) => {
                render_entry_row(
                    app,
                    &app.entries[index],
                    now_ms,
                    theme,
                    (area.x, y, width),
                    buffer,
                );
            }
        }
    }
    // The rule between the list and the pane.
    let rule_x = area.x + area.width;
    for y in area.y..area.y + area.height {
        buffer.set_string(rule_x, y, "│", theme.dim());
    }
}
