use regex::Regex;

use super::reader::Waited;
use super::*;
use crate::core::EntryState;
use crate::output::OutputSlice;

fn slice(from: u64, text: &str) -> OutputSlice {
    OutputSlice {
        text: text.to_owned(),
        from,
        next_offset: from + text.len() as u64,
    }
}

fn entry(bytes: u64, state: EntryState) -> EntryInfo {
    EntryInfo {
        id: "c1".into(),
        kind: EntryKind::Task,
        task_id: Some("t1".into()),
        name: Some("web".into()),
        title: None,
        command: "npm run dev".into(),
        cwd: "/".into(),
        pid: 1,
        started_ms: 0,
        detached_ms: Some(0),
        ended_ms: None,
        state,
        timed_out: false,
        bytes,
        detach_offset: 0,
        log_path: "/dev/null".into(),
        log_error: None,
        log_cut: None,
        waiting_for_input: None,
        ready: None,
        project: None,
    }
}

fn rendered(reader: &OutputReader, entry: &EntryInfo, outcome: &Waited) -> Vec<String> {
    reader
        .render(entry, (outcome, Duration::from_millis(500)), 12_400)
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

#[test]
fn a_line_split_across_slices_is_matched_whole() {
    let pattern = Regex::new("^listening on :3000$").expect("regex");
    let mut reader = OutputReader::new(10, 1000, Some(pattern));
    assert_eq!(reader.push(slice(10, "compiling\nlisten")), None);
    assert_eq!(
        reader.push(slice(26, "ing on :3000\nready\n")),
        Some("listening on :3000".to_owned())
    );
    let running = entry(45, EntryState::Running);
    assert_eq!(
        rendered(
            &reader,
            &running,
            &Waited::Matched("listening on :3000".into())
        ),
        [
            "compiling\nlistening on :3000\nready\n",
            "[matched /^listening on :3000$/: \"listening on :3000\"]\n\
                 [task t1 (\"web\"): running · 12.4 s · next since=45]\n"
        ]
    );
}

#[test]
fn a_long_wait_keeps_the_newest_output_and_says_what_it_skipped() {
    let pattern = Regex::new("done").expect("regex");
    let mut reader = OutputReader::new(0, 21, Some(pattern));
    let mut from = 0;
    for n in 0..10 {
        let text = format!("line {n:02} of work\n");
        assert_eq!(reader.push(slice(from, &text)), None);
        from += text.len() as u64;
    }
    assert_eq!(reader.push(slice(from, "done\n")), Some("done".into()));
    let ended = entry(from + 5, EntryState::Exited { code: 0 });
    let blocks = rendered(&reader, &ended, &Waited::Matched("done".into()));
    assert_eq!(blocks[0], "line 09 of work\ndone\n");
    assert!(
        blocks[1]
            .starts_with("[144 bytes of output skipped, offsets 0 to 144: read them with since=0]"),
        "{}",
        blocks[1]
    );
    assert!(
        blocks[1].ends_with("[task t1 (\"web\"): exited with code 0 · 12.4 s · next since=165]\n")
    );
}

#[test]
fn no_offset_is_offered_that_the_cap_left_out() {
    let pattern = Regex::new("never").expect("regex");
    let mut reader = OutputReader::new(300_000, 100, Some(pattern));
    reader.push(slice(300_000, "[... 99700 bytes of output left out ...]\n"));
    reader.push(slice(400_000, &format!("{}\n", "x".repeat(99))));
    reader.push(slice(400_100, &format!("{}\n", "y".repeat(99))));
    let mut capped = entry(2_000_000, EntryState::Running);
    capped.log_cut = Some(crate::output::LogCut {
        cap: 1 << 20,
        head: 262_144,
        left_out: 137_856,
        newest: 1_600_000,
    });
    let blocks = rendered(&reader, &capped, &Waited::TimedOut);
    let notes = blocks.last().expect("notes");
    assert!(
        notes.starts_with(
            "[97.8 KiB of output skipped, offsets 300000 to 400100: read them with \
                 since=400000]"
        ),
        "{notes}"
    );
    let mut reader = OutputReader::new(300_000, 100, None);
    reader.push(slice(300_000, "[... 99700 bytes of output left out ...]\n"));
    capped.bytes = 400_050;
    let blocks = rendered(&reader, &capped, &Waited::Full);
    assert!(
        blocks
            .last()
            .expect("notes")
            .contains("or since=400000 for the newest"),
        "{blocks:?}"
    );
}

#[test]
fn no_output_says_so_and_what_remains_is_counted() {
    let reader = OutputReader::new(7, 100, None);
    let running = entry(7, EntryState::Running);
    assert_eq!(
        rendered(&reader, &running, &Waited::TimedOut),
        ["[no new output within 500 ms]\n[task t1 (\"web\"): running · 12.4 s · next since=7]\n"]
    );
    let mut reader = OutputReader::new(0, 100, None);
    reader.push(slice(0, "first part\n"));
    let killed = entry(4096, EntryState::Killed { signal: 15 });
    assert_eq!(
        rendered(&reader, &killed, &Waited::Full),
        [
            "first part\n",
            "[task t1 (\"web\"): killed by signal 15 (SIGTERM) · 12.4 s · 4.0 KiB more to read \
                 (call again for the next part, or since=3996 for the newest) · next since=11]\n"
        ]
    );
}
