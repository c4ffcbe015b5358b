//! Blanks in the pen's background (background colour erase, as xterm and tmux do it): vt100
//! leaves the cells that scrolling, inserting and deleting make in the default colours, and
//! paints every attribute of the pen into erased cells. Each is drawn again here, right after
//! vt100 made it, with sequences vt100 knows: rows by `VPA` and `EL 2` (the column, a pending
//! wrap included, stays as it was), cells of the cursor's row by `CHA` and `ECH`, all with a pen
//! that holds the background alone, then the program's pen back.

use std::fmt::Write as _;

use super::{Region, cols_and_col};

/// The pen's background alone, as an SGR sequence from a reset: what a blank takes.
fn blank_pen(screen: &vt100::Screen) -> String {
    match screen.bgcolor() {
        vt100::Color::Default => "\x1b[m".to_owned(),
        vt100::Color::Idx(index) => format!("\x1b[0;48;5;{index}m"),
        vt100::Color::Rgb(red, green, blue) => format!("\x1b[0;48;2;{red};{green};{blue}m"),
    }
}

/// Whether blanks made now take a colour vt100 leaves out.
pub(super) fn coloured_blanks(screen: &vt100::Screen) -> bool {
    screen.bgcolor() != vt100::Color::Default
}

/// Whether the pen holds more than a background: an erase made with it must not keep it.
pub(super) fn pen_beyond_background(screen: &vt100::Screen) -> bool {
    screen.fgcolor() != vt100::Color::Default
        || screen.bold()
        || screen.dim()
        || screen.italic()
        || screen.underline()
        || screen.inverse()
}

/// Carries out `moves` (which draw blanks) with the blank pen, then gives the pen back.
fn with_blank_pen<C: vt100::Callbacks>(parser: &mut vt100::Parser<C>, moves: &str) {
    let screen = parser.screen();
    let mut out = blank_pen(screen);
    out.push_str(moves);
    out.push_str(&screen.attributes_formatted());
    parser.process(out.as_bytes());
}

/// Paints rows `first..=last` (from 0) blank, the cursor left where it was.
pub(super) fn rows<C: vt100::Callbacks>(parser: &mut vt100::Parser<C>, first: u16, last: u16) {
    if first > last || !coloured_blanks(parser.screen()) {
        return;
    }
    let row = parser.screen().cursor_position().0;
    let mut moves = String::new();
    for blank in first..=last {
        let _ = write!(moves, "\x1b[{}d\x1b[2K", blank + 1);
    }
    let _ = write!(moves, "\x1b[{}d", row + 1);
    with_blank_pen(parser, &moves);
}

/// Paints `count` cells of the cursor's row from column `first` blank. Nothing with a wrap
/// pending: no cell was made then.
pub(super) fn cells<C: vt100::Callbacks>(parser: &mut vt100::Parser<C>, first: u16, count: u16) {
    let (cols, col) = cols_and_col(parser);
    if count == 0 || col >= cols || !coloured_blanks(parser.screen()) {
        return;
    }
    let moves = format!("\x1b[{}G\x1b[{count}X\x1b[{}G", first + 1, col + 1);
    with_blank_pen(parser, &moves);
}

/// Does again an erase vt100 made with the whole pen (`CSI param action`, which erases from
/// the cursor without moving it), with the background alone.
pub(super) fn erase_again<C: vt100::Callbacks>(
    parser: &mut vt100::Parser<C>,
    action: u8,
    param: u16,
) {
    if pen_beyond_background(parser.screen()) {
        let sequence = format!("\x1b[{param}{}", char::from(action));
        with_blank_pen(parser, &sequence);
    }
}

/// The blanks an edit of the screen made, which vt100 left in the default colours: `action` is
/// the CSI's final byte, `count` its count (1 when absent or 0).
pub(super) fn after_edit<C: vt100::Callbacks>(
    parser: &mut vt100::Parser<C>,
    region: Region,
    action: u8,
    count: u16,
) {
    if !coloured_blanks(parser.screen()) {
        return;
    }
    let (cols, col) = cols_and_col(parser);
    let row = parser.screen().cursor_position().0;
    let Region { top, bottom } = region;
    let in_region = (top..=bottom).contains(&row);
    match action {
        // ICH: blanks where the cursor is.
        b'@' => cells(parser, col, count.min(cols.saturating_sub(col))),
        // DCH: blanks at the row's end.
        b'P' => {
            let count = count.min(cols.saturating_sub(col));
            cells(parser, cols - count, count);
        }
        // IL and DL act within the region only.
        b'L' if in_region => rows(parser, row, row.saturating_add(count - 1).min(bottom)),
        b'M' if in_region => rows(parser, (bottom + 1).saturating_sub(count).max(row), bottom),
        b'S' => rows(parser, (bottom + 1).saturating_sub(count).max(top), bottom),
        b'T' => rows(parser, top, top.saturating_add(count - 1).min(bottom)),
        _ => {}
    }
}
