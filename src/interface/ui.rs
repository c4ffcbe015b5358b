//! Drawing the interface: pure functions of the [`App`] state into a ratatui frame.
//!
//! The list on the left, the selected entry's pane on the right (drawn cell by cell from its
//! screen snapshot: the process's bytes never reach the terminal), the bar at the bottom, and
//! the help over it all. Nothing here changes state. One file per widget in `ui/`: `theme`,
//! `list`, `header`, `pane`, `bar`, `help`.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::core::EntryInfo;
use crate::interface::app::{App, MIN_COLS, MIN_ROWS, Mode};

mod bar;
mod header;
mod help;
mod list;
mod pane;
mod theme;

use bar::render_bar;
use header::render_header;
use help::render_help;
use list::render_list;
use pane::render_pane;
use theme::Theme;
pub(crate) use theme::no_color;

fn elapsed_ms(entry: &EntryInfo, now_ms: u64) -> u64 {
    entry
        .ended_ms
        .unwrap_or(now_ms)
        .saturating_sub(entry.started_ms)
}

/// Draws the whole interface.
pub(crate) fn render(app: &App, now_ms: u64, frame: &mut Frame<'_>) {
    let theme = Theme {
        color: app.color,
        colors: app.settings.theme,
    };
    let area = frame.area();
    let Some(layout) = app.layout() else {
        render_too_small(area, &theme, frame.buffer_mut());
        return;
    };
    if !app.zoom {
        render_list(app, now_ms, &theme, layout, frame.buffer_mut());
    }
    if let Some(entry) = app.selected_entry() {
        render_header(
            app,
            entry,
            now_ms,
            &theme,
            layout.header,
            frame.buffer_mut(),
        );
    }
    render_other_panes(app, now_ms, &theme, frame.buffer_mut());
    if let Some(pane) = &app.pane {
        render_pane(
            pane,
            search_marks(app),
            &theme,
            layout.pane,
            frame.buffer_mut(),
        );
        if let Some(selection) = &app.selection {
            pane::render_selection(selection, layout.pane, frame.buffer_mut());
        }
        if app.mode == Mode::Focus {
            if let Some(cursor) = pane.cursor {
                frame.set_cursor_position(Position::new(
                    layout.pane.x + cursor.col,
                    layout.pane.y + cursor.row,
                ));
            }
        }
    } else {
        let text = match &app.filter {
            Some(filter) if app.listed().is_empty() => format!(
                "Nothing in the list holds `{}`: Esc clears the filter.",
                crate::inert::escaped(filter)
            ),
            _ => format!(
                "No calls yet: press {} to start one.",
                app.key_of(crate::interface::app::Action::NewCall)
            ),
        };
        let hint = Paragraph::new(Line::styled(text, theme.dim()));
        frame.render_widget(hint, layout.pane);
    }
    render_bar(app, &theme, layout.bar, frame);
    if let Mode::Help(help) = app.mode {
        render_help(app, help, &theme, area, frame);
    }
}

/// What the focused pane marks of the search: its matches, and the row of the current one when
/// the pane shows the history it is in.
fn search_marks(app: &App) -> Option<pane::Marks<'_>> {
    let search = app.search.as_ref()?;
    let current_row = search
        .current_line()
        .zip(app.pane_first_line)
        .and_then(|(line, first)| line.checked_sub(first))
        .and_then(|row| usize::try_from(row).ok());
    Some(pane::Marks {
        matcher: &search.matcher,
        current_row,
    })
}

/// In a split view, the panes besides the focused one, live, and the rules between panes side
/// by side.
fn render_other_panes(app: &App, now_ms: u64, theme: &Theme, buffer: &mut Buffer) {
    for area in app.pane_areas() {
        if area.header.x > 0 {
            let rule_x = area.header.x - 1;
            for y in area.header.y..area.pane.bottom() {
                buffer.set_string(rule_x, y, "│", theme.dim());
            }
        }
        if app.selected.as_deref() == Some(area.id.as_str()) {
            continue;
        }
        if let Some(entry) = app.entries.iter().find(|entry| entry.id == area.id) {
            render_header(app, entry, now_ms, theme, area.header, buffer);
        }
        if let Some(pane) = app.split_panes.get(&area.id) {
            render_pane(pane, None, theme, area.pane, buffer);
        }
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

/// The text of a buffer, a line a row, trailing blanks removed: what headless mode prints.
#[must_use]
pub(crate) fn buffer_text(buffer: &Buffer) -> String {
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

    use crate::core::{EntryKind, EntryState};
    use crate::interface::app::PromptPurpose;
    use insta::assert_snapshot;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Modifier};

    use super::*;
    use crate::interface::app::{Action, Input, Prompt};
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
            log_cut: None,
            waiting_for_input: None,
            ready: None,
            project: None,
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

    /// The selected call waits for input with a long prompt, the pane is scrolled back and
    /// what the call costs is sampled: every part of the header wants room.
    fn crowded(cols: u16) -> App {
        let mut app = app(cols, 12);
        app.entries[0].waiting_for_input =
            Some("type a line and press Enter (Ctrl-D ends the input)".into());
        app.scroll = 61;
        app.usage.insert(
            "c1".into(),
            crate::interface::app::usage::Usage {
                cpu_percent: Some(12.0),
                memory_bytes: 34 << 20,
            },
        );
        app
    }

    /// The header's row, right of the list.
    fn header_line(app: &App) -> String {
        let screen = text(app);
        let x = usize::from(app.layout().expect("fits").header.x);
        screen
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .skip(x)
            .collect()
    }

    #[test]
    fn the_header_drops_its_least_parts_whole_and_marks_what_it_cuts() {
        // 200 columns: all but the cost; the prompt cut at its most, marked.
        let wide = header_line(&crowded(200));
        assert_eq!(
            wide,
            " ? cargo build --release  running · pid 4242 · 1m · c1  [waiting for input: type a \
             line and press Enter (Ctrl-D end…]  [61 lines back · End for live]"
        );
        // 120: the cost, pid, age and id go; the prompt, then the label, are cut.
        assert_eq!(
            header_line(&crowded(120)),
            " ? cargo build -…  running  [waiting for input: type a …]  [61 lines back · End for \
             live]"
        );
        // 80: the prompt goes too; the state and the scroll stay.
        assert_eq!(
            header_line(&crowded(80)),
            " ? cargo buil…  running  [61 lines back · End for live]"
        );
        // Without a prompt and scrolling: the cost goes first, whole.
        let mut plain = crowded(80);
        plain.entries[0].waiting_for_input = None;
        plain.scroll = 0;
        assert_eq!(
            header_line(&plain),
            " ▶ cargo build --release  running · pid 4242 · 1m · c1"
        );
        plain.term_size = (120, 12);
        assert!(
            header_line(&plain).ends_with("· c1  cpu 12% · mem 34M"),
            "{}",
            header_line(&plain)
        );
        // At every width, the line ends with a whole part or a marked cut, and the state stays.
        for cols in 40..=200 {
            let mut app = crowded(cols);
            let header = header_line(&app);
            assert!(
                ["]", "running", "…"]
                    .iter()
                    .any(|end| header.ends_with(end)),
                "{cols}: {header:?}"
            );
            assert!(header.contains("running"), "{cols}: {header:?}");
            app.scroll = 0;
            app.entries[0].waiting_for_input = None;
            let header = header_line(&app);
            assert!(
                ["c1", "34M", "running", "…"]
                    .iter()
                    .any(|end| header.ends_with(end)),
                "{cols}: {header:?}"
            );
            assert!(header.contains("running"), "{cols}: {header:?}");
        }
    }

    #[test]
    fn the_screen_at_80_120_and_200_columns() {
        for cols in [80, 120, 200] {
            insta::assert_snapshot!(format!("crowded_{cols}"), text(&crowded(cols)));
        }
    }

    /// Where `needle` ends in `line`, in columns (one a character here).
    fn column_after(line: &str, needle: &str) -> usize {
        let at = line
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in {line:?}"));
        line[..at + needle.len()].chars().count()
    }

    #[test]
    fn a_wide_list_labels_its_columns_and_puts_every_time_in_one() {
        let screen = text(&crowded(200));
        let row = |start: &str| {
            screen
                .lines()
                .find(|line| line.starts_with(start))
                .unwrap_or_else(|| panic!("no {start:?} row:\n{screen}"))
        };
        let running = row(" ? cargo build");
        let task = row(" ◆ dev-server");
        let finished = row(" ✓ cargo test");
        let killed = row(" ■ sleep 600");
        let time = column_after(running, " 1m");
        assert_eq!(column_after(task, "1h01m"), time, "{screen}");
        assert_eq!(column_after(finished, "11s"), time, "{screen}");
        assert_eq!(column_after(killed, "29s"), time, "{screen}");
        assert!(running.contains(" 12%  34M "), "{running}");
        // The labels stand over their columns.
        let title = row("Running");
        assert_eq!(column_after(title, "time"), time, "{screen}");
        assert_eq!(column_after(title, "cpu"), column_after(running, "12%"));
        assert_eq!(column_after(title, "mem"), column_after(running, "34M"));
        let title = row("Finished");
        assert_eq!(column_after(title, "time"), time, "{screen}");
        assert_eq!(column_after(title, "exit"), column_after(killed, "s15"));
        assert_eq!(column_after(finished, " 0"), column_after(killed, "s15"));
    }

    #[test]
    fn the_bar_shows_restart_drops_hints_whole_and_cuts_a_notice_with_an_ellipsis() {
        let bar = |app: &App| text(app).lines().last().unwrap_or_default().to_owned();
        let mut app = app(80, 10);
        assert_eq!(
            bar(&app),
            "d detach  n new  r restart  x kill  Enter type  / search  z zoom  ? help  q quit"
        );
        app.term_size = (50, 10);
        assert_eq!(bar(&app), "d detach  n new  r restart  x kill  Enter type");
        app.say(
            "settings not used: keys.quit: `ctrl-q` is bound twice (expected a key like q, \
             ctrl-a, up, f5)",
            true,
        );
        let said = bar(&app);
        assert_eq!(said.chars().count(), 50, "{said}");
        assert!(said.ends_with("is bound t…"), "{said}");
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
    fn the_theme_colors_the_states_and_the_rules() {
        let mut app = app(80, 14);
        // The last selected: the others' symbols are drawn in their state's color.
        app.settings.theme.task = Color::Rgb(0x10, 0x20, 0x30);
        app.settings.theme.failed = Color::LightRed;
        app.settings.theme.border = Color::Indexed(240);
        app.act(Action::SelectLast);
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        let screen = buffer_text(buffer);
        let cell_of = |symbol: &str| {
            let row = screen
                .lines()
                .position(|line| line.starts_with(&format!(" {symbol}")))
                .unwrap_or_else(|| panic!("no {symbol} row:\n{screen}"));
            buffer
                .cell((1, u16::try_from(row).unwrap()))
                .expect("cell")
                .clone()
        };
        assert_eq!(cell_of("◆").fg, Color::Rgb(0x10, 0x20, 0x30), "a task");
        assert_eq!(cell_of("✗").fg, Color::LightRed, "a failure");
        let layout = app.layout().expect("fits");
        let rule = buffer.cell((layout.pane.x - 1, 3)).expect("the rule");
        assert_eq!((rule.symbol(), rule.fg), ("│", Color::Indexed(240)));
    }

    #[test]
    fn a_help_taller_than_the_terminal_scrolls_to_its_last_line() {
        let mut app = app(80, 24);
        app.act(crate::interface::app::Action::Help);
        let first = text(&app);
        assert!(
            first.contains("more below: j ↓") && !first.contains("quit (asks"),
            "{first}"
        );
        for _ in 0..5 {
            app.handle_input(Input::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::PageDown,
                crossterm::event::KeyModifiers::NONE,
            )));
        }
        let last = text(&app);
        assert!(
            last.contains("quit (asks")
                && last.contains("any other key closes")
                && !last.contains("more below"),
            "{last}"
        );
        assert!(matches!(app.mode, Mode::Help(_)), "scrolling keeps it open");
        app.handle_input(Input::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('x'),
            crossterm::event::KeyModifiers::NONE,
        )));
        assert_eq!(app.mode, Mode::Normal);
    }

    #[test]
    fn a_capped_log_is_marked_and_told() {
        let mut app = app(100, 10);
        let mut entries = app.entries.clone();
        entries[0].log_cut = Some(crate::output::LogCut {
            cap: 4 << 30,
            head: 1 << 30,
            left_out: 12 << 30,
            newest: 5 << 29,
        });
        app.set_entries(entries);
        let notice = app.notice.as_ref().expect("told in the bar");
        assert!(
            !notice.is_error
                && notice.text.contains(
                    "log capped at 4.0 GiB: 12.0 GiB left out between the first 1.0 GiB and \
                     the newest 2.5 GiB"
                ),
            "{}",
            notice.text
        );
        assert_snapshot!(text(&app));
        app.notice = None;
        app.set_entries(app.entries.clone());
        assert!(app.notice.is_none(), "told once");
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
                purpose: PromptPurpose::DetachName {
                    id: "c1".into(),
                    proposed: "cargo-build".into(),
                },
                text: "cargo-build".into(),
                proposal: true,
            })
        );
        assert_snapshot!(text(&app));
    }

    #[test]
    fn the_help_lists_every_key() {
        let mut app = app(90, 37);
        app.act(Action::Help);
        let screen = text(&app);
        for binding in &app.settings.keymap {
            assert!(
                screen.contains(binding.action.describe()),
                "{:?}",
                binding.action
            );
        }
        assert_snapshot!(screen);
    }

    #[test]
    fn search_matches_are_marked_and_the_current_one_apart() {
        use crate::interface::app::Search;
        use ratatui::style::Modifier;
        for color in [true, false] {
            let mut app = app(80, 8);
            app.color = color;
            // A regular expression, in smart case; the pane shows lines 10 on, the current
            // match is line 11.
            app.search = Some(Search {
                pattern: "Finished|ERR".into(),
                matcher: crate::output::Matcher::new("Finished|ERR"),
                hit: Some(crate::output::SearchHit {
                    line: Some(11),
                    rank: 2,
                    matches: 5,
                }),
            });
            app.pane_first_line = Some(10);
            let terminal = draw(&app);
            let buffer = terminal.backend().buffer();
            let pane = app.layout().expect("fits").pane;
            let cell = |col, row| buffer.cell((pane.x + col, pane.y + row)).expect("cell");
            for col in 4..12 {
                let current = cell(col, 1);
                if color {
                    assert_eq!(current.bg, Color::Yellow, "column {col}");
                    assert!(current.modifier.contains(Modifier::BOLD), "column {col}");
                } else {
                    assert_eq!(current.bg, Color::Reset, "column {col}");
                    assert!(
                        current.modifier.contains(Modifier::REVERSED),
                        "column {col}"
                    );
                }
            }
            assert!(!cell(3, 1).modifier.contains(Modifier::REVERSED));
            assert_ne!(cell(3, 1).bg, Color::Yellow);
            // `ERR` has capitals: exact, so `error` is no match of it.
            assert!(!cell(0, 2).modifier.contains(Modifier::UNDERLINED));
            let text = buffer_text(buffer);
            assert!(text.contains("match 2/5  n older  N newer"), "{text}");
            if color {
                assert_snapshot!(text);
            }
        }
        // Another match in view is marked, less than the current one.
        let mut app = app(80, 8);
        app.search = Some(Search {
            pattern: "e".into(),
            matcher: crate::output::Matcher::new("[ei]n"),
            hit: None,
        });
        let terminal = draw(&app);
        let buffer = terminal.backend().buffer();
        let pane = app.layout().expect("fits").pane;
        let other = buffer.cell((pane.x + 5, pane.y + 1)).expect("cell");
        assert_eq!(other.fg, Color::Yellow);
        assert!(other.modifier.contains(Modifier::UNDERLINED));
        assert_ne!(other.bg, Color::Yellow);
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
    fn quitting_an_interface_of_the_server_quits_without_a_question() {
        let mut app = app(120, 8);
        app.processes_outlive = true;
        app.act(Action::Quit);
        assert!(app.quit);
        assert_eq!(app.mode, Mode::Normal);
        assert!(!text(&app).contains("still running"), "{}", text(&app));
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
