use super::*;
use crate::screen::Style;
use std::fs::OpenOptions;

/// A chunk that starts at a boundary.
fn starting_at(offset: u64) -> ChunkStart {
    ChunkStart {
        boundary: Some(Checkpoint {
            offset,
            line: 0,
            line_start: false,
            pen: Style::default(),
        }),
        line_start: None,
    }
}

fn read_all(view: &LogView, from: u64) -> (Vec<u8>, Vec<u64>) {
    let mut offset = from;
    let mut bytes = Vec::new();
    let mut gaps = Vec::new();
    let mut buffer = [0; 7];
    loop {
        match view.read_at(offset, &mut buffer).expect("read") {
            Piece::Bytes(count) => {
                bytes.extend_from_slice(&buffer[..count]);
                offset += count as u64;
            }
            Piece::Gap { resume, .. } => {
                gaps.push(offset);
                offset = resume.offset;
            }
            Piece::End => return (bytes, gaps),
        }
    }
}

#[test]
fn old_logs_are_pruned_and_new_ones_kept() {
    let dir = std::env::temp_dir().join(format!("oino-prune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = RawLog::create(&dir, "fresh");
    assert!(log.failure().is_none());
    let other = dir.join("notes.txt");
    std::fs::write(&other, "not a log").unwrap();
    assert_eq!(prune_logs(&dir, std::time::Duration::from_secs(3600)), 0);
    assert!(log.path().exists());
    // Written to, it is held: old or not, it stays (another server's cleanup too).
    assert_eq!(prune_logs(&dir, std::time::Duration::ZERO), 0);
    assert!(log.path().exists());
    log.close();
    assert_eq!(prune_logs(&dir, std::time::Duration::ZERO), 1);
    assert!(!log.path().exists());
    assert!(other.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_byte_at_a_time_is_kept_in_few_chunks_and_an_ended_call_keeps_less() {
    let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut log = RawLog::over(full, PathBuf::from("/dev/full"), MEMORY_TAIL_BYTES);
    for (offset, n) in (0..200_000u32).enumerate() {
        let offset = offset as u64;
        let byte = [b'a' + u8::try_from(n % 26).unwrap()];
        log.append(offset, &byte, starting_at(offset));
    }
    assert!(log.memory.len() <= 4, "{} chunks", log.memory.len());
    assert_eq!(read_all(&log.view(), 0).0.len(), 200_000);
    log.close();
    assert!(log.memory_bytes <= ENDED_MEMORY_TAIL_BYTES);
}

/// Bytes of the `.log` files in `dir`.
fn bytes_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .sum()
}

#[test]
fn a_capped_log_keeps_its_head_and_newest_part_and_says_what_it_left_out() {
    let dir = std::env::temp_dir().join(format!("oino-cap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cap = MIN_LOG_CAP;
    let mut log = RawLog::create(&dir, "runaway").capped(cap);
    let chunk_len = 10_000u64;
    let total = 2_100 * chunk_len;
    let byte_at = |offset: u64| b'a' + u8::try_from(offset * 7 / 13 % 26).unwrap();
    let mut offset = 0;
    let mut most_on_disk = 0;
    let mut dropped = Vec::new();
    while offset < total {
        let chunk: Vec<u8> = (offset..offset + chunk_len).map(byte_at).collect();
        log.append(offset, &chunk, starting_at(offset));
        dropped.extend(log.take_dropped());
        offset += chunk_len;
        most_on_disk = most_on_disk.max(bytes_on_disk(&dir));
    }
    assert!(log.failure().is_none(), "{:?}", log.failure());
    // Each of its three files may pass its share by less than a chunk.
    assert!(
        most_on_disk <= cap + 3 * chunk_len,
        "{most_on_disk} bytes on disk with a cap of {cap}"
    );
    let cut = log.cut().expect("the log says it was cut");
    assert_eq!(cut.head + cut.left_out + cut.newest, total);
    assert!(cut.head >= cap / 4 && cut.newest >= cap * 3 / 8, "{cut:?}");
    assert_eq!(dropped.first().map(|range| range.start), Some(cut.head));
    assert_eq!(
        dropped.last().map(|range| range.end),
        Some(cut.head + cut.left_out)
    );
    // A reader gets the head, one gap where the cut is, and the newest part, byte for byte.
    let (bytes, gaps) = read_all(&log.view(), 0);
    assert_eq!(gaps, vec![cut.head]);
    let expected: Vec<u8> = (0..cut.head)
        .chain(cut.head + cut.left_out..total)
        .map(byte_at)
        .collect();
    assert!(
        bytes == expected,
        "the bytes kept differ from those written"
    );
    assert!(log.cut().unwrap().to_string().contains("left out"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_full_file_keeps_the_newest_output_in_memory() {
    // /dev/full fails every write, as a full disk does.
    let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut log = RawLog::over(full, PathBuf::from("/dev/full"), 10);
    log.append(0, b"abcd", starting_at(0));
    assert!(log.failure().is_some_and(|why| why.contains("/dev/full")));
    log.append(4, b"efgh", starting_at(4));
    assert_eq!(read_all(&log.view(), 0), (b"abcdefgh".to_vec(), vec![]));
    // Past the limit, the oldest part goes and readers are told where the gap is.
    log.append(8, b"ijkl", starting_at(8));
    let (bytes, gaps) = read_all(&log.view(), 0);
    assert_eq!(
        (bytes.as_slice(), gaps.as_slice()),
        (&b"efghijkl"[..], &[0][..])
    );
    assert_eq!(read_all(&log.view(), 5).0, b"fghijkl");
}
