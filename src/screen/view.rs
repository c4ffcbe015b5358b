//! A screen as text for whoever reads it outside a terminal: an agent, a script, a person
//! printing it (`oino screen`, the bridge's `task_screen`).

use std::fmt::Write as _;

use super::{Cell, CellAttrs, CellColor, CursorPos, ScreenSnapshot};

/// What a screen shows, as lines of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenView {
    pub cols: u16,
    pub rows: u16,
    /// One line a row, trailing blanks trimmed.
    pub lines: Vec<String>,
    /// The cursor, zero-based, when it is shown.
    pub cursor: Option<CursorPos>,
    /// Whether a full-screen program has the alternate screen on.
    pub alternate_screen: bool,
}

impl ScreenView {
    /// The rows to show: the last non-blank one and all above it.
    #[must_use]
    pub fn shown_lines(&self) -> &[String] {
        let used = self
            .lines
            .iter()
            .rposition(|line| !line.is_empty())
            .map_or(0, |last| last + 1);
        &self.lines[..used]
    }

    /// The shown rows as text, each ending in a newline; empty when nothing is shown.
    #[must_use]
    pub fn shown_text(&self) -> String {
        let shown = self.shown_lines();
        if shown.is_empty() {
            return String::new();
        }
        shown.join("\n") + "\n"
    }

    /// One line in brackets saying the size, the cursor and the screen in use.
    #[must_use]
    pub(crate) fn summary(&self) -> String {
        let mut summary = format!("{}x{}", self.cols, self.rows);
        match self.cursor {
            Some(cursor) => {
                let _ = write!(
                    summary,
                    " · cursor at row {}, column {}",
                    cursor.row + 1,
                    cursor.col + 1
                );
            }
            None => summary.push_str(" · cursor hidden"),
        }
        if self.alternate_screen {
            summary.push_str(" · alternate screen (a full-screen program)");
        }
        let blank = self.lines.len() - self.shown_lines().len();
        if blank > 0 {
            let _ = write!(summary, " · the last {blank} rows blank");
        }
        summary
    }
}

impl ScreenSnapshot {
    /// The screen as lines of text.
    #[must_use]
    pub fn view(&self) -> ScreenView {
        ScreenView {
            cols: self.size.cols,
            rows: self.size.rows,
            lines: self.text().lines().map(str::to_owned).collect(),
            cursor: self.cursor,
            alternate_screen: self.alternate_screen,
        }
    }

    /// The screen's rows with their colors and attributes as SGR sequences, each row ending in
    /// a reset and a newline, trailing blanks trimmed.
    #[must_use]
    pub fn ansi(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            let used = row
                .iter()
                .rposition(|cell| !cell.text.trim().is_empty() || cell.bg != CellColor::Default)
                .map_or(0, |last| last + 1);
            let mut current = (CellColor::Default, CellColor::Default, CellAttrs::default());
            for (index, cell) in row[..used].iter().enumerate() {
                let style = (cell.fg, cell.bg, cell.attrs);
                if style != current {
                    out.push_str(&sgr(cell));
                    current = style;
                }
                if cell.text.is_empty() {
                    // A blank, or the right half of a wide character (already drawn).
                    if index == 0 || !row[index - 1].wide {
                        out.push(' ');
                    }
                } else {
                    out.push_str(&cell.text);
                }
            }
            if current != (CellColor::Default, CellColor::Default, CellAttrs::default()) {
                out.push_str("\x1b[0m");
            }
            out.push('\n');
        }
        out
    }
}

/// The SGR sequence that sets `cell`'s style from nothing.
fn sgr(cell: &Cell) -> String {
    let mut codes = vec!["0".to_owned()];
    let attrs = cell.attrs;
    for (on, code) in [
        (attrs.bold, "1"),
        (attrs.dim, "2"),
        (attrs.italic, "3"),
        (attrs.underline, "4"),
        (attrs.inverse, "7"),
        (attrs.blink, "5"),
        (attrs.strikethrough, "9"),
        (attrs.hidden, "8"),
        (attrs.overline, "53"),
    ] {
        if on {
            codes.push(code.to_owned());
        }
    }
    for (color, base) in [(cell.fg, 38), (cell.bg, 48)] {
        match color {
            CellColor::Default => {}
            CellColor::Indexed(index) if index < 8 => codes.push((base - 8 + index).to_string()),
            CellColor::Indexed(index) if index < 16 => {
                codes.push((base + 52 + index - 8).to_string());
            }
            CellColor::Indexed(index) => codes.push(format!("{base};5;{index}")),
            CellColor::Rgb(red, green, blue) => {
                codes.push(format!("{base};2;{red};{green};{blue}"));
            }
        }
    }
    format!("\x1b[{}m", codes.join(";"))
}

#[cfg(test)]
mod tests {
    use crate::pty::TermSize;
    use crate::screen::Screen;

    fn screen(bytes: &[u8]) -> crate::screen::ScreenSnapshot {
        let mut screen = Screen::new(TermSize { cols: 20, rows: 5 }, 0);
        screen.feed(bytes);
        screen.snapshot(0)
    }

    #[test]
    fn a_view_trims_rows_and_says_where_the_cursor_is() {
        let view = screen(b"$ python3\r\n>>> 1+1   \r\n2\r\n>>> ").view();
        assert_eq!(view.shown_lines(), ["$ python3", ">>> 1+1", "2", ">>>"]);
        assert_eq!(view.shown_text(), "$ python3\n>>> 1+1\n2\n>>>\n");
        assert_eq!(screen(b"").view().shown_text(), "");
        assert_eq!(
            view.summary(),
            "20x5 · cursor at row 4, column 5 · the last 1 rows blank"
        );
        let full = screen(b"\x1b[?1049h\x1b[?25ltop").view();
        assert_eq!(
            full.summary(),
            "20x5 · cursor hidden · alternate screen (a full-screen program) · the last 4 rows \
             blank"
        );
    }

    #[test]
    fn ansi_keeps_colors_and_attributes_and_wide_characters() {
        let colorful = "\x1b[1;31mred\x1b[0m plain \x1b[38;5;200m✓\x1b[0m 中x";
        let ansi = screen(colorful.as_bytes()).ansi();
        let first = ansi.lines().next().expect("a row");
        assert_eq!(
            first,
            "\x1b[0;1;31mred\x1b[0m plain \x1b[0;38;5;200m✓\x1b[0m 中x"
        );
        // Played back, the row is the same cells again.
        let mut again = Screen::new(TermSize { cols: 20, rows: 5 }, 0);
        again.feed(first.as_bytes());
        let original = screen(colorful.as_bytes()).rows.swap_remove(0);
        assert!(again.snapshot(0).rows[0] == original, "{first:?}");
    }
}
