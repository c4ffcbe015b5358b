//! What the extras carry out, byte case by byte case.
use crate::pty::TermSize;
use crate::screen::{Cell, CellColor, CursorPos, Screen, ScreenSnapshot};

fn shown(cols: u16, rows: u16, bytes: &[u8]) -> ScreenSnapshot {
    let mut screen = Screen::new(TermSize::new(cols, rows), 0);
    screen.feed(bytes);
    screen.snapshot(0)
}

fn lines(snapshot: &ScreenSnapshot) -> Vec<String> {
    let text = snapshot.text();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[test]
fn index_and_next_line_move_down_a_row() {
    let screen = shown(80, 24, b"\x1b[2J\x1b[HA\x1bDB\x1bEC");
    assert_eq!(lines(&screen), ["A", " B", "C"]);
    // At the bottom, IND scrolls.
    let screen = shown(10, 3, b"1\r\n2\r\n3\x1bDx");
    assert_eq!(lines(&screen), ["2", "3", " x"]);
}

#[test]
fn the_alignment_test_fills_the_screen_with_e_and_keeps_the_pen() {
    let screen = shown(80, 24, b"\x1b[31m\x1b[2J\x1b#8");
    assert!(screen.rows.iter().flatten().all(|cell| cell.text == "E"));
    assert!(
        screen
            .rows
            .iter()
            .flatten()
            .all(|cell| cell.fg == crate::screen::CellColor::Default)
    );
    assert_eq!(screen.cursor, Some(CursorPos { row: 0, col: 0 }));
    let after = shown(80, 24, b"\x1b[31m\x1b#8x");
    assert_eq!(after.rows[0][0].fg, crate::screen::CellColor::Indexed(1));
}

#[test]
fn tabs_go_to_the_stops_set() {
    let screen = shown(80, 24, b"\x1b[2J\x1b[H\x1b[3g\x1b[1;5H\x1bH\x1b[1;1H\tX");
    assert_eq!(lines(&screen), ["    X"]);
    // No stop left: a tab goes to the last column.
    let screen = shown(20, 2, b"\x1b[3g\tX");
    assert_eq!(lines(&screen), [format!("{}X", " ".repeat(19))]);
    // The stop at the cursor is cleared; the others stay.
    let screen = shown(40, 2, b"\x1b[1;9H\x1b[g\r\tX");
    assert_eq!(lines(&screen), [format!("{}X", " ".repeat(16))]);
    // A reset brings back every eighth column.
    let screen = shown(40, 2, b"\x1b[3g\x1bc\tX");
    assert_eq!(lines(&screen), [format!("{}X", " ".repeat(8))]);
    // A tab within a sequence belongs to it.
    let screen = shown(40, 3, b"\x1b[3g\x1b[1;5H\x1bH\x1b[2\t;1HX");
    assert_eq!(lines(&screen), ["", "X"]);
}

#[test]
fn the_column_mode_clears_and_homes() {
    let screen = shown(80, 24, b"\x1b[2J\x1b[5;5Hhello\x1b[?3lZ");
    assert_eq!(lines(&screen), ["Z"]);
    assert_eq!(screen.size, TermSize::new(80, 24));
}

#[test]
fn with_autowrap_off_the_row_end_is_overwritten() {
    let mut bytes = b"\x1b[2J\x1b[H\x1b[?7l".to_vec();
    bytes.extend("*".repeat(100).bytes());
    bytes.extend(b"X\x1b[?7h");
    let screen = shown(80, 24, &bytes);
    assert_eq!(lines(&screen), [format!("{}X", "*".repeat(79))]);
    // Back on, text wraps again.
    bytes.extend("y".repeat(81).bytes());
    assert_eq!(
        lines(&shown(80, 24, &bytes)),
        [format!("{}X", "*".repeat(79)), "y".repeat(80), "y".into()]
    );
}

#[test]
fn insert_mode_pushes_the_rest_of_the_row_right() {
    let screen = shown(80, 24, b"\x1b[2J\x1b[Habcdef\x1b[1;3H\x1b[4hXY\x1b[4l");
    assert_eq!(lines(&screen), ["abXYcdef"]);
    let screen = shown(80, 24, b"abcdef\x1b[1;3H\x1b[4h\xe4\xb8\xadZ\x1b[4lQ");
    assert_eq!(lines(&screen), ["ab中ZQdef"]);
}

#[test]
fn dec_line_drawing_draws_lines_in_g0_and_through_shift_out() {
    let screen = shown(80, 24, b"\x1b(0lqqk\x1b(B lqqk");
    assert_eq!(lines(&screen), ["┌──┐ lqqk"]);
    let screen = shown(80, 24, b"\x1b)0a\x0emqj\x0fb\x1b7\x0e\x1b8x");
    // DECRC brings back the charsets saved with the cursor (SI then).
    assert_eq!(lines(&screen), ["a└─┘bx"]);
}

#[test]
fn blink_and_strikethrough_are_kept_per_cell_and_reset() {
    let screen = shown(
        20,
        2,
        "\x1b[5ma\x1b[9mb\x1b[25mc\x1b[29md\x1b[5;9m中\x1b[0me\x1b[38;5;9mf\x1b[9;25mg\x1b[mh\
         \x1b[38:2::1:5:9mi\x1b[4:5mj\x1b[0m"
            .as_bytes(),
    );
    let marks: Vec<(String, bool, bool)> = screen.rows[0]
        .iter()
        .filter(|cell| !cell.text.is_empty())
        .map(|cell| {
            (
                cell.text.clone(),
                cell.attrs.blink,
                cell.attrs.strikethrough,
            )
        })
        .collect();
    let expected = [
        ("a", true, false),
        ("b", true, true),
        ("c", false, true),
        ("d", false, false),
        ("中", true, true),
        ("e", false, false),
        ("f", false, false),
        ("g", false, true),
        ("h", false, false),
        ("i", false, false),
        ("j", false, false),
    ]
    .map(|(text, blink, strike)| (text.to_owned(), blink, strike));
    assert_eq!(marks, expected);
    assert_eq!(lines(&screen), ["abcd中efghij"]);
    // The cursor moves as without the marks.
    assert_eq!(screen.cursor, Some(CursorPos { row: 0, col: 12 }));
}

#[test]
fn wide_and_combining_characters_at_the_right_margin() {
    // A wide character that does not fit wraps whole.
    let screen = shown(10, 3, "123456789中".as_bytes());
    assert_eq!(lines(&screen), ["123456789", "中"]);
    // A combining mark joins the last cell without a wrap.
    let screen = shown(10, 3, "123456789e\u{301}".as_bytes());
    assert_eq!(lines(&screen), ["123456789e\u{301}"]);
    // Autowrap off: a wide character overwrites the last two cells.
    let screen = shown(10, 3, "\x1b[?7l12345678中文".as_bytes());
    assert_eq!(lines(&screen), ["12345678文"]);
    let screen = shown(10, 3, "\x1b[?7l123456789e\u{301}f".as_bytes());
    assert_eq!(lines(&screen), ["123456789f"]);
}

/// Every cell of a screen in the background `bg`, or the first that is not.
fn first_not_in(screen: &ScreenSnapshot, bg: CellColor) -> Option<(usize, usize, Cell)> {
    screen.rows.iter().enumerate().find_map(|(row, cells)| {
        cells
            .iter()
            .enumerate()
            .find(|(_, cell)| cell.bg != bg)
            .map(|(col, cell)| (row, col, cell.clone()))
    })
}

#[test]
fn blanks_made_by_scrolling_inserting_and_deleting_take_the_background() {
    let cases: [&[u8]; 13] = [
        b"\x1b[44m\x1b[2J\x1b[3;1Habcdefghij\x1b[3;3H\x1b[2P",
        b"\x1b[44m\x1b[2J\x1b[3;1Habcdefghij\x1b[3;3H\x1b[2@",
        b"\x1b[44m\x1b[2J\x1b[24;1H\n\n",
        b"\x1b[44m\x1b[2J\x1b[24;1H\x0b\x0c",
        b"\x1b[44m\x1b[2J\x1b[24;1H\x1bD\x1bE",
        b"\x1b[44m\x1b[2J\x1b[H\x1bM",
        b"\x1b[44m\x1b[2J\x1b[5;1H\x1b[2L",
        b"\x1b[44m\x1b[2J\x1b[5;1H\x1b[2M",
        b"\x1b[44m\x1b[2J\x1b[2S",
        b"\x1b[44m\x1b[2J\x1b[2T",
        b"\x1b[44m\x1b[2J\x1b[2;5r\x1b[5;1H\n\n",
        b"\x1b[44m\x1b[2J\x1b[2;5r\x1b[2;1H\x1bM\x1bM",
        b"\x1b[44m\x1b[2J\x1b[1;1Habc\x1b[1;3H\x1b[200P",
    ];
    for bytes in cases {
        let screen = shown(80, 24, bytes);
        assert_eq!(
            first_not_in(&screen, CellColor::Indexed(4)),
            None,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    // A wrap that scrolls leaves its new row in the default colours, as tmux does.
    let wide_text = format!("\x1b[44m\x1b[2J\x1b[24;1H{}", "x".repeat(100));
    let screen = shown(80, 24, wide_text.as_bytes());
    assert_eq!(lines(&screen)[23], "x".repeat(20));
    assert_eq!(screen.rows[23][20].bg, CellColor::Default);
    assert_eq!(screen.rows[22][20].bg, CellColor::Indexed(4));
    // A background set as 256 colours or RGB is taken as it is.
    let screen = shown(20, 4, b"\x1b[48;2;1;2;3m\x1b[2J\x1b[4;1H\n");
    assert_eq!(first_not_in(&screen, CellColor::Rgb(1, 2, 3)), None);
    // With the default background, blanks stay default (and the pen's colour is not theirs).
    let screen = shown(20, 4, b"\x1b[31mred\x1b[4;1H\n\x1b[2P\x1b[2L");
    assert_eq!(first_not_in(&screen, CellColor::Default), None);
}

#[test]
fn an_erase_paints_the_background_alone() {
    for bytes in [
        &b"\x1b[7m\x1b[2;5H\x1b[K"[..],
        b"\x1b[7m\x1b[3;1H\x1b[J",
        b"\x1b[4m\x1b[2;3H\x1b[K",
        b"\x1b[1;3;31m\x1b[2J",
        b"\x1b[7;4m\x1b[2;3H\x1b[5X",
        b"\x1b[7m\x1b[2;3H\x1b[?K",
    ] {
        let screen = shown(20, 4, bytes);
        let painted = screen
            .rows
            .iter()
            .flatten()
            .find(|cell| *cell != &Cell::default());
        assert_eq!(painted, None, "{:?}", String::from_utf8_lossy(bytes));
    }
    // The background stays, and the pen after the erase is the program's own.
    let screen = shown(20, 4, b"\x1b[4;41m\x1b[K\x1b[2;1Hx");
    assert_eq!(screen.rows[0][5].bg, CellColor::Indexed(1));
    assert!(!screen.rows[0][5].attrs.underline);
    assert!(screen.rows[1][0].attrs.underline);
}

#[test]
fn csi_s_and_u_save_and_restore_the_cursor() {
    for start in ["", "\x1b[?1049h"] {
        let bytes = format!("{start}\x1b[5;10HA\x1b[s\x1b[1;1HB\x1b[uC");
        let screen = shown(80, 24, bytes.as_bytes());
        assert_eq!(
            lines(&screen)[4],
            format!("{}AC", " ".repeat(9)),
            "{start:?}"
        );
        assert_eq!(lines(&screen)[0], "B");
    }
}

#[test]
fn widths_are_counted_as_programs_count_them() {
    // A narrow character with VS16 stays one cell (wcwidth 0 for VS16).
    let screen = shown(20, 2, "a\u{2764}\u{FE0F}bcd".as_bytes());
    assert_eq!(lines(&screen), ["a\u{2764}\u{FE0F}bcd"]);
    assert_eq!(screen.rows[0][1].text, "\u{2764}\u{FE0F}");
    assert!(!screen.rows[0][1].wide);
    assert_eq!(screen.cursor, Some(CursorPos { row: 0, col: 5 }));
    // Moving back over it and inserting lands where bash's readline means it to.
    let screen = shown(
        20,
        2,
        "a\u{2714}\u{FE0F}bcd\x1b[2D\x1b[4hXY\x1b[4l".as_bytes(),
    );
    assert_eq!(lines(&screen), ["a\u{2714}\u{FE0F}bXYcd"]);
    // A soft hyphen takes a cell.
    let screen = shown(20, 2, "a\u{AD}b".as_bytes());
    assert_eq!(screen.rows[0][1].text, "\u{AD}");
    assert_eq!(screen.rows[0][2].text, "b");
    // A ZWJ sequence counts each of its code points: three wide emoji, six cells.
    let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}x";
    let screen = shown(20, 2, family.as_bytes());
    assert_eq!(screen.rows[0][6].text, "x");
}

#[test]
fn sgr_forms_vt100_lacks_are_kept() {
    let screen = shown(
        40,
        2,
        b"\x1b[4:3ma\x1b[0mb\x1b[4:2mc\x1b[m\x1b[21md\x1b[m\x1b[8me\x1b[28mf\x1b[53mg\x1b[55mh\
          \x1b[38:2::255:0:0mi\x1b[m\x1b[58;2;1;2;3mj\x1b[58:5:1;1mk",
    );
    let cells = &screen.rows[0];
    let underlined: Vec<bool> = cells[..11]
        .iter()
        .map(|cell| cell.attrs.underline)
        .collect();
    assert_eq!(
        underlined,
        [
            true, false, true, true, false, false, false, false, false, false, false
        ]
    );
    assert!(cells[4].attrs.hidden && !cells[5].attrs.hidden);
    assert!(cells[6].attrs.overline && !cells[7].attrs.overline);
    assert_eq!(cells[8].fg, CellColor::Rgb(255, 0, 0));
    // An underline colour is not read as attributes (2 is faint, 5 blink).
    assert!(!cells[9].attrs.dim && !cells[9].attrs.blink && !cells[9].attrs.bold);
    assert!(cells[10].attrs.bold);
}

#[test]
fn back_tab_and_a_tab_with_a_wrap_pending() {
    let screen = shown(80, 2, b"\x1b[1;20H\x1b[ZX");
    assert_eq!(lines(&screen), [format!("{}X", " ".repeat(16))]);
    let screen = shown(80, 2, b"\x1b[1;20H\x1b[2ZX\x1b[1;5H\x1b[9ZY");
    assert_eq!(lines(&screen), [format!("Y{}X", " ".repeat(7))]);
    // At the last column, a tab keeps the wrap pending: B goes to the next row.
    let screen = shown(40, 3, b"\x1b[1;40HA\tB");
    assert_eq!(
        lines(&screen),
        [format!("{}A", " ".repeat(39)), "B".to_owned()]
    );
}

#[test]
fn repeats_modes_and_margins_as_xterm_has_them() {
    // REP repeats the character printed right before it; after a control function, another
    // REP or SGR included, nothing (vttest 11.6.7.2, tmux).
    assert_eq!(lines(&shown(20, 2, b"+\x1b[0b\x1b[10b")), ["++"]);
    assert_eq!(lines(&shown(20, 2, b"a\x1b[2b\x1b[m\x1b[3b")), ["aaa"]);
    assert_eq!(lines(&shown(20, 2, b"+\x1b[1;5H\x1b[3bx")), ["+   x"]);
    assert_eq!(lines(&shown(20, 2, b"+\x1b7\x1b[3b")), ["+"]);
    // 1047: the alternate screen, cleared when left, one cursor for both.
    let screen = shown(20, 4, b"AB\x1b[?1047h\x1b[3;3HX\x1b[?1047lY");
    assert_eq!(lines(&screen), ["AB", "", "   Y"]);
    let screen = shown(20, 4, b"\x1b[?1047hX\x1b[?1047l\x1b[?1047h");
    assert_eq!(lines(&screen), [""; 0]);
    // Leaving 47 does not bring the cursor back.
    let screen = shown(20, 4, b"\x1b[2;2H\x1b[?47h\x1b[4;4H\x1b[?47lZ");
    assert_eq!(lines(&screen), ["", "", "", "   Z"]);
    // DECSTBM homes to the first row and column, and to the region's top in origin mode.
    assert_eq!(
        lines(&shown(20, 8, b"\x1b[5;5HX\x1b[3;6r|")),
        ["|", "", "", "", "    X"]
    );
    assert_eq!(lines(&shown(20, 8, b"\x1b[?6h\x1b[3;6r|")), ["", "", "|"]);
}

#[test]
fn answers_programs_wait_for() {
    let mut screen = Screen::new(TermSize::new(80, 24), 0);
    assert_eq!(screen.feed(b"\x1b[>c"), b"\x1b[>84;0;0c");
    assert_eq!(screen.feed(b"\x1b[>0c"), b"\x1b[>84;0;0c");
    let version = screen.feed(b"\x1b[>q");
    assert_eq!(
        String::from_utf8_lossy(&version),
        format!("\x1bP>|oino {}\x1b\\", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(screen.feed(b"\x1b[18t"), b"\x1b[8;24;80t");
    // In order with the others, each once.
    assert_eq!(
        screen.feed(b"\x1b[c\x1b[>c\x1b[6n"),
        b"\x1b[?1;2c\x1b[>84;0;0c\x1b[1;1R"
    );
}

#[test]
fn history_keeps_a_background_to_the_row_end_and_line_drawing() {
    let lines = [
        "\x1b[44mtext\x1b[K\x1b[0m".to_owned(),
        "\x1b(0lqk\x1b(B lqk \x1b)0\x0eqq\x0fq".to_owned(),
    ];
    let screen = ScreenSnapshot::from_lines(TermSize::new(20, 3), &lines, 0);
    assert!(
        screen.rows[0]
            .iter()
            .all(|cell| cell.bg == CellColor::Indexed(4)),
        "{:?}",
        screen.rows[0]
    );
    assert_eq!(screen.text().lines().nth(1), Some("┌─┐ lqk ──q"));
    assert!(screen.rows[2].iter().all(|cell| *cell == Cell::default()));
}

#[test]
fn rep_after_a_control_repeats_nothing_and_in_a_rewritten_mode_repeats_as_drawn() {
    assert_eq!(lines(&shown(20, 3, b"A\r\n\x1b[3bx")), ["A", "x"]);
    // Struck through, every one.
    let screen = shown(20, 2, b"\x1b[9mA\x1b[3b");
    let struck = screen.rows[0][..4]
        .iter()
        .all(|cell| cell.attrs.strikethrough);
    assert!(struck, "{:?}", screen.rows[0]);
    // Autowrap off: no wrap; insert mode: inserted.
    let screen = shown(10, 3, b"\x1b[?7l\x1b[1;9HA\x1b[3b");
    assert_eq!(lines(&screen), ["        AA"]);
    let screen = shown(10, 3, b"xyz\x1b[1;1H\x1b[4hA\x1b[2b\x1b[4l");
    assert_eq!(lines(&screen), ["AAAxyz"]);
}

#[test]
fn sequences_vt100_ignores_erase_nothing_and_margins_read_as_vt100_reads_them() {
    let screen = shown(20, 3, b"abc\x1b[31m\x1b[>2J\x1b[1;1H\x1b[=K");
    assert_eq!(lines(&screen), ["abc"]);
    // `2:9;5` is rows 2 to 5 for vt100: a line feed on row 9 does not scroll.
    let screen = shown(20, 10, b"\x1b[44m\x1b[2:9;5r\x1b[9;1Hxyz\x1b[9;1H\n");
    assert_eq!(lines(&screen)[8], "xyz");
}

#[test]
fn leaving_a_screen_not_entered_keeps_a_pending_wrap() {
    let screen = shown(10, 3, b"\x1b[1;10HA\x1b[?1047lB");
    assert_eq!(lines(&screen), ["         A", "B"]);
}

#[test]
fn palette_colours_set_by_osc_4_are_drawn_and_reset_by_osc_104() {
    let mut screen = Screen::new(TermSize::new(20, 3), 0);
    screen.feed(b"\x1b]4;9;rgb:ff/80/00\x07\x1b[91mX\x1b[m \x1b]4;1;#102030\x1b\\\x1b[31mY");
    screen.feed(b"\x1b[m \x1b[38;5;9mZ\x1b[m \x1b]4;2;rgb:f/0/0;3;rgb:ffff/0/8000\x07");
    screen.feed(b"\x1b[32ma\x1b[43mb");
    let row = screen.snapshot(0).rows[0].clone();
    assert_eq!(row[0].fg, CellColor::Rgb(255, 128, 0));
    assert_eq!(row[2].fg, CellColor::Rgb(16, 32, 48));
    assert_eq!(row[4].fg, CellColor::Rgb(255, 128, 0));
    assert_eq!(row[6].fg, CellColor::Rgb(255, 0, 0));
    assert_eq!(row[7].bg, CellColor::Rgb(255, 0, 128));
    // Reset one, then all: the cells drawn before show the palette's own colours again.
    screen.feed(b"\x1b]104;9\x07");
    let row = screen.snapshot(0).rows[0].clone();
    assert_eq!(row[0].fg, CellColor::Indexed(9));
    assert_eq!(row[2].fg, CellColor::Rgb(16, 32, 48));
    screen.feed(b"\x1b]104\x1b\\");
    assert_eq!(screen.snapshot(0).rows[0][2].fg, CellColor::Indexed(1));
    // A cancelled or malformed OSC changes nothing; other OSCs (a title) neither.
    screen.feed(b"\x1b]4;1;#ff0000\x18\x1b]4;1;rgb:zz/0/0\x07\x1b]0;4;1;#ff0000\x07");
    assert_eq!(screen.snapshot(0).rows[0][2].fg, CellColor::Indexed(1));
}

#[test]
fn a_palette_change_outlives_a_flood_skipped_over() {
    let mut screen = Screen::new(TermSize::new(20, 3), 0);
    let mut bytes = b"\x1b]4;1;#010203\x07".to_vec();
    bytes.extend("line\r\n".repeat(100_000).bytes());
    bytes.extend(b"\x1b[31mred");
    screen.feed(&bytes);
    let snapshot = screen.snapshot(0);
    assert!(
        screen.parsed_bytes() < bytes.len() as u64 / 2,
        "the flood was parsed"
    );
    let red = snapshot.rows.iter().flatten().find(|cell| cell.text == "r");
    assert_eq!(red.map(|cell| cell.fg), Some(CellColor::Rgb(1, 2, 3)));
}
