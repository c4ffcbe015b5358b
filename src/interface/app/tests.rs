use super::mouse::WHEEL_ROWS;
use super::*;
use crate::core::EntryState;
use crossterm::event::{KeyModifiers, MouseButton, MouseEventKind};

fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

/// A running call `id` of `command`.
pub(super) fn entry(id: &str, command: &str) -> EntryInfo {
    EntryInfo {
        id: id.to_owned(),
        kind: EntryKind::Call,
        task_id: None,
        name: None,
        title: None,
        command: command.to_owned(),
        cwd: std::path::PathBuf::from("/"),
        pid: 1,
        started_ms: 0,
        detached_ms: None,
        ended_ms: None,
        state: EntryState::Running,
        timed_out: false,
        bytes: 0,
        detach_offset: 0,
        log_path: std::path::PathBuf::from("/dev/null"),
        log_error: None,
        log_cut: None,
        waiting_for_input: None,
        ready: None,
        project: None,
    }
}

pub(super) fn test_app() -> App {
    let mut app = App::new((100, 20), true);
    let entry = |id: &str| entry(id, &format!("echo {id}"));
    app.entries = vec![entry("c1"), entry("c2"), entry("c3")];
    app.selected = Some("c1".into());
    app
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> Input {
    Input::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    })
}

#[test]
fn attached_every_key_but_the_detach_key_goes_to_the_process_and_its_end_ends_it() {
    let mut app = test_app();
    let detach = key(KeyCode::Char(']'), KeyModifiers::CONTROL);
    app.attach("c2".into(), detach, "Ctrl-]".into());
    assert!(app.zoom);
    // Ctrl-A and q are the process's.
    for typed in [
        key(KeyCode::Char('a'), KeyModifiers::CONTROL),
        key(KeyCode::Char('q'), KeyModifiers::NONE),
    ] {
        let effects = app.handle_input(Input::Key(typed));
        assert!(
            matches!(effects.as_slice(), [Effect::Write { id, .. }] if id == "c2"),
            "{effects:?}"
        );
        assert!(!app.quit);
    }
    // A resize resizes only the attached process.
    let resized = app.handle_input(Input::Resize { cols: 90, rows: 30 });
    assert!(
        matches!(resized.as_slice(), [Effect::Resize { id, .. }] if id == "c2"),
        "{resized:?}"
    );
    // Another's end changes nothing; its own ends the attach.
    let ended = |id: &str| CoreEvent::Ended {
        id: id.into(),
        state: EntryState::Exited { code: 3 },
    };
    app.handle_core_event(&ended("c1"));
    assert!(!app.quit);
    app.handle_core_event(&ended("c2"));
    assert!(app.quit);
    let attached = app.attached.clone().expect("attached");
    assert_eq!(attached.ended, Some(EntryState::Exited { code: 3 }));
    // The detach key quits, leaving it running.
    let mut app = test_app();
    app.attach("c2".into(), detach, "Ctrl-]".into());
    assert!(app.handle_input(Input::Key(detach)).is_empty());
    assert!(app.quit);
    assert_eq!(app.attached.expect("attached").ended, None);
}

#[test]
fn a_click_selects_a_row_and_the_wheel_scrolls() {
    let mut app = test_app();
    // Row 0 is the section's title; rows 1..=3 the calls.
    app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), 3, 3));
    assert_eq!(app.selected.as_deref(), Some("c3"));
    app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), 3, 0));
    assert_eq!(app.selected.as_deref(), Some("c3"));
    app.handle_input(mouse(MouseEventKind::ScrollUp, 60, 5));
    app.handle_input(mouse(MouseEventKind::ScrollUp, 60, 5));
    assert_eq!(app.scroll, 2 * WHEEL_ROWS);
    app.handle_input(mouse(MouseEventKind::ScrollDown, 60, 5));
    assert_eq!(app.scroll, WHEEL_ROWS);
}

/// The selected call's live pane, showing what `bytes` draw.
fn pane_after(app: &mut App, bytes: &[u8]) {
    let mut screen = crate::screen::Screen::new(TermSize::new(74, 18), 0);
    screen.feed(bytes);
    app.set_pane(Some(("c1".into(), screen.snapshot(0))));
}

#[test]
fn the_mouse_in_a_pane_goes_to_a_program_that_asked_for_it_at_pane_coordinates() {
    let mut app = test_app();
    let layout = app.layout().expect("a layout");
    let (x, y) = (layout.pane.x, layout.pane.y);
    // less --mouse: normal tracking, SGR encoding.
    pane_after(&mut app, b"\x1b[?1049h\x1b[?1000h\x1b[?1006h");
    let write = |bytes: &[u8]| {
        vec![Effect::Write {
            id: "c1".into(),
            bytes: bytes.to_vec(),
        }]
    };
    assert_eq!(
        app.handle_input(mouse(MouseEventKind::ScrollDown, x + 4, y + 2)),
        write(b"\x1b[<65;5;3M")
    );
    assert_eq!(app.scroll, 0);
    // A click is oino's until the pane is focused.
    assert!(
        app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), x, y))
            .is_empty()
    );
    app.act(Action::Focus);
    assert_eq!(
        app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), x, y)),
        write(b"\x1b[<0;1;1M")
    );
    // A drag and the release outside the pane still reach the program that saw the press,
    // at the pane's nearest cell.
    app.set_pane(Some((
        "c1".into(),
        app.pane
            .clone()
            .map(|mut pane| {
                pane.mouse.events = crate::screen::MouseEvents::ButtonMotion;
                pane
            })
            .expect("a pane"),
    )));
    assert_eq!(
        app.handle_input(mouse(MouseEventKind::Drag(MouseButton::Left), 3, y + 1)),
        write(b"\x1b[<32;1;2M")
    );
    assert_eq!(
        app.handle_input(mouse(MouseEventKind::Up(MouseButton::Left), 3, y + 1)),
        write(b"\x1b[<0;1;2m")
    );
    // Outside the pane, the list keeps its clicks.
    assert!(
        app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), 3, 3))
            .is_empty()
    );
}

#[test]
fn a_full_screen_program_without_mouse_gets_arrows_and_no_history_opens_over_it() {
    let mut app = test_app();
    let layout = app.layout().expect("a layout");
    let (x, y) = (layout.pane.x + 1, layout.pane.y + 1);
    pane_after(&mut app, b"\x1b[?1049h\x1b[?1h");
    assert_eq!(
        app.handle_input(mouse(MouseEventKind::ScrollUp, x, y)),
        vec![Effect::Write {
            id: "c1".into(),
            bytes: b"\x1bOA\x1bOA\x1bOA".to_vec(),
        }]
    );
    // Nor from the wheel over the list.
    app.handle_input(mouse(MouseEventKind::ScrollUp, 3, 3));
    assert_eq!(app.scroll, 0);
    // Back on the main screen, the wheel opens the history again.
    pane_after(&mut app, b"plain");
    assert!(
        app.handle_input(mouse(MouseEventKind::ScrollUp, x, y))
            .is_empty()
    );
    assert_eq!(app.scroll, WHEEL_ROWS);
}

#[test]
fn a_paste_into_a_focused_pane_is_bracketed_when_the_program_asked() {
    let mut app = test_app();
    app.act(Action::Focus);
    assert_eq!(app.mode, Mode::Focus);
    let mut screen = crate::screen::Screen::new(TermSize::new(20, 4), 0);
    app.pane = Some(screen.snapshot(0));
    assert_eq!(
        app.handle_input(Input::Paste("ls\n".into())),
        vec![Effect::Write {
            id: "c1".into(),
            bytes: b"ls\n".to_vec()
        }]
    );
    screen.feed(b"\x1b[?2004h");
    app.pane = Some(screen.snapshot(0));
    assert_eq!(
        app.handle_input(Input::Paste("ls\n".into())),
        vec![Effect::Write {
            id: "c1".into(),
            bytes: b"\x1b[200~ls\n\x1b[201~".to_vec()
        }]
    );
    // Ctrl-A gives the keys back; a key then is the interface's again.
    app.handle_input(Input::Key(key(KeyCode::Char('a'), KeyModifiers::CONTROL)));
    assert_eq!(app.mode, Mode::Normal);
    assert!(
        app.handle_input(Input::Key(key(KeyCode::Char('j'), KeyModifiers::NONE)))
            .is_empty()
    );
    assert_eq!(app.selected.as_deref(), Some("c2"));
}

#[test]
fn every_action_has_a_key_and_the_layout_fits() {
    let keymap = default_keymap();
    for action in [
        Action::SelectNext,
        Action::Detach,
        Action::DetachNow,
        Action::Kill,
        Action::Focus,
        Action::Search,
        Action::Zoom,
        Action::Help,
        Action::Quit,
    ] {
        assert!(
            keymap.iter().any(|binding| binding.action == action),
            "{action:?}"
        );
    }
    assert_eq!(Layout::new(39, 20, false, None), None);
    let layout = Layout::new(120, 40, false, None).expect("fits");
    assert_eq!(layout.pane_size(), TermSize::new(120 - 31, 38));
    let zoomed = Layout::new(120, 40, true, None).expect("fits");
    // A width from the settings, leaving the pane at least half.
    assert_eq!(
        Layout::new(120, 40, false, Some(30))
            .expect("fits")
            .list
            .width,
        30
    );
    assert_eq!(
        Layout::new(120, 40, false, Some(100))
            .expect("fits")
            .list
            .width,
        60
    );
    assert_eq!(zoomed.pane_size(), TermSize::new(120, 38));
}

#[test]
fn the_detach_prompt_proposes_the_described_name_and_taking_it_lets_the_core_name_the_task() {
    let mut app = test_app();
    app.entries[0].title = Some("Watch the CSS files".into());
    app.act(Action::Detach);
    let Mode::Prompt(prompt) = &app.mode else {
        panic!("no prompt: {:?}", app.mode);
    };
    assert_eq!(prompt.text, "watch-the-css-files");
    let enter = || Input::Key(key(KeyCode::Enter, KeyModifiers::NONE));
    // Taken as proposed, the core names it: as the call asked at its start, made unique.
    assert_eq!(
        app.handle_input(enter()),
        vec![Effect::Detach {
            id: "c1".into(),
            name: None
        }]
    );
    app.act(Action::Detach);
    app.handle_input(Input::Key(key(KeyCode::Char('u'), KeyModifiers::CONTROL)));
    app.handle_input(Input::Paste("web".into()));
    assert_eq!(
        app.handle_input(enter()),
        vec![Effect::Detach {
            id: "c1".into(),
            name: Some("web".into())
        }]
    );
}

#[test]
fn a_name_typed_replaces_the_proposal_and_an_arrow_keeps_it_to_edit() {
    let mut app = test_app();
    app.entries[0].title = Some("Watch the CSS files".into());
    let type_text = |app: &mut App, text: &str| {
        for c in text.chars() {
            app.handle_input(Input::Key(key(KeyCode::Char(c), KeyModifiers::NONE)));
        }
    };
    let enter =
        |app: &mut App| app.handle_input(Input::Key(key(KeyCode::Enter, KeyModifiers::NONE)));
    let named = |name: &str| {
        vec![Effect::Detach {
            id: "c1".into(),
            name: Some(name.into()),
        }]
    };
    app.act(Action::Detach);
    type_text(&mut app, "ticker");
    assert_eq!(enter(&mut app), named("ticker"));
    // Backspace takes the whole proposal.
    app.act(Action::Detach);
    app.handle_input(Input::Key(key(KeyCode::Backspace, KeyModifiers::NONE)));
    type_text(&mut app, "web");
    assert_eq!(enter(&mut app), named("web"));
    // An arrow first: the proposal is text to add to.
    app.act(Action::Detach);
    app.handle_input(Input::Key(key(KeyCode::Right, KeyModifiers::NONE)));
    type_text(&mut app, "-2");
    assert_eq!(enter(&mut app), named("watch-the-css-files-2"));
}

#[test]
fn a_call_that_waits_is_told_by_its_name_and_its_prompt_keeps_its_start() {
    let mut app = test_app();
    app.entries[1].title = Some("ask the name".into());
    app.handle_core_event(&CoreEvent::Waiting {
        id: "c2".into(),
        prompt: Some("Name? ".into()),
    });
    let said = app.notice.as_ref().map(|notice| notice.text.clone());
    assert_eq!(
        said.as_deref(),
        Some("`ask the name` waits for input: Name? (Enter to type into it)")
    );
    // A long prompt is cut at its end, so that its start and the key stay.
    app.handle_core_event(&CoreEvent::Waiting {
        id: "c1".into(),
        prompt: Some(
            "type a line and press Enter, or Ctrl-D to end the input and go on with it".into(),
        ),
    });
    let said = app.notice.as_ref().map(|notice| notice.text.clone());
    assert_eq!(
        said.as_deref(),
        Some(
            "`echo c1` waits for input: type a line and press Enter, or Ctrl-D … (Enter to type \
             into it)"
        )
    );
}

#[test]
fn a_call_that_waits_before_it_is_listed_is_told_once_it_is() {
    let mut app = test_app();
    app.notice = None;
    app.handle_core_event(&CoreEvent::Waiting {
        id: "c6".into(),
        prompt: Some("Name? ".into()),
    });
    assert!(
        app.notice
            .as_ref()
            .is_none_or(|notice| !notice.text.contains("c6")),
        "{:?}",
        app.notice
    );
    let mut entries = app.entries.clone();
    let mut new = entries[0].clone();
    new.id = "c6".into();
    new.command = "echo".into();
    entries.push(new);
    app.set_entries(entries);
    let said = app.notice.as_ref().map(|notice| notice.text.clone());
    assert_eq!(
        said.as_deref(),
        Some("`echo` waits for input: Name? (Enter to type into it)")
    );
    // Told once.
    app.notice = None;
    app.set_entries(app.entries.clone());
    assert_eq!(app.notice, None);
}

#[test]
fn quitting_asks_only_when_it_ends_processes() {
    let q = || Input::Key(key(KeyCode::Char('q'), KeyModifiers::NONE));
    // An interface of its own (--embedded, the demo) hosts them: quitting ends them, so it asks.
    let mut app = test_app();
    app.entries[2].kind = EntryKind::Task;
    app.handle_input(q());
    assert!(!app.quit);
    assert_eq!(
        app.mode,
        Mode::Confirm(Confirm::Quit {
            running: Running { calls: 2, tasks: 1 }
        })
    );
    // Any other key stays; `y` quits.
    app.handle_input(Input::Key(key(KeyCode::Char('n'), KeyModifiers::NONE)));
    assert!(!app.quit && app.mode == Mode::Normal);
    app.handle_input(q());
    app.handle_input(Input::Key(key(KeyCode::Char('y'), KeyModifiers::NONE)));
    assert!(app.quit);
    // The server's processes go on without this window: it quits at once.
    let mut app = test_app();
    app.set_processes_outlive(true);
    app.handle_input(q());
    assert!(app.quit);
    assert_eq!(app.mode, Mode::Normal);
    // Nothing running: nothing to ask either way.
    let mut app = test_app();
    for entry in &mut app.entries {
        entry.state = EntryState::Exited { code: 0 };
    }
    app.handle_input(q());
    assert!(app.quit);
}

#[test]
fn what_keeps_running_is_said_in_words() {
    let line = |calls, tasks| Running { calls, tasks }.left_running_line();
    assert_eq!(line(0, 0), None);
    assert_eq!(
        line(1, 0).as_deref(),
        Some("1 call keeps running in the oino server: `oino` comes back to it")
    );
    assert_eq!(
        line(3, 0).as_deref(),
        Some("3 calls keep running in the oino server: `oino` comes back to them")
    );
    assert_eq!(
        line(0, 1).as_deref(),
        Some("1 task keeps running in the oino server: `oino` comes back to it")
    );
    assert_eq!(
        line(2, 1).as_deref(),
        Some("2 calls and 1 task keep running in the oino server: `oino` comes back to them")
    );
    let mut entries = test_app().entries;
    entries[0].kind = EntryKind::Task;
    entries[1].state = EntryState::Exited { code: 0 };
    assert_eq!(Running::of(&entries), Running { calls: 1, tasks: 1 });
}

#[test]
fn only_the_rows_in_view_and_the_selected_entry_are_looked_up_for_their_cost() {
    let mut app = App::new((100, 20), true);
    app.entries = (0..1000)
        .map(|n| entry(&format!("c{n}"), &format!("sleep {n}")))
        .collect();
    app.selected = Some("c500".into());
    let in_view = app.entries_in_view();
    let height = usize::from(app.layout().expect("a layout").list.height);
    assert!(
        in_view.len() <= height && !in_view.is_empty(),
        "{}",
        in_view.len()
    );
    assert!(in_view.iter().any(|entry| entry.id == "c500"));
    // The list scrolls to keep the selected entry in view: its neighbours above are shown.
    assert!(in_view.iter().any(|entry| entry.id == "c499"));
    assert!(!in_view.iter().any(|entry| entry.id == "c0"));
}

#[test]
fn far_hosts_list_under_their_headings_and_keys_act_on_the_selected_entrys_host() {
    use crate::interface::fleet::{HostState, HostView};
    let mut app = App::new((100, 20), true);
    app.hosts = vec![
        HostView {
            name: "box".into(),
            state: HostState::Up,
        },
        HostView {
            name: "gpu".into(),
            state: HostState::Down {
                error: "ssh: Could not resolve hostname gpu".into(),
                whole: "cannot reach gpu: ssh: Could not resolve hostname gpu".into(),
                again_secs: 4,
            },
        },
    ];
    // Listed in any order, shown by machine: this one's, then each host's in order.
    app.set_entries(vec![
        entry("box:c1", "make"),
        entry("c2", "cargo watch"),
        entry("box:c3", "tail -f log"),
    ]);
    let lines = list_lines(&app);
    let ids: Vec<&str> = app.entries.iter().map(|entry| entry.id.as_str()).collect();
    assert_eq!(ids, ["c2", "box:c1", "box:c3"]);
    assert_eq!(
        lines,
        [
            ListLine::Host(None),
            ListLine::Title(Section::Running),
            ListLine::Entry(0),
            ListLine::Host(Some(0)),
            ListLine::Title(Section::Running),
            ListLine::Entry(1),
            ListLine::Entry(2),
            // A host that cannot be reached is listed, with why, in rows of the list's width.
            ListLine::Host(Some(1)),
            ListLine::HostDown(1, 0),
            ListLine::HostDown(1, 1),
            ListLine::HostDown(1, 2),
        ]
    );
    let rows = host_down_rows(&app, 1);
    let width = usize::from(app.layout().expect("a layout").list.width) - 2;
    assert!(
        rows.iter()
            .all(|row| crate::interface::fit::columns(row) <= width)
    );
    assert_eq!(
        rows.join(" "),
        "ssh: Could not resolve hostname gpu · retried after 4 s"
    );
    // A new call goes where the selected entry is.
    app.selected = Some("box:c3".into());
    app.handle_input(Input::Key(key(KeyCode::Char('n'), KeyModifiers::NONE)));
    assert!(matches!(
        &app.mode,
        Mode::Prompt(prompt)
            if prompt.purpose == PromptPurpose::NewCommand { host: Some("box".into()) }
    ));
    for c in "uptime".chars() {
        app.handle_input(Input::Key(key(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    let effects = app.handle_input(Input::Key(key(KeyCode::Enter, KeyModifiers::NONE)));
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Start { command, host: Some(host), .. } if command == "uptime" && host == "box"
        )),
        "{effects:?}"
    );
    // Here, it goes here; Tab goes through the machines, a host with no entries too.
    app.selected = Some("c2".into());
    app.handle_input(Input::Key(key(KeyCode::Char('n'), KeyModifiers::NONE)));
    let mut machines = Vec::new();
    for _ in 0..4 {
        let Mode::Prompt(prompt) = &app.mode else {
            panic!("the prompt closed: {:?}", app.mode);
        };
        let PromptPurpose::NewCommand { host } = &prompt.purpose else {
            panic!("{:?}", prompt.purpose);
        };
        machines.push(host.clone());
        app.handle_input(Input::Key(key(KeyCode::Tab, KeyModifiers::NONE)));
    }
    assert_eq!(
        machines,
        [None, Some("box".to_owned()), Some("gpu".to_owned()), None]
    );
}

#[test]
fn keys_typed_into_a_process_that_leaves_the_list_never_go_to_another() {
    let mut app = App::new((100, 20), true);
    app.set_entries(vec![entry("c2", "bash"), entry("box:c1", "bash")]);
    app.selected = Some("box:c1".into());
    app.handle_input(Input::Key(key(KeyCode::Enter, KeyModifiers::NONE)));
    assert_eq!(app.mode, Mode::Focus);
    // Its host's link dropped: the far shell is no longer listed.
    app.set_entries(vec![entry("c2", "bash")]);
    assert_eq!(app.mode, Mode::Normal);
    let effects = app.handle_input(Input::Key(key(KeyCode::Char('r'), KeyModifiers::NONE)));
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::Write { .. })),
        "{effects:?}"
    );
}
