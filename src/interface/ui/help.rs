//! The help over everything, written from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::interface::app::{App, Help, HelpLine};

use super::theme::{Theme, title_style};

pub(super) fn render_help(app: &App, help: Help, theme: &Theme, area: Rect, frame: &mut Frame<'_>) {
    let last = if app.help_overflow() > 0 {
        "j k ↑ ↓ PgUp PgDn scroll; any other key closes this help."
    } else {
        "Any key closes this help."
    };
    let lines: Vec<Line<'_>> = app
        .help_lines()
        .into_iter()
        .map(|line| match line {
            HelpLine::Title => Line::styled("Keys", title_style()),
            HelpLine::Blank => Line::raw(""),
            HelpLine::Key { label, does } => Line::from(vec![
                Span::styled(format!("  {label:<9}"), title_style()),
                Span::raw(does),
            ]),
            HelpLine::Last => Line::styled(last, theme.dim()),
        })
        .collect();
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
        Paragraph::new(lines)
            .scroll((help.scroll.min(app.help_overflow()), 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" oino help ")
                    .title_bottom(if help.scroll < app.help_overflow() {
                        " more below: j ↓ "
                    } else {
                        ""
                    })
                    .border_style(theme.dim()),
            ),
        popup,
    );
}
