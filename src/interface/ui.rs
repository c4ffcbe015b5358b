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

use crate::core::{EntryInfo, EntryKind, EntryState};
use crate::interface::app::{
    App, Confirm, Layout, ListLine, MIN_COLS, MIN_ROWS, Mode, PromptPurpose, list_lines,
    list_offset,
};
use crate::output::match_ranges;
use crate::screen::{Cell as ScreenCell, CellColor, ScreenSnapshot};
use crate::time::format_elapsed;

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

fn elapsed_ms(entry: &EntryInfo, now_ms: u64) -> u64 {
    entry
        .ended_ms
        .unwrap_or(now_ms)
        .saturating_sub(entry.started_ms)
}

/// Whether oino's own colors are off (<https://no-color.org>).
#[must_use]
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
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
                // `!`: its log could not be written (the header and the bar say why).
                let mark = if entry.log_error.is_some() { '!' } else { ' ' };
                let text = format!(
                    " {}{mark}{label:<label_width$} {right}",
                    state_symbol(entry)
                );
                let style = if selected {
                    selected_style()
                } else {
                    Style::new()
                };
                buffer.set_stringn(area.x, y, &text, width, style);
                if !selected {
                    buffer.set_stringn(area.x + 1, y, state_symbol(entry), 1, theme.state(entry));
                    if entry.log_error.is_some() {
                        buffer.set_stringn(area.x + 2, y, "!", 1, theme.fg(Color::Red));
                    }
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
    let state = match (&entry.task_id, entry.state) {
        (Some(task_id), EntryState::Running) => format!("task {task_id}, running"),
        (_, state) => state.to_string(),
    };
    let mut right = vec![Span::styled(
        format!(
            "  {state} · pid {} · {} · {}",
            entry.pid,
            format_elapsed(elapsed_ms(entry, now_ms)),
            entry.id
        ),
        theme.dim(),
    )];
    if entry.log_error.is_some() {
        right.push(Span::styled(
            "  [log not written: output kept in memory]",
            theme.fg(Color::Red),
        ));
    }
    if app.scroll > 0 {
        right.push(Span::styled(
            format!("  [{} lines back · End for live]", app.scroll),
            theme.fg(Color::Yellow),
        ));
    }
    if let Some(query) = &app.search {
        right.push(Span::styled(
            format!("  [search: {query}]"),
            theme.fg(Color::Yellow),
        ));
    }
    // The label gives way to the state, the position and the search.
    let right_width: usize = right.iter().map(Span::width).sum();
    let label_width = usize::from(area.width)
        .saturating_sub(right_width + 3)
        .max(8);
    let mut label: String = entry.label().chars().take(label_width).collect();
    if label.chars().count() < entry.label().chars().count() {
        label.pop();
        label.push('…');
    }
    let mut spans = vec![
        Span::styled(format!(" {} ", state_symbol(entry)), theme.state(entry)),
        Span::styled(label, title_style()),
    ];
    spans.extend(right);
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
            // Each frame starts blank: a blank cell costs nothing.
            if cell.text.is_empty() && *cell == ScreenCell::default() {
                continue;
            }
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
        Mode::Confirm(Confirm::Quit { running }) if app.processes_outlive => Line::from(vec![
            Span::styled(
                format!(
                    "{running} still running: quit? They keep running in the oino server (`oino` \
                     comes back to them) "
                ),
                theme.fg(Color::Yellow),
            ),
            Span::styled("y to quit, any other key to stay", theme.dim()),
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
        if app.search.is_some() && binding.action == crate::interface::app::Action::NewCall {
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use insta::assert_snapshot;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::interface::app::{Action, Prompt};
    use crate::pty::TermSize;
    use crate::screen::Screen;

    /// A fixed "now", so that elapsed times do not move.
    const NOW_MS: u64 = 1_800_000_000_000;

    fn entry(id: &str, command: &str, kind: EntryKind, state: EntryState, age_s: u64) -> EntryInfo {
        EntryInfo {
            id: id.to_owned(),
            kind,
            task_id: (kind == EntryKind::Task).then(|| "t1".to_owned()),
            name: (kind == EntryKind::Task).then(|| "dev-server".to_owned()),
            title: None,
            command: command.to_owned(),
            cwd: PathBuf::from("/work"),
            pid: 4242,
            started_ms: NOW_MS - age_s * 1000,
            detached_ms: None,
            ended_ms: (!state.is_running()).then_some(NOW_MS - 1000),
            state,
            timed_out: false,
            bytes: 0,
            detach_offset: 0,
            log_path: PathBuf::from("/tmp/x.log"),
            log_error: None,
        }
    }

    fn app(cols: u16, rows: u16) -> App {
        let mut app = App::new((cols, rows), true);
        app.entries = vec![
            entry(
                "c1",
                "cargo build --release",
                EntryKind::Call,
                EntryState::Running,
                75,
            ),
            entry(
                "c2",
                "npm run dev",
                EntryKind::Task,
                EntryState::Running,
                3700,
            ),
            entry(
                "c3",
                "cargo test",
                EntryKind::Call,
                EntryState::Exited { code: 0 },
                12,
            ),
            entry(
                "c4",
                "make lint",
                EntryKind::Call,
                EntryState::Exited { code: 2 },
                5,
            ),
            entry(
                "c5",
                "sleep 600",
                EntryKind::Call,
                EntryState::Killed { signal: 15 },
                30,
            ),
        ];
        app.selected = Some("c1".to_owned());
        let pane = app.pane_size().expect("fits");
        let mut screen = Screen::new(pane, 100);
        screen.feed(
            b"   Compiling oino v0.1.0\r\n\x1b[1;32m    Finished\x1b[0m release in 3.2s\r\n\
              \x1b[31merror\x1b[0m: 1 warning\r\n",
        );
        app.pane = Some(screen.snapshot(0));
        app
    }

    fn draw(app: &App) -> Terminal<TestBackend> {
        let (cols, rows) = app.term_size;
        let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("terminal");
        terminal
            .draw(|frame| render(app, NOW_MS, frame))
            .expect("draw");
        terminal
    }

    fn text(app: &App) -> String {
        buffer_text(draw(app).backend().buffer())
    }

    #[test]
    fn the_list_shows_every_state_and_the_pane_the_selected_output() {
        assert_snapshot!(text(&app(80, 14)));
    }

    #[test]
    fn a_log_that_could_not_be_written_is_marked_and_told() {
        let mut app = app(100, 10);
        let mut entries = app.entries.clone();
        entries[0].log_error = Some("writing /x.log: No space left on device (os error 28)".into());
        app.set_entries(entries);
        let notice = app.notice.as_ref().expect("told in the bar");
        assert!(
            notice.is_error && notice.text.contains("No space left"),
            "{}",
            notice.text
        );
        assert_snapshot!(text(&app));
        // Told once.
        app.notice = None;
        app.set_entries(app.entries.clone());
        assert!(app.notice.is_none());
    }

    #[test]
    fn the_pane_keeps_the_programs_colors() {
        let app = app(60, 8);
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        let pane = app.layout().expect("fits").pane;
        let finished = buffer.cell((pane.x + 4, pane.y + 1)).expect("cell");
        assert_eq!(finished.symbol(), "F");
        assert_eq!(finished.fg, Color::Indexed(2));
        assert!(finished.modifier.contains(Modifier::BOLD));
        let error = buffer.cell((pane.x, pane.y + 2)).expect("cell");
        assert_eq!(error.fg, Color::Indexed(1));
        assert_snapshot!(format!("{buffer:?}"));
    }

    #[test]
    fn the_detach_prompt_offers_a_derived_name() {
        let mut app = app(80, 10);
        app.act(Action::Detach);
        assert_eq!(
            app.mode,
            Mode::Prompt(Prompt {
                purpose: PromptPurpose::DetachName { id: "c1".into() },
                text: "cargo-build".into()
            })
        );
        assert_snapshot!(text(&app));
    }

    #[test]
    fn the_help_lists_every_key() {
        let mut app = app(90, 32);
        app.act(Action::Help);
        let screen = text(&app);
        for binding in &app.keymap {
            assert!(
                screen.contains(binding.action.describe()),
                "{:?}",
                binding.action
            );
        }
        assert_snapshot!(screen);
    }

    #[test]
    fn search_matches_are_highlighted() {
        let mut app = app(80, 8);
        app.search = Some("finished".into());
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        let pane = app.layout().expect("fits").pane;
        for col in 4..12 {
            let cell = buffer.cell((pane.x + col, pane.y + 1)).expect("cell");
            assert_eq!(cell.bg, Color::Yellow, "column {col}");
        }
        assert_ne!(
            buffer.cell((pane.x + 3, pane.y + 1)).expect("cell").bg,
            Color::Yellow
        );
        assert_snapshot!(buffer_text(buffer));
    }

    #[test]
    fn a_terminal_too_small_says_so() {
        let mut app = app(80, 10);
        app.term_size = (30, 6);
        assert_snapshot!(text(&app));
    }

    #[test]
    fn quitting_with_processes_running_asks_first() {
        let mut app = app(80, 8);
        app.act(Action::Quit);
        assert!(!app.quit);
        assert_snapshot!(text(&app));
    }

    #[test]
    fn quitting_an_interface_of_the_server_says_the_processes_stay() {
        let mut app = app(120, 8);
        app.processes_outlive = true;
        app.act(Action::Quit);
        assert!(text(&app).contains("They keep running in the oino server"));
    }

    #[test]
    fn without_color_the_chrome_has_none() {
        let mut app = app(80, 8);
        app.color = false;
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        let layout = app.layout().expect("fits");
        for y in 0..layout.list.height {
            for x in 0..layout.list.width {
                let cell = buffer.cell((x, y)).expect("cell");
                assert_eq!(cell.fg, Color::Reset, "({x}, {y})");
            }
        }
        // The program's own colors stay.
        assert_eq!(
            buffer
                .cell((layout.pane.x + 4, layout.pane.y + 1))
                .expect("cell")
                .fg,
            Color::Indexed(2)
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let mut app = app(80, 8);
        let mut screen = Screen::new(TermSize::new(40, 5), 0);
        screen.feed(b"title\x1b]0;evil\x07 clip\x1b]52;c;aGk=\x07 bell\x07 end");
        app.pane = Some(screen.snapshot(0));
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        for cell in buffer.content() {
            assert!(
                !cell.symbol().chars().any(char::is_control),
                "{:?}",
                cell.symbol()
            );
        }
        assert!(buffer_text(buffer).contains("title clip bell end"));
    }
}
