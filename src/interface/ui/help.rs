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
