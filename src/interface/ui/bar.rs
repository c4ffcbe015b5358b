//! The bottom bar: the prompt, a question, a notice, or the hints written from the keymap.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::core::EntryInfo;
use crate::interface::app::{Action, App, Confirm, Mode, Prompt, PromptPurpose};

use super::theme::{Theme, title_style};
use crate::interface::fit;

pub(super) fn render_bar(app: &App, theme: &Theme, area: Rect, frame: &mut Frame<'_>) {
    if app.selection.is_some_and(|selection| !selection.by_mouse) {
        let line = Line::from(vec![
            Span::styled("copy: ", title_style()),
            Span::styled(
                "h j k l 0 $ g G move the end · y copies to the clipboard · Esc cancels",
                theme.dim(),
            ),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let width = usize::from(area.width);
    let line = match &app.mode {
        Mode::Prompt(prompt) => prompt_line(app, prompt, theme, area, frame),
        Mode::Confirm(confirm) => cut_line(confirm_line(confirm, theme), width),
        Mode::Focus => cut_line(focus_line(app, theme), width),
        Mode::Normal | Mode::Help(_) => match &app.notice {
            Some(notice) if notice.is_error => {
                Line::styled(fit::cut(&notice.text, width), theme.error())
            }
            Some(notice) => Line::styled(fit::cut(&notice.text, width), theme.fg(Color::Green)),
            None => whole_hints(hints(app, theme), width),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// `line` in `width` columns: what does not fit is cut, and the cut ends with `…`.
fn cut_line(line: Line<'static>, width: usize) -> Line<'static> {
    let mut room = width;
    let mut spans = Vec::with_capacity(line.spans.len());
    for span in line.spans {
        let columns = fit::columns(&span.content);
        if columns > room {
            spans.push(Span::styled(fit::cut(&span.content, room), span.style));
            break;
        }
        room -= columns;
        spans.push(span);
    }
    Line::from(spans)
}

/// The hints that fit in `width` columns, each whole (a key and its word): the last go first.
fn whole_hints(line: Line<'static>, width: usize) -> Line<'static> {
    let mut spans = line.spans;
    let shown = |spans: &[Span<'_>]| {
        let columns: usize = spans.iter().map(|span| fit::columns(&span.content)).sum();
        let trailing = spans
            .last()
            .map_or(0, |span| span.content.len() - span.content.trim_end().len());
        columns - trailing
    };
    // Spans go in pairs: a key, then its word.
    while shown(&spans) > width && spans.len() >= 2 {
        spans.truncate(spans.len() - 2);
    }
    Line::from(spans)
}

/// The key hints, from the keymap.
pub(super) fn hints(app: &App, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    if let Some(search) = &app.search {
        if let Some(position) = search.position() {
            spans.push(Span::styled(
                format!("{position}  "),
                theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ));
        }
        spans.push(Span::styled(app.key_of(Action::NextMatch), title_style()));
        spans.push(Span::styled(" older  ", theme.dim()));
        spans.push(Span::styled(
            app.key_of(Action::PreviousMatch),
            title_style(),
        ));
        spans.push(Span::styled(" newer  ", theme.dim()));
        spans.push(Span::styled("Esc", title_style()));
        spans.push(Span::styled(" end search  ", theme.dim()));
    }
    if app.filter.is_some() && app.search.is_none() {
        spans.push(Span::styled("Esc", title_style()));
        spans.push(Span::styled(" clear filter  ", theme.dim()));
    }
    for binding in &app.settings.keymap {
        let Some(hint) = binding.hint else {
            continue;
        };
        if app.search.is_some() && binding.action == Action::NewCall {
            continue;
        }
        let key = binding.label.split(' ').next().unwrap_or(&binding.label);
        spans.push(Span::styled(key.to_owned(), title_style()));
        spans.push(Span::styled(format!(" {hint}  "), theme.dim()));
    }
    Line::from(spans)
}

/// A line being typed, with the cursor at its end.
fn prompt_line(
    app: &App,
    prompt: &Prompt,
    theme: &Theme,
    area: Rect,
    frame: &mut Frame<'_>,
) -> Line<'static> {
    let (label, keys) = match &prompt.purpose {
        PromptPurpose::DetachName { .. } => ("task name: ".into(), "  Enter detach · Esc cancel"),
        PromptPurpose::NewCommand { host: None } if app.hosts.is_empty() => {
            ("run: ".into(), "  Enter start · Esc cancel")
        }
        PromptPurpose::NewCommand { host: None } => (
            "run on this machine: ".into(),
            "  Enter start · Tab another machine · Esc cancel",
        ),
        PromptPurpose::NewCommand { host: Some(host) } => (
            format!("run on {}: ", crate::inert::escaped(host)),
            "  Enter start · Tab another machine · Esc cancel",
        ),
        PromptPurpose::Search => ("search: ".into(), "  Enter find · Esc cancel"),
        PromptPurpose::Filter => (
            "filter: ".into(),
            "  the list narrows as you type · Enter keep · Esc clear",
        ),
    };
    let label: String = label;
    let x = area.x
        + u16::try_from(label.chars().count() + prompt.text.chars().count()).unwrap_or(u16::MAX);
    frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
    // A proposal is shown selected: what is typed replaces it.
    let text_style = if prompt.proposal {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
    };
    Line::from(vec![
        Span::styled(label, title_style()),
        Span::styled(prompt.text.clone(), text_style),
        Span::styled(keys, theme.dim()),
    ])
}

/// A question, and the key that says yes.
fn confirm_line(confirm: &Confirm, theme: &Theme) -> Line<'static> {
    match confirm {
        Confirm::Kill { label, .. } => Line::from(vec![
            Span::styled(
                format!("Kill `{label}` and all its processes? "),
                theme.error(),
            ),
            Span::styled("y to kill, any other key to keep it", theme.dim()),
        ]),
        Confirm::Restart { label, .. } => Line::from(vec![
            Span::styled(
                format!("`{label}` still runs: end it and start it again? "),
                theme.fg(Color::Yellow),
            ),
            Span::styled("y to restart, any other key to keep it", theme.dim()),
        ]),
        Confirm::ProjectDown { name, .. } => Line::from(vec![
            Span::styled(
                format!("Stop every process of `{}`? ", crate::inert::escaped(name)),
                theme.error(),
            ),
            Span::styled("y to stop them, any other key to keep them", theme.dim()),
        ]),
        // Only asked when quitting ends them (they live in this interface, not the server).
        Confirm::Quit { running } => Line::from(vec![
            Span::styled(
                format!("{running} still running: quit and end them? "),
                theme.error(),
            ),
            Span::styled("y quits · other keys stay", theme.dim()),
        ]),
    }
}

/// Where the keys go while they go to a process.
fn focus_line(app: &App, theme: &Theme) -> Line<'static> {
    let label = app.selected_entry().map_or("", EntryInfo::label);
    if let Some(attached) = &app.attached {
        return Line::from(vec![
            Span::styled(format!("attached to `{label}`"), theme.fg(Color::Cyan)),
            Span::styled(
                format!(
                    " · every key goes to it · {} detaches (it keeps running)",
                    attached.detach_label
                ),
                theme.dim(),
            ),
        ]);
    }
    Line::from(vec![
        Span::styled(format!("typing into `{label}`"), theme.fg(Color::Cyan)),
        Span::styled(
            " · every key goes to the process · Ctrl-A to come back",
            theme.dim(),
        ),
    ])
}
