use super::*;

#[test]
fn colors_and_attributes_reach_the_snapshot() {
    let mut screen = Screen::new(TermSize::new(20, 3), 10);
    screen.feed(b"\x1b[1;31mred\x1b[0m plain");
    let snapshot = screen.snapshot(0);
    assert_eq!(snapshot.text(), "red plain\n\n\n");
    let red = &snapshot.rows[0][0];
    assert_eq!(red.text, "r");
    assert_eq!(red.fg, CellColor::Indexed(1));
    assert!(red.attrs.bold);
    assert_eq!(snapshot.rows[0][4].fg, CellColor::Default);
    assert_eq!(snapshot.cursor, Some(CursorPos { row: 0, col: 9 }));
}

#[test]
fn text_laid_out_again_keeps_wide_characters_two_cells_wide() {
    let mut screen = Screen::new(TermSize::new(10, 2), 0);
    screen.feed("中文ab\r\ne\u{301}x".as_bytes());
    let live = screen.snapshot(0);
    screen.freeze();
    let frozen = screen.snapshot(0);
    assert_eq!(frozen.text(), live.text());
    assert_eq!(frozen.rows, live.rows);
    // What does not fit is left out whole.
    let narrow = ScreenSnapshot::from_lines(TermSize::new(5, 2), &["ab中文".into()], 0);
    assert_eq!(narrow.text(), "ab中\n\n");
}

#[test]
fn lines_read_back_from_a_log_show_their_colors() {
    let lines = ["\x1b[0;1;31mred\x1b[0m \x1b[0;48;5;200m中\x1b[m plain".to_owned()];
    let page = ScreenSnapshot::from_lines(TermSize::new(12, 1), &lines, 3);
    assert_eq!(page.text(), "red 中 plain\n\n");
    let cells = &page.rows[0];
    assert_eq!(cells[0].fg, CellColor::Indexed(1));
    assert!(cells[2].attrs.bold);
    assert_eq!(
        cells[3],
        Cell {
            text: " ".into(),
            ..Cell::default()
        }
    );
    assert_eq!(cells[4].bg, CellColor::Indexed(200));
    assert!(cells[4].wide);
    assert_eq!(cells[6].bg, CellColor::Default);
    assert_eq!(page.scroll_offset, 3);
}

/// `stream` fed a byte a read draws what parsing it all at once draws.
fn assert_bytewise_as_eager(stream: &[u8], size: TermSize) {
    let mut lazy = Screen::new(size, 30);
    for byte in stream {
        lazy.feed(&[*byte]);
    }
    let mut eager = Screen::new(size, 30);
    eager.feed_eager(stream);
    assert_eq!(lazy.snapshot(0), eager.snapshot(0), "{stream:?}");
}

/// Found by a long property run: a broken character before a dropped string control must not
/// join the bytes after it.
#[test]
fn a_character_broken_before_a_dropped_string_stays_dropped() {
    assert_bytewise_as_eager(
        &[27, 93, 7, 206, 194, 27, 93, 26, 128, 7],
        TermSize::new(2, 2),
    );
}

/// Found by a long property run: in insert mode, a broken character is dropped as the
/// parser drops it, however the reads fall.
#[test]
fn a_broken_character_in_insert_mode_is_dropped_as_the_parser_drops_it() {
    assert_bytewise_as_eager(
        &[27, 91, 52, 104, 27, 93, 7, 32, 13, 194, 27, 92],
        TermSize::new(2, 2),
    );
    // vt100 draws no U+FFFD, even one written as such: nor do the modes it lacks.
    for input in ["\u{fffd}x", "\x1b[4h\u{fffd}x", "\x1b[5m\u{fffd}x"] {
        let mut screen = Screen::new(TermSize::new(4, 2), 0);
        screen.feed(input.as_bytes());
        assert_eq!(screen.snapshot(0).text(), "x\n\n", "{input:?}");
    }
}

/// Found by a long property run: a scroll region set by a sequence with a control within
/// still keeps a flood from being skipped.
#[test]
fn a_scroll_region_with_a_control_within_is_known() {
    let mut stream = b"\x1b[2\x00r\x1b[d".to_vec();
    for n in 0..1000 {
        stream.extend(format!("f{n}\r\n").bytes());
    }
    let mut lazy = Screen::new(TermSize::new(2, 3), 0);
    lazy.feed(&stream);
    let mut eager = Screen::new(TermSize::new(2, 3), 0);
    eager.feed_eager(&stream);
    assert_eq!(lazy.snapshot(0), eager.snapshot(0));
}

#[test]
fn cursor_position_queries_are_answered() {
    let mut screen = Screen::new(TermSize::new(20, 5), 10);
    assert_eq!(screen.feed(b"ab\r\ncd\x1b[6n"), b"\x1b[2;3R");
    assert!(screen.feed(b"no query here").is_empty());
}

#[test]
fn history_is_bounded_and_scrollable() {
    let mut screen = Screen::new(TermSize::new(10, 3), 5);
    for line in 0..20 {
        screen.feed(format!("{line}\r\n").as_bytes());
    }
    let live = screen.snapshot(0);
    assert_eq!(live.scrollback_rows, 5);
    assert_eq!(live.text(), "18\n19\n\n");
    let back = screen.snapshot(100);
    assert_eq!(back.scroll_offset, 5);
    assert_eq!(back.cursor, None);
    assert_eq!(back.text(), "13\n14\n15\n");
}

/// Streams of many kinds, to compare the lazy screen with one that parses every byte.
fn streams() -> Vec<(&'static str, Vec<u8>)> {
    let plain = lines(|n| format!("line {n}\r\n"));
    let bare_newlines = lines(|n| format!("bare {n}\n"));
    let wrapped = lines(|n| format!("{}{n}\r\n", "w".repeat(n % 170)));
    let mut alternate = plain.clone();
    alternate.extend(b"\x1b[?1049h\x1b[H\x1b[2Jfull screen");
    alternate.extend(plain.iter().take(50_000));
    alternate.extend(b"\x1b[?1049l");
    alternate.extend(plain.iter().take(20_000));
    let mut region = b"\x1b[1;10r".to_vec();
    region.extend(&plain);
    region.extend(b"\x1b[24;1Hstatus line");
    let mut saved = b"top\x1b7".to_vec();
    saved.extend(&plain);
    saved.extend(b"\x1b8restored");
    vec![
        ("plain", plain),
        ("colored", colored()),
        ("bare newlines", bare_newlines),
        ("wrapped", wrapped),
        ("cumulative colors and modes", cumulative()),
        ("alternate screen", alternate),
        ("scroll region", region),
        ("saved cursor", saved),
        ("string controls", string_controls()),
        ("repeats and controls within sequences", repeats()),
        ("what vt100 lacks", what_vt100_lacks()),
    ]
}

/// The bytes of `line(n)` for each `n` from 0 to 2999.
fn lines(line: impl Fn(usize) -> String) -> Vec<u8> {
    (0..3000).flat_map(|n| line(n).into_bytes()).collect()
}

/// Colored lines, each rewritten after a carriage return.
fn colored() -> Vec<u8> {
    let mut colored = lines(|n| {
        format!(
            "\x1b[3{}m{n}\x1b[0m \x1b[1mbold\x1b[22m progress {n}%\r\x1b[Kdone {n} ✓\r\n",
            n % 8
        )
    });
    colored.extend(b"\x1b[44mstill blue at the end\x1b[?25l");
    // Enough to pass the backlog's bound with no one looking.
    colored.repeat(12)
}

/// Colors and modes whose effect outlives the rows they were set on.
fn cumulative() -> Vec<u8> {
    let mut cumulative = b"\x1b[?25l\x1b[4h".to_vec();
    cumulative.extend(lines(|n| {
        let bold = if n % 100 == 0 { "\x1b[0;1m" } else { "" };
        format!("{bold}\x1b[3{}m{n}\x1b[5C\x1b[K\r\n", n % 8)
    }));
    cumulative
}

/// Titles, links, sixels and APCs, some cut short by a CAN or a new sequence; the last one
/// unterminated.
fn string_controls() -> Vec<u8> {
    let mut strings = lines(|n| {
        format!(
            "\x1b]0;title {n}\x07\x1b]8;;http://x/{n}\x1b\\link {n}\x1b]8;;\x1b\\ \
                 \x1bPq#0;2;0;0;0#0!9~\x1b\\sixel\x1b_apc\x18 \x1b]2;cut\x1b[3{}mcolor\r\n",
            n % 8
        )
    });
    strings.extend(b"\x1b]0;unterminated at the end");
    strings
}

/// Repeats (`CSI b`), some huge, and controls within a sequence.
fn repeats() -> Vec<u8> {
    lines(|n| {
        let huge = if n % 700 == 0 {
            "x\x1b[65535by\x1b[1000bz\r\n"
        } else {
            ""
        };
        format!("r{n}\x1b[3b\x1b[3\n1m\r\n{huge}")
    })
}

/// What vt100 lacks: tab stops, line drawing, index moves, autowrap off, insert mode.
fn what_vt100_lacks() -> Vec<u8> {
    let mut extras = b"\x1b[3g\x1b[1;5H\x1bH\x1b[1;13H\x1bH\x1b)0\r".to_vec();
    for n in 0..3000 {
        extras.extend(format!("\t{n}\x0elqk\x0f\x1bD\x1bE\tx\r\n").bytes());
        match n {
            500 => extras.extend(b"\x1b#8\x1b[9;1H"),
            1000 => extras.extend(b"\x1b[5;9m"),
            2500 => extras.extend(b"\x1b[25m"),
            1500 => extras.extend(format!("\x1b[?7l{}\r\n", "z".repeat(300)).bytes()),
            2000 => extras.extend(b"\x1b[4hab\rc\r\n\x1b[4l\x1b[?7h"),
            _ => {}
        }
    }
    extras
}

fn assert_same(lazy: &mut Screen, eager: &mut Screen, offset: usize, context: &str) {
    let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
    assert!(
        lazy == eager,
        "{context}, {offset} rows back:\nlazy (cursor {:?}, {} back):\n{}\neager (cursor {:?}, {} back):\n{}",
        lazy.cursor,
        lazy.scrollback_rows,
        lazy.text(),
        eager.cursor,
        eager.scrollback_rows,
        eager.text()
    );
}

#[test]
fn the_lazy_screen_equals_parsing_every_byte() {
    for (name, stream) in streams() {
        for (piece, look_every) in [
            (65_536, 1),
            (4096, 7),
            (997, 50),
            (13, 5000),
            (8192, usize::MAX),
        ] {
            let size = TermSize::new(40, 8);
            let mut lazy = Screen::new(size, 30);
            let mut eager = Screen::new(size, 30);
            for (index, chunk) in stream.chunks(piece).enumerate() {
                lazy.feed(chunk);
                eager.feed_eager(chunk);
                if index % look_every == look_every - 1 {
                    assert_same(
                        &mut lazy,
                        &mut eager,
                        0,
                        &format!("{name}, {piece}-byte chunks"),
                    );
                }
            }
            for offset in [0, 5, 30] {
                assert_same(
                    &mut lazy,
                    &mut eager,
                    offset,
                    &format!("{name}, {piece}-byte chunks"),
                );
            }
        }
    }
}

#[test]
fn a_flood_is_mostly_skipped_and_a_full_screen_program_is_not() {
    let streams = streams();
    let parsed = |name: &str| {
        let (_, stream) = streams.iter().find(|(n, _)| *n == name).expect("stream");
        let mut screen = Screen::new(TermSize::new(40, 8), 30);
        for chunk in stream.chunks(65_536) {
            screen.feed(chunk);
        }
        screen.flush();
        (screen.parsed_bytes(), stream.len() as u64)
    };
    let (plain, plain_total) = parsed("plain");
    assert!(plain < plain_total / 10, "{plain} of {plain_total}");
    let (colored, colored_total) = parsed("colored");
    assert!(colored < colored_total / 2, "{colored} of {colored_total}");
    let (region, region_total) = parsed("scroll region");
    assert_eq!(region, region_total);
}

#[test]
fn a_query_is_answered_even_deep_in_a_backlog() {
    let mut screen = Screen::new(TermSize::new(20, 5), 10);
    assert!(screen.feed(b"some output\r\n").is_empty());
    assert_eq!(screen.feed(b"x\x1b[6n"), b"\x1b[2;2R");
}

#[test]
fn string_controls_are_dropped_and_bound_nothing() {
    let mut screen = Screen::new(TermSize::new(20, 3), 0);
    screen.feed(b"before\r\n\x1b]0;");
    let title = vec![b't'; 4 << 20];
    for chunk in title.chunks(65_536) {
        screen.feed(chunk);
    }
    assert!(
        screen.backlog.bytes.len() < 64,
        "{}",
        screen.backlog.bytes.len()
    );
    // A new sequence ends it, as on a terminal; the text after shows.
    screen.feed(b"\n\x1b[32mPASS\x1b[0m test_a\r\ndone");
    assert_eq!(screen.snapshot(0).text(), "before\nPASS test_a\ndone\n");
    assert!(screen.parsed_bytes() < 200, "{}", screen.parsed_bytes());
}

#[test]
fn a_huge_repeat_costs_a_screenful_and_ends_in_the_same_column() {
    let size = TermSize::new(10, 3);
    let mut screen = Screen::new(size, 0);
    screen.feed(b"ab\x1b[65535b");
    // 5 rows of 10 (the screen, its history and two more), plus what keeps the column
    // (65535 - 50 = 1297 periods of 50, and 35).
    assert_eq!(screen.backlog.bytes, b"ab\x1b[85b");
    let mut eager = Screen::new(size, 0);
    eager.feed_eager(b"ab\x1b[65535b");
    assert_eq!(screen.snapshot(0), eager.snapshot(0));
    assert_eq!(
        screen.snapshot(0).cursor,
        Some(CursorPos { row: 2, col: 7 })
    );
}

#[test]
fn a_repeat_with_a_control_within_or_an_intermediate_is_no_way_around_the_cut() {
    let size = TermSize::new(10, 3);
    let mut screen = Screen::new(size, 0);
    screen.feed(&b"x\x1b[65535\x00b".repeat(3));
    assert!(
        !screen
            .backlog
            .bytes
            .windows(5)
            .any(|window| window == b"65535")
    );
    // Its start flushed away, a repeat is still cut.
    let mut screen = Screen::new(size, 0);
    screen.feed(b"x\x1b[655");
    screen.flush();
    screen.feed(b"35b");
    assert!(
        !screen
            .backlog
            .bytes
            .windows(2)
            .any(|window| window == b"35")
    );
    let mut eager = Screen::new(size, 0);
    eager.feed_eager(b"x\x1b[65535b");
    assert_eq!(screen.snapshot(0), eager.snapshot(0));
    // A control within a repeat is carried out within it, as the parser met it: it does not
    // end what the repeat repeats (found by the property test below, byte by byte at 2x2).
    for chunk in [1, 100] {
        let stream = b"0\x1b[65535\x00b";
        let mut screen = Screen::new(TermSize::new(2, 2), 30);
        for piece in stream.chunks(chunk) {
            screen.feed(piece);
        }
        let mut eager = Screen::new(TermSize::new(2, 2), 30);
        eager.feed_eager(stream);
        assert_eq!(
            screen.snapshot(0),
            eager.snapshot(0),
            "in pieces of {chunk}"
        );
    }
    // With an intermediate, `b` is not a repeat: nothing is drawn.
    let mut screen = Screen::new(size, 0);
    screen.feed(b"x\x1b[65535 b");
    assert_eq!(screen.snapshot(0).text(), "x\n\n\n");
}

#[test]
fn a_character_split_between_reads_loses_nothing_after_it() {
    // vte 0.15 drops the space after `®` when `®` comes in two reads and `é` follows.
    let mut screen = Screen::new(TermSize::new(20, 3), 0);
    screen.feed(b"a\xc2");
    assert_eq!(screen.snapshot(0).text(), "a\n\n\n");
    screen.feed("\u{ae} é".as_bytes().get(1..).expect("bytes"));
    assert_eq!(screen.snapshot(0).text(), "a® é\n\n\n");
}

#[test]
fn a_character_cut_by_a_dropped_string_does_not_join_what_follows() {
    // The parser drops `\xc2` at the ESC; dropping the string must not make `\xc2\xa0`.
    for stream in [&b"a\xc2\x1b]0;t\x1a\xa0b"[..], b"a\xc2\x1b\\\xa0b"] {
        let size = TermSize::new(20, 3);
        let mut eager = Screen::new(size, 0);
        eager.feed_eager(stream);
        for chunk in [1, stream.len()] {
            let mut screen = Screen::new(size, 0);
            for part in stream.chunks(chunk) {
                screen.feed(part);
            }
            assert_eq!(
                screen.snapshot(0),
                eager.snapshot(0),
                "{stream:?} by {chunk}"
            );
        }
    }
}

#[test]
fn a_frozen_screen_keeps_its_text() {
    let mut screen = Screen::new(TermSize::new(20, 3), 10);
    screen.feed(b"\x1b[31mred\x1b[0m\r\nsecond");
    screen.freeze();
    assert_eq!(screen.snapshot(0).text(), "red\nsecond\n\n");
    screen.resize(TermSize::new(4, 2));
    assert_eq!(screen.snapshot(0).text(), "red\nseco\n");
}

#[test]
fn tiny_sizes_are_raised_to_two_by_two() {
    let mut screen = Screen::new(TermSize { cols: 0, rows: 0 }, 0);
    screen.feed(b"hello");
    assert_eq!(screen.size(), TermSize::new(2, 2));
    screen.resize(TermSize { cols: 1, rows: 1 });
    assert_eq!(screen.snapshot(0).rows.len(), 2);
}

/// Found by the property below at length: a private `CSI ? r` after a scroll region was
/// taken for the region's reset, and a flood within the region was skipped.
#[test]
fn a_private_csi_r_keeps_the_scroll_region_for_a_skip() {
    let flood: Vec<u8> = (0..1000)
        .flat_map(|n| format!("flood line {n}\r\n").into_bytes())
        .collect();
    let stream = [&b"\x1b[3r\x1b[?r"[..], &flood, b"\x1b8", &flood].concat();
    let size = TermSize::new(6, 4);
    let mut lazy = Screen::new(size, 30);
    for chunk in stream.chunks(65_536) {
        lazy.feed(chunk);
    }
    let mut eager = Screen::new(size, 30);
    eager.feed_eager(&stream);
    assert_eq!(lazy.snapshot(0), eager.snapshot(0));
}

mod properties {
    use proptest::prelude::*;

    use super::super::*;
    use crate::screen::decode::hostile;

    /// Where two screens differ, in a few words.
    fn difference(lazy: &ScreenSnapshot, eager: &ScreenSnapshot) -> String {
        let cell =
            lazy.rows
                .iter()
                .zip(&eager.rows)
                .enumerate()
                .find_map(|(row, (lazy, eager))| {
                    let col = lazy.iter().zip(eager).position(|(a, b)| a != b)?;
                    Some(format!(
                        "cell {row},{col}: {:?} vs {:?}",
                        lazy[col], eager[col]
                    ))
                });
        format!(
            "{}; cursor {:?} vs {:?}; modes {:?} vs {:?}; text\n{}vs\n{}",
            cell.unwrap_or_default(),
            lazy.cursor,
            eager.cursor,
            (
                lazy.alternate_screen,
                lazy.application_cursor,
                lazy.bracketed_paste,
                lazy.scrollback_rows
            ),
            (
                eager.alternate_screen,
                eager.application_cursor,
                eager.bracketed_paste,
                eager.scrollback_rows
            ),
            lazy.text(),
            eager.text()
        )
    }

    proptest! {
        #![proptest_config(hostile::config())]

        #[test]
        fn any_stream_is_drawn_as_parsing_every_byte_would_in_bounded_memory(
            stream in hostile::stream_of_characters(),
            sizes in hostile::chunk_sizes(),
            (cols, rows) in (2u16..120, 2u16..40),
            resized in proptest::option::of((2u16..120, 2u16..40)),
        ) {
            let size = TermSize::new(cols, rows);
            let mut lazy = Screen::new(size, 30);
            let chunks = hostile::chunked(&stream, &sizes);
            let half = chunks.len() / 2;
            for (index, chunk) in chunks.iter().enumerate() {
                if index == half {
                    if let Some((cols, rows)) = resized {
                        lazy.resize(TermSize::new(cols, rows));
                    }
                }
                lazy.feed(chunk);
                prop_assert!(lazy.backlog.bytes.len() <= MAX_BACKLOG_BYTES + chunk.len());
            }
            if let (true, Some((cols, rows))) = (chunks.is_empty(), resized) {
                lazy.resize(TermSize::new(cols, rows));
            }
            // The reference parses every byte, in one read (two around a resize), never
            // splitting a character.
            let mut eager = Screen::new(size, 30);
            let (before, after) = stream.split_at(chunks[..half].iter().map(|chunk| chunk.len()).sum());
            let before_whole = before.len() - unfinished_character(before);
            eager.feed_eager(&before[..before_whole]);
            if let Some((cols, rows)) = resized {
                eager.resize(TermSize::new(cols, rows));
            }
            eager.feed_eager(&[&before[before_whole..], after].concat());
            for offset in [0, 7] {
                let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
                prop_assert!(lazy == eager, "{offset} back: {}", difference(&lazy, &eager));
            }
            prop_assert_eq!((lazy.parser_resets, eager.parser_resets), (0, 0));
        }

        /// With raw invalid bytes in the text too (where the parser itself draws differently
        /// depending on how the bytes are split into reads), nothing panics and memory stays
        /// bounded.
        #[test]
        fn any_bytes_at_all_are_taken_in_bounded_memory(
            stream in hostile::stream(),
            sizes in hostile::chunk_sizes(),
            (cols, rows) in (2u16..120, 2u16..40),
        ) {
            let mut screen = Screen::new(TermSize::new(cols, rows), 30);
            for chunk in hostile::chunked(&stream, &sizes) {
                screen.feed(chunk);
                prop_assert!(screen.backlog.bytes.len() <= MAX_BACKLOG_BYTES + chunk.len());
            }
            let snapshot = screen.snapshot(0);
            prop_assert_eq!(snapshot.rows.len(), usize::from(rows));
            prop_assert_eq!(screen.parser_resets, 0);
        }
    }

    proptest! {
        // Each case parses a flood of up to 20,000 lines twice: fewer of them.
        #![proptest_config(ProptestConfig {
            cases: hostile::config().cases.div_ceil(4),
            ..hostile::config()
        })]

        /// Floods long enough to be skipped, between hostile sequences: what the lazy
        /// screen keeps over a skip still draws what parsing every byte draws.
        #[test]
        fn floods_between_hostile_sequences_are_skipped_without_a_trace(
            pieces in proptest::collection::vec(hostile::stream_of_characters(), 1..4),
            flood_lines in 1000usize..20_000,
            (cols, rows) in (2u16..120, 2u16..40),
        ) {
            let flood: Vec<u8> = (0..flood_lines)
                .flat_map(|n| format!("flood line {n}\r\n").into_bytes())
                .collect();
            let stream: Vec<u8> = pieces
                .iter()
                .flat_map(|piece| [piece.as_slice(), &flood].concat())
                .collect();
            let size = TermSize::new(cols, rows);
            let mut lazy = Screen::new(size, 30);
            for chunk in stream.chunks(65_536) {
                lazy.feed(chunk);
            }
            let mut eager = Screen::new(size, 30);
            eager.feed_eager(&stream);
            for offset in [0, 7] {
                let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
                prop_assert!(lazy == eager, "{offset} back: {}", difference(&lazy, &eager));
            }
        }
    }
}

#[test]
fn a_finished_screen_nobody_looked_at_keeps_a_few_rows_of_output_and_no_grid() {
    for (name, stream) in streams() {
        let size = TermSize::new(40, 8);
        let mut lazy = Screen::new(size, 0);
        let mut eager = Screen::new(size, 0);
        for chunk in stream.chunks(65_536) {
            lazy.feed(chunk);
            eager.feed_eager(chunk);
        }
        lazy.settle();
        if name == "plain" || name == "colored" {
            assert!(!lazy.parsing(), "{name}: parsed before anyone looked");
            assert!(
                lazy.backlog_bytes() < 4096,
                "{name}: {} bytes kept",
                lazy.backlog_bytes()
            );
        }
        // A look parses it, at the size it has by then.
        let resized = TermSize::new(30, 6);
        lazy.resize(resized);
        eager.resize(resized);
        assert_same(&mut lazy, &mut eager, 0, &format!("{name}, settled"));
        assert!(lazy.parsing());
    }
}

#[test]
fn a_screen_resized_before_its_first_byte_draws_at_its_new_size() {
    let mut screen = Screen::new(TermSize::new(40, 8), 0);
    screen.resize(TermSize::new(20, 3));
    assert!(!screen.parsing());
    screen.feed(b"one\r\ntwo\r\nthree\r\nfour");
    let snapshot = screen.snapshot(0);
    assert_eq!(snapshot.rows.len(), 3);
    assert_eq!(snapshot.rows[0].len(), 20);
    assert_eq!(snapshot.text(), "two\nthree\nfour\n");
}

/// A stray ST (here after an OSC cancelled by CAN) ends what REP may repeat, read a byte at a
/// time as at once (found by the property that compares with parsing every byte).
#[test]
fn a_stray_string_terminator_ends_what_rep_repeats_however_it_is_read() {
    let stream: &[u8] = b"\x1b]\x18  \x1b\\\x1b[b";
    let size = TermSize::new(2, 2);
    let mut lazy = Screen::new(size, 30);
    for byte in stream {
        lazy.feed(std::slice::from_ref(byte));
    }
    let mut eager = Screen::new(size, 30);
    eager.feed_eager(stream);
    assert_same(&mut lazy, &mut eager, 0, "a stray ST, then REP");
}
