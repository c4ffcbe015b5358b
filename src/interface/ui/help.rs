//! The help over everything, written from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::interface::app::App;

use super::theme::{Theme, title_style};

pub(super) fn render_help(app: &App, theme: &Theme, area: Rect, frame: &mut Frame<'_>) {
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
            Span::raw("the wheel scrolls, a click selects (on a pane: focuses it)"),
        ]),
        Line::raw(""),
        Line::styled(
            if app.help_overflow() > 0 {
                "j k ↑ ↓ PgUp PgDn scroll; any other key closes this help."
            } else {
                "Any key closes this help."
            },
            theme.dim(),
        ),
    ]);
    debug_assert_eq!(
        lines.len(),
        app.keymap.len() + crate::interface::app::HELP_EXTRA_LINES
    );
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
            .scroll((app.help_scroll.min(app.help_overflow()), 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" oino help ")
                    .title_bottom(if app.help_scroll < app.help_overflow() {
                        " more below: j ↓ "
                    } else {
                        ""
                    })
                    .border_style(theme.dim()),
            ),
        popup,
    );
}
