#![allow(clippy::format_collect)] // Expected outputs read best as one format per line.

use super::super::index::OutputIndex;
use super::super::log::RawLog;
use super::*;

/// A log of `raw` in a temp folder, with its index.
fn logged(label: &str, raw: &[u8]) -> (RawLog, OutputIndex, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("oino-read-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = RawLog::create(&dir, label);
    let mut index = OutputIndex::default();
    for chunk in raw.chunks(997) {
        let offset = index.recorded();
        let start = index.record(chunk);
        log.append(offset, chunk, start);
    }
    index.finish();
    (log, index, dir)
}

/// The first two lines of a whole log, 80 columns wide.
fn first_two_lines(log: &RawLog, index: &OutputIndex) -> Vec<String> {
    read_lines(
        &log.view(),
        index.checkpoint_for_line(0),
        0,
        2,
        index.boundary(),
        80,
    )
    .unwrap()
}

#[test]
fn a_capped_log_reads_by_line_number_and_its_index_stays_small() {
    let dir = std::env::temp_dir().join(format!("oino-read-capped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = RawLog::create(&dir, "capped").capped(super::super::log::MIN_LOG_CAP);
    let mut index = OutputIndex::default();
    let lines = 400_000;
    let raw: String = (0..lines)
        .map(|n| format!("\x1b[32mline {n}\x1b[0m\r\n"))
        .collect();
    for chunk in raw.as_bytes().chunks(4093) {
        let offset = index.recorded();
        let start = index.record(chunk);
        log.append(offset, chunk, start);
        if let Some(dropped) = log.take_dropped() {
            index.forget(dropped);
        }
    }
    index.finish();
    let cut = log.cut().expect("capped");
    assert!(cut.left_out > 5 * cut.head, "{cut:?}");
    // Without forgetting the cut's checkpoints the index would hold over 400.
    assert!(index.checkpoints() < 60, "{}", index.checkpoints());
    let view = log.view();
    let end = index.boundary();
    assert_eq!(index.lines(), lines + 1);
    let at = |first| read_lines(&view, index.checkpoint_for_line(first), first, 2, end, 80);
    let green = |n| format!("\x1b[0;32mline {n}\x1b[m");
    assert_eq!(at(lines - 2).unwrap(), [green(lines - 2), green(lines - 1)]);
    assert_eq!(at(3).unwrap(), [green(3), green(4)]);
    let middle = at(lines / 2).unwrap();
    assert!(
        middle.len() == 2 && middle.iter().all(|line| line.contains("reached its cap")),
        "{middle:?}"
    );
    let is = |wanted: String| move |text: &str| text.trim_end() == wanted;
    let kept = lines - 10;
    assert_eq!(
        find_line(&view, end, 0, true, 80, is(format!("line {kept}")))
            .unwrap()
            .line,
        Some(kept)
    );
    let lost = lines / 2;
    assert_eq!(
        find_line(&view, end, 0, true, 80, is(format!("line {lost}")))
            .unwrap()
            .line,
        None
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn lines_are_found_through_the_index_and_searched() {
    let raw: String = (0..5000)
        .map(|n| format!("\x1b[32mline {n}\x1b[0m\r\n"))
        .collect();
    let (log, index, dir) = logged("lines", raw.as_bytes());
    let view = log.view();
    let end = index.boundary();
    assert_eq!(index.lines(), 5001);
    let at = |first| read_lines(&view, index.checkpoint_for_line(first), first, 3, end, 80);
    // Lines keep their colors, each standing alone.
    let green = |n| format!("\x1b[0;32mline {n}\x1b[m");
    assert_eq!(at(2047).unwrap(), [green(2047), green(2048), green(2049)]);
    assert_eq!(at(4999).unwrap(), [green(4999), String::new()]);
    let is = |wanted: &'static str| move |text: &str| text.trim_end() == wanted;
    assert_eq!(
        find_line(&view, end, 4000, false, 80, is("line 123"))
            .unwrap()
            .line,
        Some(123)
    );
    assert_eq!(
        find_line(&view, end, 100, true, 80, is("line 4321"))
            .unwrap()
            .line,
        Some(4321)
    );
    assert_eq!(
        find_line(&view, end, 100, false, 80, is("line 4321"))
            .unwrap()
            .line,
        None
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn slices_end_on_a_line_and_resume_exactly_without_splitting_anything() {
    let raw: String = (0..300)
        .map(|n| format!("\x1b[31m{n} ж€😀\x1b[0m\r\n"))
        .collect();
    let (log, index, dir) = logged("slices", raw.as_bytes());
    let view = log.view();
    for max in [1, 7, 37, 100, 4096] {
        let mut offset = 0;
        let mut text = String::new();
        while offset < index.boundary() {
            let slice = read_slice(&view, offset, index.boundary(), max, 80).unwrap();
            assert!(slice.next_offset > offset);
            assert!(!slice.text.contains('\u{fffd}') && !slice.text.contains("[3"));
            text.push_str(&slice.text);
            offset = slice.next_offset;
        }
        assert_eq!(text, super::super::clean::clean_text(raw.as_bytes(), 80));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn any_offset_is_moved_to_the_next_boundary() {
    let raw = "ab\x1b[31mжcd\x1b]0;title\x07ef".as_bytes();
    let (log, index, dir) = logged("snap", raw);
    let view = log.view();
    let start = index.checkpoint_before(0);
    let snapped: Vec<u64> = (0..=raw.len() as u64)
        .map(|wanted| boundary_at_or_after(&view, start, wanted, raw.len() as u64).unwrap())
        .collect();
    assert_eq!(
        snapped,
        [
            0, 1, 2, 7, 7, 7, 7, 7, 9, 9, 10, 11, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 22, 23
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn lines_lost_to_a_full_disk_read_as_notices_and_the_rest_keeps_its_numbers() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut log = RawLog::over(full, "/dev/full".into(), 64);
    let mut index = OutputIndex::default();
    for n in 0..100 {
        let line = format!("line {n}\n");
        let offset = index.recorded();
        let start = index.record(line.as_bytes());
        log.append(offset, line.as_bytes(), start);
    }
    let view = log.view();
    let end = index.boundary();
    let lost = read_lines(&view, index.checkpoint_for_line(0), 0, 2, end, 80).unwrap();
    assert_eq!(lost.len(), 2);
    assert!(
        lost.iter()
            .all(|line| line.contains("bytes of output lost")),
        "{lost:?}"
    );
    let kept = read_lines(&view, index.checkpoint_for_line(98), 98, 5, end, 80).unwrap();
    assert_eq!(kept, ["line 98", "line 99", ""]);
    let found = find_line(&view, end, 0, true, 80, |line| line == "line 97").unwrap();
    assert_eq!(found.line, Some(97));
}

#[test]
fn a_page_far_from_where_its_color_was_set_keeps_it() {
    // Set once, thousands of lines (several checkpoints) before the page.
    let mut raw = String::from("\x1b[1;38;5;208m");
    raw.extend((0..5000).map(|n| format!("line {n}\n")));
    raw.push_str("\x1b[mplain\n");
    let (log, index, dir) = logged("pen", raw.as_bytes());
    assert!(
        index.checkpoint_for_line(4998).offset > 0,
        "no checkpoint after the start"
    );
    let lines = read_lines(
        &log.view(),
        index.checkpoint_for_line(4998),
        4998,
        3,
        index.boundary(),
        80,
    )
    .unwrap();
    let orange = |n| format!("\x1b[0;1;38;5;208mline {n}\x1b[m");
    assert_eq!(lines, [orange(4998), orange(4999), "plain".to_owned()]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_long_colored_line_is_cut_by_what_it_shows_and_ends_reset() {
    let cell = "\x1b[38;2;1;2;3mx\x1b[48;5;9my";
    let raw = format!("{}\nnext\n", cell.repeat(MAX_LINE_CHARS));
    let (log, index, dir) = logged("colored-long", raw.as_bytes());
    let lines = first_two_lines(&log, &index);
    let shown: String = crate::output::clean_text(lines[0].as_bytes(), 80);
    assert_eq!(shown.chars().count(), MAX_LINE_CHARS + 1, "{shown:?}");
    assert!(
        lines[0].ends_with("\x1b[m…"),
        "{:?}",
        &lines[0][lines[0].len() - 40..]
    );
    // The next line has the pen that was left set, and ends reset.
    assert_eq!(lines[1], "\x1b[0;38;2;1;2;3;101mnext\x1b[m");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_long_line_is_cut_for_readers_of_lines() {
    let raw = format!("{}\nnext\n", "x".repeat(100_000));
    let (log, index, dir) = logged("long", raw.as_bytes());
    let lines = first_two_lines(&log, &index);
    assert_eq!(lines[0].chars().count(), MAX_LINE_CHARS + 1);
    assert_eq!(lines[1], "next");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A reader's slice from `from`, as the sink reads one (see `OutputSink::read`).
fn slice_from(log: &RawLog, index: &OutputIndex, from: u64, max_bytes: usize) -> OutputSlice {
    let view = log.view();
    let from =
        boundary_at_or_after(&view, index.checkpoint_before(from), from, index.boundary()).unwrap();
    read_slice(&view, from, index.boundary(), max_bytes, 80).unwrap()
}

/// Records `chunk` as the sink does, the index forgetting what the log left out.
fn record(log: &mut RawLog, index: &mut OutputIndex, chunk: &[u8]) {
    let offset = index.recorded();
    let start = index.record(chunk);
    log.append(offset, chunk, start);
    if let Some(dropped) = log.take_dropped() {
        index.forget(dropped);
    }
}

fn bytes_on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .sum()
}

/// The byte counts that gap notices in `text` announce.
fn announced(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|line| line.strip_prefix("[... "))
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn the_cap_holds_inside_a_sequence_that_never_ends() {
    let dir = std::env::temp_dir().join(format!("oino-read-endless-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cap = crate::output::MIN_LOG_CAP;
    let mut log = RawLog::create(&dir, "endless").capped(cap);
    let mut index = OutputIndex::default();
    // Lines past the head, then a title that never ends: the last boundary is in the
    // second part, which the cap drops.
    let lines: String = (0..40_000).map(|n| format!("line {n}\n")).collect();
    record(&mut log, &mut index, b"before\n");
    for piece in lines.as_bytes().chunks(64 * 1024) {
        record(&mut log, &mut index, piece);
    }
    record(&mut log, &mut index, b"\x1b]0;");
    let last_boundary = index.boundary();
    let chunk = vec![b'a'; 64 * 1024];
    let mut most_on_disk = 0;
    for _ in 0..(30 << 20) / chunk.len() {
        record(&mut log, &mut index, &chunk);
        most_on_disk = most_on_disk.max(bytes_on_disk(&dir));
    }
    // Each of its three files may pass its share by less than a chunk.
    assert!(
        most_on_disk <= cap + 3 * chunk.len() as u64,
        "{most_on_disk} bytes on disk under a cap of {cap}"
    );
    assert_eq!(index.boundary(), last_boundary);
    // While the string runs, nothing past the head can be read: a reader behind is told so,
    // and moves to the end of what is readable.
    let slice = slice_from(&log, &index, 0, 1 << 20);
    assert!(
        slice.text.starts_with("before\nline 0\n"),
        "{:?}",
        &slice.text[..20]
    );
    let behind = slice_from(&log, &index, last_boundary - 1000, 1 << 20);
    assert!(
        behind.text.starts_with("[... ") && behind.text.contains("left out"),
        "{:?}",
        behind.text
    );
    assert_eq!(behind.next_offset, last_boundary);
    // The string ends: the lines after it read as ever.
    record(&mut log, &mut index, b"\x07\nafter\n");
    index.finish();
    let mut text = String::new();
    let mut offset = 0;
    loop {
        let slice = slice_from(&log, &index, offset, 1 << 20);
        text.push_str(&slice.text);
        if slice.next_offset == offset {
            break;
        }
        offset = slice.next_offset;
    }
    let read: Vec<&str> = text.lines().collect();
    assert_eq!(read.first(), Some(&"before"));
    assert_eq!(read.last(), Some(&"after"));
    assert!(!text.contains("aaaa"), "a string is never text");
    std::fs::remove_dir_all(dir).unwrap();
}

/// What a reader that falls behind a capped log read: its text, notices included, and how
/// many bytes of the log its reads covered.
struct Followed {
    text: String,
    read_bytes: u64,
}

/// Writes `raw` into a capped log in `dir` while a reader follows it, falling behind.
fn follow_behind(dir: &std::path::Path, raw: &str) -> Followed {
    let mut log = RawLog::create(dir, "behind").capped(crate::output::MIN_LOG_CAP);
    let mut index = OutputIndex::default();
    let mut offset = 0;
    let mut followed = Followed {
        text: String::new(),
        read_bytes: 0,
    };
    let follow = |log: &RawLog, index: &OutputIndex, offset: &mut u64, followed: &mut Followed| {
        let slice = slice_from(log, index, *offset, 64 * 1024);
        assert_eq!(
            slice.from, *offset,
            "a silent jump from {offset} to {}",
            slice.from
        );
        followed.text.push_str(&slice.text);
        *offset = slice.next_offset;
        followed.read_bytes += slice.next_offset - slice.from;
    };
    // Chunks that split lines anywhere; the reader reads 64 KiB for every 160 written.
    for (number, chunk) in raw.as_bytes().chunks(4093).enumerate() {
        record(&mut log, &mut index, chunk);
        if number % 40 == 0 {
            follow(&log, &index, &mut offset, &mut followed);
        }
        // Now and then it catches up, ending within a line, and falls behind again: the
        // notice that follows such a read is a line of its own.
        if number % 400 == 399 {
            while offset < index.boundary() {
                follow(&log, &index, &mut offset, &mut followed);
            }
        }
    }
    index.finish();
    while offset < index.boundary() {
        follow(&log, &index, &mut offset, &mut followed);
    }
    followed
}

/// What the numbers a follower read came to, once each was checked against the one before.
struct Numbers {
    last: Option<u64>,
    /// Notices of bytes left out.
    gaps: usize,
    /// Lines the head ends with, cut short: a reader ends them before the notice.
    cut_short: u64,
}

/// Checks that every line of `text` is a notice or a whole number that follows the one
/// before it, jumping only right after a notice.
fn check_numbers(text: &str) -> Numbers {
    let lines: Vec<&str> = text.lines().collect();
    let mut numbers = Numbers {
        last: None,
        gaps: 0,
        cut_short: 0,
    };
    for (at, line) in lines.iter().enumerate() {
        if line.starts_with("[... ") {
            assert!(line.contains("left out"), "{line}");
            numbers.gaps += 1;
            continue;
        }
        let before_a_gap = lines
            .get(at + 1)
            .is_some_and(|next| next.starts_with("[... "));
        let after_a_gap = at > 0 && lines[at - 1].starts_with("[... ");
        let number: u64 = line
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line:?}"));
        match numbers.last {
            // The line the head ends with may be cut short; never one after a gap.
            Some(previous) if before_a_gap && !after_a_gap => {
                assert!(
                    (previous + 1).to_string().starts_with(line),
                    "{line} after {previous}"
                );
                numbers.cut_short += u64::from(number != previous + 1);
            }
            Some(previous) if after_a_gap => {
                assert!(number > previous + 1, "{number} after {previous} and a gap");
            }
            Some(previous) => assert_eq!(number, previous + 1, "a silent jump"),
            None => assert_eq!(number, 1),
        }
        numbers.last = Some(number);
    }
    numbers
}

/// `seq` into a capped log, followed by a reader that falls behind: every number it reads
/// is whole, each jump comes right after a notice, and the bytes read and the bytes
/// announced missing add up to all that was written.
#[test]
fn a_follower_behind_a_capped_log_is_told_every_gap_once_and_resumes_at_a_line_start() {
    let dir = std::env::temp_dir().join(format!("oino-read-behind-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let last = 600_000u64;
    let raw: String = (1..=last).map(|n| format!("{n}\n")).collect();
    let followed = follow_behind(&dir, &raw);
    let Numbers {
        last: previous,
        gaps,
        cut_short,
    } = check_numbers(&followed.text);
    assert_eq!(previous, Some(last));
    assert!(gaps > 3, "{gaps} gaps: the reader never fell behind");
    // Every byte was either read or announced missing.
    let missing: u64 = announced(&followed.text).iter().sum();
    let text_bytes = followed
        .text
        .lines()
        .filter(|line| !line.starts_with("[... "))
        .map(|line| line.len() as u64 + 1)
        .sum::<u64>();
    assert_eq!(followed.read_bytes, raw.len() as u64);
    assert_eq!(
        text_bytes + missing,
        raw.len() as u64 + cut_short,
        "{gaps} gaps"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn slices_read_on_from_where_the_last_one_ended_add_up_to_the_whole_output() {
    // One long line, no newline, colors and wide characters split anywhere: a follower reads
    // on from each slice's end with no scan for a boundary, and loses or repeats nothing.
    let raw: Vec<u8> = (0..3000)
        .flat_map(|n| format!("\x1b[3{}mab€{n}\x1b[0m ", n % 8).into_bytes())
        .collect();
    let (log, index, dir) = logged("boundaries", &raw);
    let view = log.view();
    let end = index.boundary();
    let whole = read_slice(&view, 0, end, usize::MAX, 80).unwrap().text;
    let mut followed = String::new();
    let mut from = 0;
    while from < end {
        let slice = read_slice(&view, from, end, 37, 80).unwrap();
        assert!(slice.next_offset > from, "stuck at {from}");
        followed.push_str(&slice.text);
        from = slice.next_offset;
        // Each end is where a read that scans for a boundary would have started too.
        assert_eq!(
            boundary_at_or_after(&view, index.checkpoint_before(from), from, end).unwrap(),
            from
        );
    }
    assert_eq!(followed, whole);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_search_counts_every_matching_line_and_ranks_the_one_found_newest_first() {
    let raw: String = (0..5000).map(|n| format!("line {n}\n")).collect();
    let (log, index, dir) = logged("count", raw.as_bytes());
    let view = log.view();
    let end = index.boundary();
    let matcher = crate::output::search::Matcher::new(r"^LINE 12\d$");
    // A capital makes it exact: nothing.
    let none = find_line(&view, end, 5001, false, 80, |line| matcher.is_match(line)).unwrap();
    assert_eq!(none, SearchHit::default());
    let matcher = crate::output::search::Matcher::new(r"^line 12\d$");
    let found = |from, newer| {
        find_line(&view, end, from, newer, 80, |line| matcher.is_match(line)).unwrap()
    };
    let hit = |line, rank| SearchHit {
        line: Some(line),
        rank,
        matches: 10,
    };
    // From the live end back: the newest of ten is the first.
    assert_eq!(found(5001, false), hit(129, 1));
    assert_eq!(found(129, false), hit(128, 2));
    assert_eq!(found(120, true), hit(121, 9));
    assert_eq!(found(0, true), hit(120, 10));
    // None further that way, ten in all.
    assert_eq!(
        found(120, false),
        SearchHit {
            line: None,
            rank: 0,
            matches: 10
        }
    );
    std::fs::remove_dir_all(dir).unwrap();
}

mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::screen::decode::{Step, hostile};

    /// Where a slice of `stream` from `from` ends, each byte through a decoder: what
    /// `slice_end` must say, however it gets there.
    fn byte_by_byte(stream: &[u8], from: usize, max_bytes: usize) -> u64 {
        let window_end = from + max_bytes.max(1);
        if window_end >= stream.len() {
            return stream.len() as u64;
        }
        let mut decoder = Decoder::new();
        let (mut line_end, mut boundary) = (None, None);
        for (at, &byte) in (from + 1..).zip(&stream[from..]) {
            let mut newline = false;
            decoder.advance(byte, &mut |step| newline |= step == Step::Execute(b'\n'));
            if decoder.at_boundary() {
                if at > window_end {
                    return line_end.or(boundary).unwrap_or(at) as u64;
                }
                boundary = Some(at);
                if newline {
                    line_end = Some(at);
                }
            }
        }
        stream.len() as u64
    }

    proptest! {
        #![proptest_config(hostile::config())]

        #[test]
        fn a_slice_ends_where_a_decoder_fed_byte_by_byte_says(
            stream in hostile::stream(),
            max_bytes in 1usize..300,
        ) {
            let (log, index, dir) = logged("slice-end", &stream);
            let view = log.view();
            let end = index.boundary();
            let boundaries = &stream[..usize::try_from(end).unwrap_or(usize::MAX)];
            let mut from = 0;
            while from < end {
                let ends = slice_end(&view, from, end, max_bytes).unwrap();
                let at = usize::try_from(from).unwrap_or(usize::MAX);
                prop_assert_eq!(ends, byte_by_byte(boundaries, at, max_bytes), "from {}", from);
                prop_assert!(ends > from);
                from = ends;
            }
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
