//! Drawing the interface: pure functions of the [`App`] state into a ratatui frame.
//!
//! The list on the left, the selected entry's pane on the right (drawn cell by cell from its
//! screen snapshot: the process's bytes never reach the terminal), the bar at the bottom, and
//! the help over it all. Nothing here changes state.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::{
    App, Confirm, Layout, MIN_COLS, MIN_ROWS, Mode, PromptPurpose, Section, match_ranges,
};
use crate::core::{EntryInfo, EntryKind, EntryState};
use crate::screen::{Cell as ScreenCell, CellColor, ScreenSnapshot};

/// The colors of oino's own chrome, or none at all under `NO_COLOR`.
struct Theme {
    color: bool,
}

impl Theme {
    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    fn dim(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    fn state(&self, entry: &EntryInfo) -> Style {
        match (entry.state, entry.kind) {
            (EntryState::Running, EntryKind::Call) => self.fg(Color::Cyan),
            (EntryState::Running, EntryKind::Task) => self.fg(Color::Magenta),
            (EntryState::Exited { code: 0 }, _) => self.fg(Color::Green),
            _ => self.fg(Color::Red),
        }
    }

    fn match_highlight(&self) -> Style {
        if self.color {
            Style::new().bg(Color::Yellow).fg(Color::Black)
        } else {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::UNDERLINED)
        }
    }
}

fn selected_style() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

fn title_style() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// The symbol of an entry's state.
#[must_use]
pub fn state_symbol(entry: &EntryInfo) -> &'static str {
    match (entry.state, entry.kind) {
        (EntryState::Running, EntryKind::Call) => "▶",
        (EntryState::Running, EntryKind::Task) => "◆",
        (EntryState::Exited { code: 0 }, _) => "✓",
        (EntryState::Exited { .. }, _) => "✗",
        (EntryState::Killed { .. }, _) => "■",
    }
}

/// `12s`, `3m04s`, `2h05m`.
#[must_use]
pub fn format_elapsed(ms: u64) -> String {
    let seconds = ms / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

fn elapsed_ms(entry: &EntryInfo, now_ms: u64) -> u64 {
    entry
        .ended_ms
        .unwrap_or(now_ms)
        .saturating_sub(entry.started_ms)
}

/// One line of the list: a section's title or an entry (by index in `app.entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListLine {
    Title(Section),
    Entry(usize),
}

fn list_lines(app: &App) -> Vec<ListLine> {
    let mut lines = Vec::with_capacity(app.entries.len() + 3);
    let mut section = None;
    for (index, entry) in app.entries.iter().enumerate() {
        let this = Section::of(entry);
        if section != Some(this) {
            lines.push(ListLine::Title(this));
            section = Some(this);
        }
        lines.push(ListLine::Entry(index));
    }
    lines
}

/// The first list line shown, so that the selected entry is in view.
fn list_offset(app: &App, lines: &[ListLine], height: usize) -> usize {
    let selected = app
        .selected
        .as_deref()
        .and_then(|id| app.entries.iter().position(|entry| entry.id == id))
        .and_then(|index| {
            lines
                .iter()
                .position(|line| *line == ListLine::Entry(index))
        })
        .unwrap_or(0);
    (selected + 1).saturating_sub(height)
}

/// The entry shown on screen row `row` of the list, if any.
#[must_use]
pub fn list_row_entry(app: &App, layout: Layout, row: u16) -> Option<usize> {
    let lines = list_lines(app);
    let offset = list_offset(app, &lines, usize::from(layout.list.height));
    let index = usize::from(row.checked_sub(layout.list.y)?) + offset;
    match lines.get(index)? {
        ListLine::Entry(entry) => Some(*entry),
        ListLine::Title(_) => None,
    }
}

/// Draws the whole interface.
pub fn render(app: &App, now_ms: u64, frame: &mut Frame<'_>) {
    let theme = Theme { color: app.color };
    let area = frame.area();
    let Some(layout) = app.layout() else {
        render_too_small(area, &theme, frame.buffer_mut());
        return;
    };
    if !app.zoom {
        render_list(app, now_ms, &theme, layout, frame.buffer_mut());
    }
    render_header(app, now_ms, &theme, layout.header, frame.buffer_mut());
    if let Some(pane) = &app.pane {
        render_pane(
            pane,
            app.search.as_deref(),
            &theme,
            layout.pane,
            frame.buffer_mut(),
        );
        if app.mode == Mode::Focus {
            if let Some(cursor) = pane.cursor {
                frame.set_cursor_position(Position::new(
                    layout.pane.x + cursor.col,
                    layout.pane.y + cursor.row,
                ));
            }
        }
    } else {
        let hint = Paragraph::new(Line::styled(
            "No calls yet: press n to start one.",
            theme.dim(),
        ));
        frame.render_widget(hint, layout.pane);
    }
    render_bar(app, &theme, layout.bar, frame);
    if app.mode == Mode::Help {
        render_help(app, &theme, area, frame);
    }
}

fn render_too_small(area: Rect, theme: &Theme, buffer: &mut Buffer) {
    let message = format!(
        "Terminal too small: {}x{}, oino needs at least {MIN_COLS}x{MIN_ROWS}.",
        area.width, area.height
    );
    Paragraph::new(message)
        .style(theme.error())
        .wrap(Wrap { trim: true })
        .render(area, buffer);
}

fn render_list(app: &App, now_ms: u64, theme: &Theme, layout: Layout, buffer: &mut Buffer) {
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
            ListLine::Title(section) => {
                buffer.set_stringn(area.x, y, section.title(), width, title_style());
            }
            ListLine::Entry(index) => {
                let entry = &app.entries[index];
                let selected = app.selected.as_deref() == Some(entry.id.as_str());
                let elapsed = format_elapsed(elapsed_ms(entry, now_ms));
                let right = match entry.state {
                    EntryState::Exited { code } => format!("{elapsed} {code:>3}"),
                    EntryState::Killed { signal } => format!("{elapsed} s{signal:<2}"),
                    EntryState::Running => elapsed,
                };
                let label_width = width.saturating_sub(right.chars().count() + 4);
                let label: String = entry.label().chars().take(label_width).collect();
                let text = format!(" {} {label:<label_width$} {right}", state_symbol(entry));
                let style = if selected {
                    selected_style()
                } else {
                    Style::new()
                };
                buffer.set_stringn(area.x, y, &text, width, style);
                if !selected {
                    buffer.set_stringn(area.x + 1, y, state_symbol(entry), 1, theme.state(entry));
                }
            }
        }
    }
    // The rule between the list and the pane.
    let rule_x = area.x + area.width;
    for y in area.y..area.y + area.height {
        buffer.set_string(rule_x, y, "│", theme.dim());
    }
}

fn render_header(app: &App, now_ms: u64, theme: &Theme, area: Rect, buffer: &mut Buffer) {
    let Some(entry) = app.selected_entry() else {
        return;
    };
    let state = match entry.state {
        EntryState::Running => match &entry.task_id {
            Some(task_id) => format!("task {task_id}, running"),
            None => "running".to_owned(),
        },
        EntryState::Exited { code } => format!("exited {code}"),
        EntryState::Killed { signal } => format!("killed by signal {signal}"),
    };
    let mut spans = vec![
        Span::styled(format!(" {} ", state_symbol(entry)), theme.state(entry)),
        Span::styled(entry.label().to_owned(), title_style()),
        Span::styled(
            format!(
                "  {state} · pid {} · {} · {}",
                entry.pid,
                format_elapsed(elapsed_ms(entry, now_ms)),
                entry.id
            ),
            theme.dim(),
        ),
    ];
    if app.scroll > 0 {
        spans.push(Span::styled(
            format!("  [{} rows back · End for live]", app.scroll),
            theme.fg(Color::Yellow),
        ));
    }
    if let Some(query) = &app.search {
        spans.push(Span::styled(
            format!("  [search: {query}]"),
            theme.fg(Color::Yellow),
        ));
    }
    Line::from(spans).render(area, buffer);
}

fn cell_color(color: CellColor) -> Color {
    match color {
        CellColor::Default => Color::Reset,
        CellColor::Indexed(index) => Color::Indexed(index),
        CellColor::Rgb(red, green, blue) => Color::Rgb(red, green, blue),
    }
}

fn cell_style(cell: &ScreenCell) -> Style {
    let mut style = Style::new().fg(cell_color(cell.fg)).bg(cell_color(cell.bg));
    let attrs = cell.attrs;
    for (on, modifier) in [
        (attrs.bold, Modifier::BOLD),
        (attrs.dim, Modifier::DIM),
        (attrs.italic, Modifier::ITALIC),
        (attrs.underline, Modifier::UNDERLINED),
        (attrs.inverse, Modifier::REVERSED),
    ] {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    style
}

/// A cell's text, safe to put on the host terminal: no control characters.
fn printable(text: &str) -> Option<&str> {
    (!text.is_empty() && !text.chars().any(char::is_control)).then_some(text)
}

/// Draws a screen snapshot cell by cell, with the search's matches highlighted.
fn render_pane(
    pane: &ScreenSnapshot,
    search: Option<&str>,
    theme: &Theme,
    area: Rect,
    buffer: &mut Buffer,
) {
    for (row_index, row) in pane.rows.iter().enumerate().take(usize::from(area.height)) {
        let y = area.y + u16::try_from(row_index).unwrap_or(u16::MAX);
        for (col_index, cell) in row.iter().enumerate().take(usize::from(area.width)) {
            let x = area.x + u16::try_from(col_index).unwrap_or(u16::MAX);
            if let Some(target) = buffer.cell_mut(Position::new(x, y)) {
                target.set_symbol(printable(&cell.text).unwrap_or(" "));
                target.set_style(cell_style(cell));
            }
        }
        if let Some(query) = search {
            let text: String = row
                .iter()
                .map(|cell| printable(&cell.text).unwrap_or(" "))
                .collect();
            for range in match_ranges(&text, query) {
                for col in range {
                    let x = area.x + u16::try_from(col).unwrap_or(u16::MAX);
                    if x < area.x + area.width {
                        if let Some(target) = buffer.cell_mut(Position::new(x, y)) {
                            target.set_style(theme.match_highlight());
                        }
                    }
                }
            }
        }
    }
}

fn render_bar(app: &App, theme: &Theme, area: Rect, frame: &mut Frame<'_>) {
    let line = match &app.mode {
        Mode::Prompt(prompt) => {
            let (label, keys) = match prompt.purpose {
                PromptPurpose::DetachName { .. } => ("task name: ", "  Enter detach · Esc cancel"),
                PromptPurpose::NewCommand => ("run: ", "  Enter start · Esc cancel"),
                PromptPurpose::Search => ("search: ", "  Enter find · Esc cancel"),
            };
            let x = area.x
                + u16::try_from(label.chars().count() + prompt.text.chars().count())
                    .unwrap_or(u16::MAX);
            frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
            Line::from(vec![
                Span::styled(label, title_style()),
                Span::raw(prompt.text.clone()),
                Span::styled(keys, theme.dim()),
            ])
        }
        Mode::Confirm(Confirm::Kill { label, .. }) => Line::from(vec![
            Span::styled(
                format!("Kill `{label}` and all its processes? "),
                theme.error(),
            ),
            Span::styled("y to kill, any other key to keep it", theme.dim()),
        ]),
        Mode::Confirm(Confirm::Quit { running }) => Line::from(vec![
            Span::styled(
                format!("{running} still running: quit and end them all? "),
                theme.error(),
            ),
            Span::styled("y to quit, any other key to stay", theme.dim()),
        ]),
        Mode::Focus => {
            let label = app.selected_entry().map_or("", EntryInfo::label);
            Line::from(vec![
                Span::styled(format!("typing into `{label}`"), theme.fg(Color::Cyan)),
                Span::styled(
                    " · every key goes to the process · Ctrl-A to come back",
                    theme.dim(),
                ),
            ])
        }
        Mode::Normal | Mode::Help => match &app.notice {
            Some(notice) if notice.is_error => Line::styled(notice.text.clone(), theme.error()),
            Some(notice) => Line::styled(notice.text.clone(), theme.fg(Color::Green)),
            None => hints(app, theme),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The key hints, from the keymap.
fn hints(app: &App, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    if app.search.is_some() {
        spans.push(Span::styled("n/N", title_style()));
        spans.push(Span::styled(" next/previous match  ", theme.dim()));
        spans.push(Span::styled("Esc", title_style()));
        spans.push(Span::styled(" end search  ", theme.dim()));
    }
    for binding in &app.keymap {
        let Some(hint) = binding.hint else {
            continue;
        };
        if app.search.is_some() && binding.action == crate::app::Action::NewCall {
            continue;
        }
        let key = binding.label.split(' ').next().unwrap_or(binding.label);
        spans.push(Span::styled(key.to_owned(), title_style()));
        spans.push(Span::styled(format!(" {hint}  "), theme.dim()));
    }
    Line::from(spans)
}

fn render_help(app: &App, theme: &Theme, area: Rect, frame: &mut Frame<'_>) {
    let mut lines = vec![Line::styled("Keys", title_style()), Line::raw("")];
    for binding in &app.keymap {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<9}", binding.label), title_style()),
            Span::raw(binding.action.describe()),
        ]));
    }
    lines.extend([
        Line::raw(""),
        Line::from(vec![
            Span::styled("  Ctrl-A   ", title_style()),
            Span::raw("while typing into a process: come back"),
        ]),
        Line::from(vec![
            Span::styled("  Esc      ", title_style()),
            Span::raw("cancel a prompt, end a search"),
        ]),
        Line::from(vec![
            Span::styled("  Mouse    ", title_style()),
            Span::raw("the wheel scrolls, a click selects"),
        ]),
        Line::raw(""),
        Line::styled("Any key closes this help.", theme.dim()),
    ]);
    let height = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let width = 72.min(area.width);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" oino help ")
                .border_style(theme.dim()),
        ),
        popup,
    );
}

/// The text of a buffer, a line a row, trailing blanks removed: what headless mode prints.
#[must_use]
pub fn buffer_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut text = String::with_capacity(usize::from(area.width + 1) * usize::from(area.height));
    for y in area.y..area.y + area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in area.x..area.x + area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer
                .cell(Position::new(x, y))
                .map_or(" ", |cell| cell.symbol());
            line.push_str(symbol);
            // A wide symbol covers the next cell too.
            skip = unicode_width(symbol).saturating_sub(1);
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn unicode_width(symbol: &str) -> usize {
    use ratatui::text::Span;
    Span::raw(symbol).width()
}
