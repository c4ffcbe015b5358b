//! The selected entry's screen, drawn cell by cell: the process's bytes never reach the
//! terminal, and search matches are marked (the current one apart).

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};

use crate::output::Matcher;
use crate::screen::{Cell as ScreenCell, CellColor, ScreenSnapshot};

use super::theme::Theme;

pub(super) fn cell_color(color: CellColor) -> Color {
    match color {
        CellColor::Default => Color::Reset,
        CellColor::Indexed(index) => Color::Indexed(index),
        CellColor::Rgb(red, green, blue) => Color::Rgb(red, green, blue),
    }
}

pub(super) fn cell_style(cell: &ScreenCell) -> Style {
    let mut style = Style::new().fg(cell_color(cell.fg)).bg(cell_color(cell.bg));
    let attrs = cell.attrs;
    for (on, modifier) in [
        (attrs.bold, Modifier::BOLD),
        (attrs.dim, Modifier::DIM),
        (attrs.italic, Modifier::ITALIC),
        (attrs.underline, Modifier::UNDERLINED),
        (attrs.inverse, Modifier::REVERSED),
        (attrs.blink, Modifier::SLOW_BLINK),
        (attrs.strikethrough, Modifier::CROSSED_OUT),
        (attrs.hidden, Modifier::HIDDEN),
    ] {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    style
}

/// A cell's text, safe to put on the host terminal: no control characters. VS16 and ZWJ are
/// left out: the pane counts every code point as programs do (a heart with VS16 takes one
/// cell), and a host terminal given them might draw a wider glyph or join two cells in one.
pub(super) fn printable(text: &str) -> Option<Cow<'_, str>> {
    if text.is_empty() || text.chars().any(char::is_control) {
        return None;
    }
    let joins = |character: char| matches!(character, '\u{FE0F}' | '\u{200D}');
    Some(if text.contains(joins) {
        Cow::Owned(
            text.chars()
                .filter(|&character| !joins(character))
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    })
}

/// What the pane marks of a search: every match, the current one apart.
#[derive(Clone, Copy)]
pub(super) struct Marks<'a> {
    pub(super) matcher: &'a Matcher,
    /// The pane's row that holds the current match, when it is in view.
    pub(super) current_row: Option<usize>,
}

/// Draws a screen snapshot cell by cell, with the search's matches marked.
pub(super) fn render_pane(
    pane: &ScreenSnapshot,
    marks: Option<Marks<'_>>,
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
                target.set_symbol(printable(&cell.text).as_deref().unwrap_or(" "));
                target.set_style(cell_style(cell));
            }
        }
        if let Some(marks) = marks {
            let style = if marks.current_row == Some(row_index) {
                theme.current_match()
            } else {
                theme.match_highlight()
            };
            for col in matched_columns(row, marks.matcher) {
                let x = area.x + u16::try_from(col).unwrap_or(u16::MAX);
                if x < area.x + area.width {
                    if let Some(target) = buffer.cell_mut(Position::new(x, y)) {
                        target.set_style(style);
                    }
                }
            }
        }
    }
}

/// The columns of a row's cells that a match covers (the right half of a wide character with
/// its left).
fn matched_columns(row: &[ScreenCell], matcher: &Matcher) -> Vec<usize> {
    // The row's text, and the column each byte of it was drawn in.
    let mut text = String::new();
    let mut columns = Vec::new();
    for (col, cell) in row.iter().enumerate() {
        let right_half = col > 0 && row[col - 1].wide;
        if right_half {
            continue;
        }
        let shown = printable(&cell.text);
        let shown = shown.as_deref().unwrap_or(" ");
        text.push_str(shown);
        columns.extend(std::iter::repeat_n(col, shown.len()));
    }
    let mut covered = Vec::new();
    for range in matcher.ranges(&text) {
        let (first, last) = (columns[range.start], columns[range.end - 1]);
        let last = if row[last].wide { last + 1 } else { last };
        covered.extend(first..=last);
    }
    covered
}

/// Shows the selection (reversed) over the pane.
pub(crate) fn render_selection(
    selection: &crate::interface::app::Selection,
    area: Rect,
    buffer: &mut Buffer,
) {
    for row in 0..area.height {
        for col in 0..area.width {
            if selection.contains((row, col)) {
                if let Some(cell) = buffer.cell_mut(Position::new(area.x + col, area.y + row)) {
                    let style = cell
                        .style()
                        .add_modifier(ratatui::style::Modifier::REVERSED);
                    cell.set_style(style);
                }
            }
        }
    }
}
