//! A frame as an SVG picture, colours and attributes included: how README's picture of the
//! interface is made (`picture` in a headless script), so that it shows what oino draws.

use std::fmt::Write as _;

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Position;
use ratatui::style::{Color, Modifier};

/// The width of a cell and the height of a row, in pixels, for a 14 px monospace font.
const CELL_WIDTH: f32 = 8.4;
const ROW_HEIGHT: f32 = 18.0;
/// Around the cells.
const MARGIN: f32 = 12.0;
/// The terminal's own colours where a cell says `Reset`.
const DEFAULT_FG: Rgb = Rgb(0xd0, 0xd0, 0xd0);
const DEFAULT_BG: Rgb = Rgb(0x1c, 0x1c, 0x1c);
/// The first 16 colours, as xterm draws them.
const PALETTE: [Rgb; 16] = [
    Rgb(0x00, 0x00, 0x00),
    Rgb(0xcd, 0x31, 0x31),
    Rgb(0x0d, 0xbc, 0x79),
    Rgb(0xe5, 0xe5, 0x10),
    Rgb(0x3b, 0x8e, 0xea),
    Rgb(0xbc, 0x3f, 0xbc),
    Rgb(0x11, 0xa8, 0xcd),
    Rgb(0xe5, 0xe5, 0xe5),
    Rgb(0x76, 0x76, 0x76),
    Rgb(0xf1, 0x4c, 0x4c),
    Rgb(0x23, 0xd1, 0x8b),
    Rgb(0xf5, 0xf5, 0x43),
    Rgb(0x3b, 0x8e, 0xea),
    Rgb(0xd6, 0x70, 0xd6),
    Rgb(0x29, 0xb8, 0xdb),
    Rgb(0xff, 0xff, 0xff),
];

#[derive(Clone, Copy, PartialEq, Eq)]
struct Rgb(u8, u8, u8);

impl std::fmt::Display for Rgb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// What a run of cells looks like once colours are resolved.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Look {
    fg: Rgb,
    bg: Rgb,
    /// The text's own modifiers (reversal is resolved into the colours).
    modifier: Modifier,
}

impl Look {
    fn of(cell: &Cell) -> Self {
        let mut fg = rgb(cell.fg).unwrap_or(DEFAULT_FG);
        let mut bg = rgb(cell.bg).unwrap_or(DEFAULT_BG);
        let modifier = cell.modifier;
        if modifier.contains(Modifier::REVERSED) {
            std::mem::swap(&mut fg, &mut bg);
        }
        Self {
            fg,
            bg,
            modifier: modifier
                & (Modifier::BOLD
                    | Modifier::DIM
                    | Modifier::ITALIC
                    | Modifier::UNDERLINED
                    | Modifier::CROSSED_OUT),
        }
    }

    fn underlined(self) -> bool {
        self.modifier.contains(Modifier::UNDERLINED)
    }

    fn crossed(self) -> bool {
        self.modifier.contains(Modifier::CROSSED_OUT)
    }

    fn attributes(self) -> String {
        let mut text = format!(" fill=\"{}\"", self.fg);
        if self.modifier.contains(Modifier::BOLD) {
            text.push_str(" font-weight=\"bold\"");
        }
        if self.modifier.contains(Modifier::DIM) {
            text.push_str(" fill-opacity=\"0.6\"");
        }
        if self.modifier.contains(Modifier::ITALIC) {
            text.push_str(" font-style=\"italic\"");
        }
        match (self.underlined(), self.crossed()) {
            (true, true) => text.push_str(" text-decoration=\"underline line-through\""),
            (true, false) => text.push_str(" text-decoration=\"underline\""),
            (false, true) => text.push_str(" text-decoration=\"line-through\""),
            (false, false) => {}
        }
        text
    }
}

/// The colour a cell names; `None` for the terminal's own.
fn rgb(color: Color) -> Option<Rgb> {
    let named = |index: usize| Some(PALETTE[index]);
    match color {
        Color::Reset => None,
        Color::Black => named(0),
        Color::Red => named(1),
        Color::Green => named(2),
        Color::Yellow => named(3),
        Color::Blue => named(4),
        Color::Magenta => named(5),
        Color::Cyan => named(6),
        Color::Gray => named(7),
        Color::DarkGray => named(8),
        Color::LightRed => named(9),
        Color::LightGreen => named(10),
        Color::LightYellow => named(11),
        Color::LightBlue => named(12),
        Color::LightMagenta => named(13),
        Color::LightCyan => named(14),
        Color::White => named(15),
        Color::Rgb(red, green, blue) => Some(Rgb(red, green, blue)),
        Color::Indexed(index) => Some(indexed(index)),
    }
}

/// xterm's 256 colours: the 16 above, a 6×6×6 cube, then 24 greys.
fn indexed(index: u8) -> Rgb {
    match index {
        0..16 => PALETTE[usize::from(index)],
        16..232 => {
            let level = |n: u8| if n == 0 { 0 } else { 55 + n * 40 };
            let n = index - 16;
            Rgb(level(n / 36), level(n / 6 % 6), level(n % 6))
        }
        _ => {
            let grey = 8 + (index - 232) * 10;
            Rgb(grey, grey, grey)
        }
    }
}

/// One row's cells in runs of the same look: (first column, columns covered, look, text).
fn runs(buffer: &Buffer, y: u16) -> Vec<(u16, u16, Look, String)> {
    let area = buffer.area;
    let mut runs: Vec<(u16, u16, Look, String)> = Vec::new();
    let mut x = area.x;
    while x < area.x + area.width {
        let Some(cell) = buffer.cell(Position::new(x, y)) else {
            break;
        };
        let symbol = if cell.symbol().is_empty() {
            " "
        } else {
            cell.symbol()
        };
        let width = u16::try_from(unicode_width::UnicodeWidthStr::width(symbol))
            .unwrap_or(1)
            .max(1);
        let look = Look::of(cell);
        match runs.last_mut() {
            Some((_, covered, last, text)) if *last == look => {
                *covered += width;
                text.push_str(symbol);
            }
            _ => runs.push((x - area.x, width, look, symbol.to_owned())),
        }
        x += width;
    }
    runs
}

fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The buffer as an SVG document: backgrounds as rectangles, text in runs of one look, each
/// placed at its column and stretched to it, so that columns line up whatever the font.
#[must_use]
pub(crate) fn svg(buffer: &Buffer) -> String {
    let area = buffer.area;
    let width = f32::from(area.width).mul_add(CELL_WIDTH, 2.0 * MARGIN);
    let height = f32::from(area.height).mul_add(ROW_HEIGHT, 2.0 * MARGIN);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.1}\" height=\"{height:.1}\" \
         viewBox=\"0 0 {width:.1} {height:.1}\" font-family=\"'DejaVu Sans Mono', Menlo, \
         Consolas, monospace\" font-size=\"14\">\n\
         <rect width=\"100%\" height=\"100%\" rx=\"8\" fill=\"{DEFAULT_BG}\"/>\n"
    );
    let mut text = String::new();
    for y in area.y..area.y + area.height {
        let top = f32::from(y - area.y).mul_add(ROW_HEIGHT, MARGIN);
        for (x, covered, look, symbols) in runs(buffer, y) {
            let left = f32::from(x).mul_add(CELL_WIDTH, MARGIN);
            let span = f32::from(covered) * CELL_WIDTH;
            if look.bg != DEFAULT_BG {
                let _ = writeln!(
                    out,
                    "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{span:.1}\" \
                     height=\"{ROW_HEIGHT:.1}\" fill=\"{}\"/>",
                    look.bg
                );
            }
            if symbols.trim().is_empty() && !look.underlined() && !look.crossed() {
                continue;
            }
            let _ = writeln!(
                text,
                "<text x=\"{left:.1}\" y=\"{:.1}\" textLength=\"{span:.1}\" \
                 lengthAdjust=\"spacingAndGlyphs\" xml:space=\"preserve\"{}>{}</text>",
                top + ROW_HEIGHT * 0.75,
                look.attributes(),
                escaped(&symbols)
            );
        }
    }
    out.push_str(&text);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    use super::*;

    #[test]
    fn cells_become_runs_with_their_colours_and_text_is_escaped() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 12, 2));
        buffer.set_string(0, 0, "ok <a&b>", Style::new().fg(Color::Green));
        buffer.set_string(
            0,
            1,
            "fail",
            Style::new()
                .fg(Color::Indexed(196))
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        );
        let picture = svg(&buffer);
        assert!(picture.starts_with("<svg "), "{picture}");
        assert!(picture.ends_with("</svg>\n"), "{picture}");
        assert!(
            picture.contains("fill=\"#0dbc79\">ok &lt;a&amp;b&gt;</text>"),
            "{picture}"
        );
        // Reversed: the red is the background, the text takes the terminal's background.
        assert!(picture.contains("fill=\"#ff0000\"/>"), "{picture}");
        assert!(
            picture.contains("fill=\"#1c1c1c\" font-weight=\"bold\">fail</text>"),
            "{picture}"
        );
        // Blank default cells draw nothing.
        assert_eq!(picture.matches("<text").count(), 2, "{picture}");
    }

    #[test]
    fn xterm_colours_of_the_cube_and_the_greys() {
        assert!(indexed(16) == Rgb(0, 0, 0));
        assert!(indexed(196) == Rgb(255, 0, 0));
        assert!(indexed(231) == Rgb(255, 255, 255));
        assert!(indexed(244) == Rgb(128, 128, 128));
    }
}
