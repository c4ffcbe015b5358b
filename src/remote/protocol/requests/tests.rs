//! The golden lines of every request, reply and event, each kind with its example.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::examples::Example;
use super::*;
use crate::core::{CoreEvent, EntryKind};
use crate::output::LogCut;

pub(super) fn key() -> String {
    "t1".to_owned()
}

pub(super) const SIZE: Option<Size> = Some(Size { cols: 80, rows: 24 });

/// An entry with every field set.
pub(super) fn entry() -> EntryInfo {
    EntryInfo {
        id: "c7".into(),
        kind: EntryKind::Task,
        task_id: Some("t1".into()),
        name: Some("web".into()),
        title: Some("server".into()),
        command: "npm run dev".into(),
        cwd: "/src".into(),
        pid: 4242,
        started_ms: 1_700_000_000_000,
        detached_ms: Some(1_700_000_001_000),
        ended_ms: Some(1_700_000_002_000),
        state: EntryState::Killed { signal: 15 },
        timed_out: true,
        bytes: 1234,
        detach_offset: 56,
        log_path: "/run/oino/logs/c7.log".into(),
        log_error: Some("No space left on device".into()),
        log_cut: Some(LogCut {
            cap: 1 << 20,
            head: 1 << 18,
            left_out: 99,
            newest: 700,
        }),
        waiting_for_input: Some("Password: ".into()),
        ready: Some(true),
        project: None,
    }
}

/// One event of each kind.
fn events() -> Vec<CoreEvent> {
    let id = || "c1".to_owned();
    vec![
        CoreEvent::Started { id: id() },
        CoreEvent::OutputChanged { id: id() },
        CoreEvent::Detached {
            id: id(),
            task_id: "t1".into(),
            name: "web".into(),
        },
        CoreEvent::Ended {
            id: id(),
            state: EntryState::Exited { code: 0 },
        },
        CoreEvent::Waiting {
            id: id(),
            prompt: Some("[Y/n] ".into()),
        },
        CoreEvent::Ready {
            id: id(),
            ready: Some(true),
        },
        CoreEvent::Project {
            file: "/src/oino.toml".into(),
            notice: Some("db exited 3: restart 1/5 in 1 s".into()),
        },
    ]
}

/// Each event kind's place in [`events`]: a new kind does not compile until it has one.
fn event_kind(event: &CoreEvent) -> usize {
    match event {
        CoreEvent::Started { .. } => 0,
        CoreEvent::OutputChanged { .. } => 1,
        CoreEvent::Detached { .. } => 2,
        CoreEvent::Ended { .. } => 3,
        CoreEvent::Waiting { .. } => 4,
        CoreEvent::Ready { .. } => 5,
        CoreEvent::Project { .. } => 6,
    }
}

#[test]
fn every_request_reply_and_event_reads_and_writes_as_pinned() {
    // Wire API: a changed line here is a changed protocol (and `--json` output). Change
    // PROTOCOL_VERSION when an old client or server would misread it.
    let mut golden = String::new();
    for (kind, request, reply) in golden_lines() {
        let _ = write!(golden, "{kind}\n> {request}\n< {reply}\n");
    }
    let events = events();
    assert_eq!(
        events.iter().map(event_kind).collect::<Vec<_>>(),
        (0..events.len()).collect::<Vec<_>>(),
        "one event of each kind, in order"
    );
    golden.push_str("events\n");
    for event in events {
        let line = serde_json::to_string(&event.clone().to_wire()).expect("encode");
        let read: wire::Event = serde_json::from_str(&line).expect("decode");
        assert_eq!(CoreEvent::from_wire(read), event, "{line}");
        let _ = writeln!(golden, "< {line}");
    }
    insta::assert_snapshot!(golden);
}

#[test]
fn short_forms_fill_in_their_defaults() {
    let short: Request = serde_json::from_str(r#"{"op":"run","command":"ls"}"#).expect("short run");
    let Request::Run(run) = short else {
        panic!("a run request: {short:?}");
    };
    assert!(!run.started);
    let call = run.into_call();
    assert_eq!(call.command, "ls");
    assert_eq!(call.options.on_timeout, TimeoutPolicy::Kill);
    assert_eq!(call.options.max_result_bytes, DEFAULT_MAX_RESULT_BYTES);
    assert_eq!(call.waiter, Waiter::Program);
    let start: Request =
        serde_json::from_str(r#"{"op":"start","command":"vim"}"#).expect("short start");
    let Request::Start(start) = start else {
        panic!("a start request: {start:?}");
    };
    assert_eq!(start.into_call().waiter, Waiter::Person);
    // What `run` gives back is what was asked for.
    let (example, _) = Run::example();
    let again = Run::from_call(example.clone().into_call(), true);
    assert_eq!(again, example);
    let cwd: Option<PathBuf> = again.cwd;
    assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/src")));
    // Anything typed goes as text when it is text, else as bytes, in order.
    for bytes in [b"yes\r".to_vec(), vec![0x1b, b'[', 0xff]] {
        let send = Send::bytes("t1", bytes.clone());
        assert_eq!(send.into_bytes(), bytes);
    }
    assert_eq!(Send::bytes("t1", b"q".to_vec()).text, "q");
}

/// The fields of a request struct, as its `Deserialize` names them.
pub(super) fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    /// A deserializer that only notes the fields a struct asks for.
    struct Fields(&'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(serde::de::Error::custom("noted"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields = Fields(&[]);
    let _ = T::deserialize(&mut fields);
    fields.0
}

#[test]
fn every_field_of_every_request_is_in_its_golden_line_and_every_bound_names_a_field() {
    // The walk of hostile numbers (tests/all/bounds.rs) sends each golden request with each of
    // its numbers changed: a field missing from its example would never be walked.
    let lines: std::collections::HashMap<_, _> = golden_lines()
        .into_iter()
        .map(|(kind, request, _)| (kind, request))
        .collect();
    for (kind, fields, bounded) in fields_of_each_kind() {
        let line: serde_json::Value = serde_json::from_str(&lines[kind]).expect("a request line");
        let missing: Vec<_> = fields
            .iter()
            .filter(|field| line.get(**field).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "{kind}'s example leaves out {missing:?}: {line}"
        );
        for field in bounded {
            assert!(
                fields.contains(&field),
                "{kind} has no field `{field}` to bound"
            );
        }
    }
}
