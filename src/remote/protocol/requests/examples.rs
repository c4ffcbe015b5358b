//! Each kind's golden example: a request with every field set that can be, and a reply.

use super::tests::{SIZE, entry, key};
use super::*;
use crate::call::DetachedTo;
use crate::core::EntryKind;
use crate::core::project::{Applied, Did, ProcessPhase, ProjectMark};
use crate::output::LogCut;
use crate::pty::{ProcessExit, TermSize};
use crate::screen::{Cell, CellAttrs, CellColor, CursorPos, MouseReporting};

/// A request of a kind with every field set that can be, and a reply it may get.
pub(crate) trait Example: Ask {
    fn example() -> (Self, Self::Reply);
}

impl Example for Cancel {
    fn example() -> (Self, String) {
        (Self { of: 7 }, "cancelled".into())
    }
}

impl Example for Hello {
    fn example() -> (Self, wire::Hello) {
        let hello = wire::Hello {
            version: 3,
            server_pid: 99,
            oino: "0.1.0".into(),
        };
        (
            Self {
                version: 3,
                relayed: true,
            },
            hello,
        )
    }
}

impl Example for Run {
    fn example() -> (Self, CallResult) {
        let run = Self {
            command: "make test".into(),
            id: Some("run-1".into()),
            cwd: Some("/src".into()),
            timeout_ms: Some(5000),
            on_timeout: Some(TimeoutPolicy::Detach),
            max_bytes: Some(1000),
            title: Some("tests".into()),
            env: vec![("A".into(), "b".into())],
            size: SIZE,
            name: Some("tests".into()),
            on_input: Some(InputPolicy::Detach),
            started: true,
            background: true,
            report_folder: true,
            no_exit_note: true,
        };
        let result = CallResult {
            text: "ok\n\n[Detached to background task t1: slow]".into(),
            is_error: false,
            exit: Some(ProcessExit::Signal(9)),
            timed_out: true,
            detached: Some(DetachedTo {
                task_id: "t1".into(),
                reason: "slow".into(),
                cause: crate::call::DetachCause::Timeout,
            }),
            full_output_path: Some("/run/oino/logs/run-1.log".into()),
            log_error: Some("gone".into()),
            log_cut: Some(LogCut {
                cap: 4,
                head: 1,
                left_out: 2,
                newest: 3,
            }),
            omitted_from: Some(14),
            folder: Some("/src/sub".into()),
        };
        (run, result)
    }
}

impl Example for List {
    fn example() -> (Self, Vec<EntryInfo>) {
        let running = EntryInfo {
            kind: EntryKind::Call,
            task_id: None,
            name: None,
            title: None,
            detached_ms: None,
            ended_ms: None,
            state: EntryState::Running,
            log_error: None,
            log_cut: None,
            waiting_for_input: None,
            ready: None,
            ..entry()
        };
        let orphaned = EntryInfo {
            state: EntryState::Orphaned { server_pid: 77 },
            ..running.clone()
        };
        let mark = |run, phase| {
            Some(ProjectMark {
                project: "shop".into(),
                file: "/src/oino.toml".into(),
                process: "web".into(),
                run,
                latest: run != 1,
                restarts: 1,
                phase,
            })
        };
        // A project's process: an earlier run, its newest (restarting), one that waits.
        let earlier = EntryInfo {
            state: EntryState::Exited { code: 3 },
            project: mark(1, None),
            ..entry()
        };
        let restarting = EntryInfo {
            state: EntryState::Exited { code: 3 },
            project: mark(
                2,
                Some(ProcessPhase::Restarting {
                    backoff_left_ms: 1500,
                }),
            ),
            ..entry()
        };
        let waiting = EntryInfo {
            state: EntryState::NotStarted,
            pid: 0,
            project: mark(
                0,
                Some(ProcessPhase::Waiting {
                    waiting_for: vec!["db".into()],
                }),
            ),
            ..entry()
        };
        let blocked = EntryInfo {
            project: mark(
                0,
                Some(ProcessPhase::Blocked {
                    reason: "migrate exited 1".into(),
                }),
            ),
            ..waiting.clone()
        };
        (
            Self {},
            vec![running, orphaned, earlier, restarting, waiting, blocked],
        )
    }
}

impl Example for Entry {
    fn example() -> (Self, EntryInfo) {
        (Self { key: key() }, entry())
    }
}

impl Example for Detach {
    fn example() -> (Self, EntryInfo) {
        let detach = Self {
            key: key(),
            name: Some("web".into()),
            reason: Some("slow".into()),
        };
        (detach, entry())
    }
}

impl Example for Output {
    fn example() -> (Self, OutputSlice) {
        let output = Self {
            key: key(),
            since: Some(7),
            max_bytes: Some(10),
        };
        let slice = OutputSlice {
            text: "one\ntwo\n".into(),
            from: 7,
            next_offset: 17,
        };
        (output, slice)
    }
}

impl Example for WaitOutput {
    fn example() -> (Self, bool) {
        let wait = Self {
            key: key(),
            offset: 7,
            timeout_ms: 100,
        };
        (wait, true)
    }
}

impl Example for Wait {
    fn example() -> (Self, EntryState) {
        let wait = Self {
            key: key(),
            timeout_ms: Some(100),
        };
        (wait, EntryState::Exited { code: 3 })
    }
}

impl Example for Kill {
    fn example() -> (Self, crate::core::Killed) {
        (
            Self { key: key() },
            crate::core::Killed {
                name: "web".into(),
                state: EntryState::Killed { signal: 15 },
                processes: 4,
            },
        )
    }
}

impl Example for Project {
    fn example() -> (Self, ProjectStarted) {
        let project = Self {
            project: wire::Project {
                name: "shop".into(),
                file: "/src/oino.toml".into(),
                processes: vec![wire::Process {
                    name: "web".into(),
                    cmd: "npm run dev".into(),
                    cwd: "/src/web".into(),
                    env: vec![("PORT".into(), "3000".into())],
                    env_files: vec!["/src/.env".into()],
                    autostart: true,
                    restart: wire::Restart::OnFailure,
                    restart_limit: 5,
                    backoff_ms: 1000,
                    ready: None,
                    probes: wire::Probes {
                        ready: Some(wire::Probe::Http("http://127.0.0.1:3000/health".into())),
                        ready_interval_ms: 1000,
                        ready_timeout_ms: Some(30_000),
                        alive: Some(wire::Probe::Cmd("curl -sf localhost:3000".into())),
                        alive_interval_ms: 10_000,
                        alive_failures: 3,
                    },
                    after: vec![
                        wire::After {
                            name: "db".into(),
                            condition: wire::Condition::Ready,
                        },
                        wire::After {
                            name: "migrate".into(),
                            condition: wire::Condition::Succeeded,
                        },
                    ],
                }],
            },
            env: vec![("A".into(), "b".into())],
            only: Some("web".into()),
        };
        let started = ProjectStarted {
            started: vec!["db".into(), "web".into()],
            running: vec!["watch".into()],
            not_started: vec!["seed".into()],
            done: vec!["migrate".into()],
            left_running: vec![("cache".into(), "c4.left".into())],
        };
        (project, started)
    }
}

impl Example for Down {
    fn example() -> (Self, ProjectStopped) {
        let (Project { project, .. }, _) = Project::example();
        let down = Self {
            project,
            only: vec!["db".into()],
        };
        let stopped = ProjectStopped {
            stopped: vec!["web".into(), "db".into()],
            not_running: vec!["seed".into()],
        };
        (down, stopped)
    }
}

impl Example for Up {
    fn example() -> (Self, ProjectApplied) {
        let (Project { project, env, .. }, _) = Project::example();
        let up = Self {
            project,
            env,
            only: vec!["web".into()],
        };
        let applied = ProjectApplied {
            processes: vec![
                Applied {
                    name: "db".into(),
                    did: Did::Unchanged,
                    why: None,
                },
                Applied {
                    name: "web".into(),
                    did: Did::Restarted,
                    why: Some("cmd changed".into()),
                },
                Applied {
                    name: "old".into(),
                    did: Did::Stopped,
                    why: Some("no longer in the file".into()),
                },
            ],
        };
        (up, applied)
    }
}

impl Example for Restart {
    fn example() -> (Self, EntryInfo) {
        (
            Self {
                key: key(),
                size: SIZE,
            },
            entry(),
        )
    }
}

impl Example for Send {
    fn example() -> (Self, String) {
        let send = Self {
            key: key(),
            text: "y\r".into(),
            bytes: vec![0x1b, b'[', b'A', 0xff],
        };
        (send, "sent".into())
    }
}

impl Example for KillServer {
    fn example() -> (Self, String) {
        (Self {}, "stopping".into())
    }
}

impl Example for Start {
    fn example() -> (Self, EntryInfo) {
        let start = Self {
            command: "vim".into(),
            cwd: Some("/src".into()),
            title: Some("editor".into()),
            env: vec![("TERM".into(), "xterm-256color".into())],
            size: SIZE,
        };
        (start, entry())
    }
}

impl Example for Snapshot {
    fn example() -> (Self, ScreenSnapshot) {
        let cell = |text: &str| Cell {
            text: text.into(),
            ..Cell::default()
        };
        let styled = Cell {
            text: "世".into(),
            fg: CellColor::Indexed(1),
            bg: CellColor::Rgb(1, 2, 3),
            attrs: CellAttrs {
                bold: true,
                dim: true,
                italic: true,
                underline: true,
                inverse: true,
                blink: true,
                strikethrough: true,
                hidden: true,
                overline: true,
            },
            wide: true,
        };
        let snapshot = ScreenSnapshot {
            size: TermSize { cols: 3, rows: 2 },
            rows: vec![
                vec![styled, Cell::default(), cell("a")],
                vec![cell("b"), Cell::default(), Cell::default()],
            ],
            cursor: Some(CursorPos { row: 1, col: 1 }),
            scroll_offset: 2,
            scrollback_rows: 5,
            alternate_screen: true,
            application_cursor: true,
            bracketed_paste: true,
            mouse: MouseReporting {
                events: crate::screen::MouseEvents::ButtonMotion,
                encoding: crate::screen::MouseEncoding::Sgr,
            },
        };
        (
            Self {
                key: key(),
                size: SIZE,
            },
            snapshot,
        )
    }
}

impl Example for Resize {
    fn example() -> (Self, String) {
        let size = Size {
            cols: 120,
            rows: 40,
        };
        (Self { key: key(), size }, "resized".into())
    }
}

impl Example for HistoryPage {
    fn example() -> (Self, Page) {
        let request = Self {
            key: key(),
            lines_back: 3,
            rows: 2,
        };
        let page = Page {
            lines: vec!["\u{1b}[1mbold\u{1b}[0m".into(), "plain".into()],
            first_line: 10,
            lines_back: 3,
            total_lines: 15,
        };
        (request, page)
    }
}

impl Example for FindLine {
    fn example() -> (Self, SearchHit) {
        let find = Self {
            key: key(),
            from: 9,
            newer: true,
            query: "error [0-9]+".into(),
        };
        let hit = SearchHit {
            line: Some(12),
            rank: 3,
            matches: 7,
        };
        (find, hit)
    }
}

impl Example for Subscribe {
    fn example() -> (Self, String) {
        (Self {}, "subscribed".into())
    }
}
