//! End to end: the real binary in a real PTY, its screen read with vt100.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use crate::support::{DEADLINE, temp_dir, unique_id, wait_until_blocking};

/// `oino` running in a PTY of its own, with a vt100 model of what it draws.
pub(crate) struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    /// Every byte oino wrote to its terminal.
    raw: Arc<Mutex<Vec<u8>>>,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Terminal {
    fn start(args: &[&str], mark: &str) -> Self {
        Self::start_with(args, mark, &[])
    }

    fn start_with(args: &[&str], mark: &str, env: &[(&str, &std::path::Path)]) -> Self {
        Self::start_program(env!("CARGO_BIN_EXE_oino"), args, mark, env)
    }

    /// `program ARGS` in a terminal of 120x30, every process it starts marked with `mark`, with
    /// `env` over the test's environment.
    pub(crate) fn start_program(
        program: &str,
        args: &[&str],
        mark: &str,
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 30,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.env("XDG_STATE_HOME", temp_dir("e2e-state"));
        // This user's settings are not the test's.
        command.env("XDG_CONFIG_HOME", temp_dir("e2e-config"));
        command.env_remove("OINO_CONFIG");
        command.env("XDG_CONFIG_HOME", temp_dir("e2e-config"));
        command.env_remove("OINO_CONFIG");
        command.env("TERM", "xterm-256color");
        // A person's less options (`-X` keeps less off the alternate screen) are not the test's.
        command.env_remove("LESS");
        command.env_remove("LESSKEY");
        // A copy would reach the tmux the tests run in.
        command.env_remove("TMUX");
        // Every process oino starts inherits this: how the test finds them all afterwards.
        command.env("OINO_E2E_MARK", mark);
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pair.slave.spawn_command(command).expect("spawn oino");
        drop(pair.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows(30), rows(120), 0)));
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let feed = Arc::clone(&screen);
        let raw = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&raw);
        std::thread::spawn(move || {
            let mut buffer = vec![0; 65536];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                kept.lock().expect("raw").extend_from_slice(&buffer[..read]);
                feed.lock().expect("screen").process(&buffer[..read]);
            }
        });
        let writer = pair.master.take_writer().expect("writer");
        Self {
            screen,
            raw,
            master: pair.master,
            writer,
            child,
        }
    }

    pub(crate) fn contents(&self) -> String {
        self.screen.lock().expect("screen").screen().contents()
    }

    pub(crate) fn wait_for(&self, text: &str) {
        self.wait_until(&format!("`{text}`"), |screen| screen.contains(text));
    }

    /// Waits until the screen's text satisfies `condition`.
    fn wait_until(&self, what: &str, condition: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        while !condition(&self.contents()) {
            // The screen is the useful part of a failure here.
            assert!(
                Instant::now() < deadline,
                "{what} never showed; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write");
        self.writer.flush().expect("flush");
    }
}

#[test]
fn detach_type_and_quit_in_a_real_terminal() {
    let mark = unique_id("e2e");
    let mut tui = Terminal::start(&["--embedded", "yes flood-line", "cat"], &mark);
    tui.wait_for("Running");
    tui.wait_for("flood-line");

    // Detach the flood, naming it.
    tui.send(b"d");
    tui.wait_for("task name: yes-flood-line");
    tui.send(b"\x15flood\r");
    tui.wait_for("detached `flood` as task t1");
    tui.wait_for("Tasks");

    // Type into cat.
    tui.send(b"g");
    tui.wait_for("▶ cat  running");
    tui.send(b"\r");
    tui.wait_for("typing into `cat`");
    tui.send(b"hello from the test\r");
    tui.wait_until("the echo and cat's copy", |screen| {
        screen.matches("hello from the test").count() >= 2
    });
    tui.send(b"\x01");
    tui.wait_for("d detach");
    assert!(!tui.contents().contains("typing into"));

    // Quit, which asks first.
    tui.quit_ending_everything(&mark);
}

#[test]
fn quitting_leaves_the_servers_tasks_running_and_oino_comes_back_to_them() {
    let mark = unique_id("e2e-server");
    let server = crate::support::ServerGuard::new("e2e-server");
    let socket = server.socket.clone();
    let env = [("OINO_SOCKET", socket.as_path())];
    let command = "for i in $(seq 1 100000); do echo \"count $i\"; sleep 0.02; done";
    let mut first = Terminal::start_with(&[command, "sleep 600"], &mark, &env);
    first.wait_for("count 3");
    first.send(b"\x02");
    first.wait_for("as task t1");
    // Nothing ends: `q` quits at once, and the terminal is told what goes on, as tmux does.
    first.send(b"q");
    assert!(first.wait_exit().success());
    first.wait_for_main_screen();
    first.wait_for("1 call and 1 task keep running in the oino server: `oino` comes back to them");
    assert!(
        !first.contents().contains("quit and end them"),
        "{}",
        first.contents()
    );
    let listed = crate::support::output_within("oino ls", &mut server.oino(&["ls"]));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("for i in") && listed.contains("sleep 600"),
        "{listed}"
    );
    assert!(
        !oino::pty::proc_scan::with_env("OINO_E2E_MARK", &mark).is_empty(),
        "the task did not outlive the interface"
    );

    // Again: the task is there, its screen drawn as it is now.
    let mut second = Terminal::start_with(&[], &mark, &env);
    second.wait_for("Tasks");
    second.wait_for("◆ for-i-in");
    // The call is listed first: the task is the last.
    second.send(b"G");
    second.wait_for("count ");
    let before = counted(&second.contents());
    second.wait_until("the task streaming on", |screen| counted(screen) > before);
    second.send(b"q");
    assert!(second.wait_exit().success());
    second.wait_for("keep running in the oino server");
    drop(server);
    wait_until_blocking("kill-server to end every process", || {
        oino::pty::proc_scan::with_env("OINO_E2E_MARK", &mark).is_empty()
    });
}

#[test]
fn sigterm_restores_the_terminal_and_ends_every_process() {
    let mark = unique_id("e2e-term");
    let mut tui = Terminal::start(&["--embedded", "sleep 600", "yes"], &mark);
    tui.wait_for("▶ sleep 600");
    let pid = tui.child.process_id().expect("pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    tui.wait_exit();
    tui.assert_restored_and_alone(&mark);
}

impl Terminal {
    /// Waits until the terminal shows its main screen and its cursor again: the bytes oino
    /// wrote as it quit may still be on their way to this side when it has exited.
    pub(crate) fn wait_for_main_screen(&self) {
        wait_until_blocking("the main screen and the cursor back", || {
            let parser = self.screen.lock().expect("screen");
            !parser.screen().alternate_screen() && !parser.screen().hide_cursor()
        });
    }

    /// Quits with calls still running (`q`, then `y` to the question), and checks that the
    /// terminal is back and nothing oino started is left.
    fn quit_ending_everything(&mut self, mark: &str) {
        self.send(b"q");
        self.wait_for("still running: quit and end them?");
        self.send(b"y");
        assert!(self.wait_exit().success());
        self.assert_restored_and_alone(mark);
    }

    pub(crate) fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let mut status = None;
        wait_until_blocking("oino to quit", || {
            status = self.child.try_wait().expect("wait");
            status.is_some()
        });
        status.expect("an exit status")
    }

    /// The terminal is back (main screen, cooked mode, cursor shown) and nothing oino started
    /// is left.
    fn assert_restored_and_alone(&self, mark: &str) {
        self.wait_for_main_screen();
        assert_eq!(
            self.screen
                .lock()
                .expect("screen")
                .screen()
                .mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "mouse reports left on"
        );
        let tty = self.master.tty_name().expect("the terminal's name");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOCTTY.bits())
            .open(&tty)
            .expect("open the terminal");
        let termios = nix::sys::termios::tcgetattr(&slave).expect("termios");
        let local = termios.local_flags;
        assert!(
            local.contains(nix::sys::termios::LocalFlags::ICANON),
            "{local:?}"
        );
        assert!(
            local.contains(nix::sys::termios::LocalFlags::ECHO),
            "{local:?}"
        );

        // Nothing oino started is left.
        wait_until_blocking("every process oino started to end", || {
            oino::pty::proc_scan::with_env("OINO_E2E_MARK", mark).is_empty()
        });
    }
}

fn rows(count: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(count).expect("not zero")
}

/// The highest `count N` on a screen.
fn counted(screen: &str) -> u32 {
    screen
        .lines()
        .filter_map(|line| line.split("count ").nth(1))
        .filter_map(|number| number.trim().parse::<u32>().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn oino_run_in_a_terminal_runs_its_call_at_that_terminals_size() {
    let mark = unique_id("e2e-run-size");
    let server = crate::support::ServerGuard::new("e2e-run-size");
    let env = [("OINO_SOCKET", server.socket.as_path())];
    let mut run = Terminal::start_with(&["run", "--", "echo \"size: $(stty size)\""], &mark, &env);
    assert!(run.wait_exit().success());
    run.wait_for("size: 30 120");
}

/// Starts `less [--mouse]` on 300 numbered rows in a pane; `less-ended` shows once it quits.
fn less_in_a_pane(mark: &str, options: &str) -> Terminal {
    let file = temp_dir(mark).join("rows.txt");
    let rows: String = (1..=300).map(|n| format!("row-{n:03}\n")).collect();
    std::fs::write(&file, rows).expect("write the rows");
    let call = format!(
        "less {options} {}; echo less-ended; sleep 600",
        file.display()
    );
    let tui = Terminal::start(&["--embedded", &call], mark);
    tui.wait_for("row-001");
    tui
}

/// The wheel over the pane (at 120x30 the pane starts at column 32, row 2), as the terminal
/// reports it to oino (SGR).
const WHEEL_DOWN_IN_PANE: &[u8] = b"\x1b[<65;60;10M";
const WHEEL_UP_IN_PANE: &[u8] = b"\x1b[<64;60;10M";
const WHEEL_UP_OVER_THE_LIST: &[u8] = b"\x1b[<64;5;5M";

/// Quits less from a focused pane: the pane then shows the live screen after it, never
/// history.
fn quit_less(tui: &mut Terminal) {
    tui.send(b"\r");
    tui.wait_for("typing into");
    tui.send(b"q");
    // In the pane, not the bar (which names the command, with this word in it).
    tui.wait_for("│less-ended");
    assert!(!tui.contents().contains("lines back"), "{}", tui.contents());
    tui.send(b"\x01");
}

#[test]
fn the_wheel_scrolls_less_with_mouse_by_its_own_reports() {
    let mark = unique_id("e2e-less-mouse");
    let mut tui = less_in_a_pane(&mark, "--mouse");
    tui.send(WHEEL_DOWN_IN_PANE);
    tui.wait_until("less to scroll down", |screen| !screen.contains("row-001"));
    tui.send(WHEEL_UP_IN_PANE);
    tui.wait_for("row-001");
    assert!(!tui.contents().contains("lines back"), "{}", tui.contents());
    quit_less(&mut tui);
    tui.quit_ending_everything(&mark);
}

#[test]
fn the_wheel_moves_less_without_mouse_by_lines_and_opens_no_history_over_it() {
    let mark = unique_id("e2e-less-arrows");
    let mut tui = less_in_a_pane(&mark, "");
    tui.send(WHEEL_DOWN_IN_PANE);
    // Three rows a notch, as arrow keys.
    tui.wait_until("less to move three rows", |screen| {
        !screen.contains("row-003") && screen.contains("row-004")
    });
    // Over the list too, the wheel opens no history on top of less.
    tui.send(WHEEL_UP_OVER_THE_LIST);
    tui.send(WHEEL_UP_IN_PANE);
    tui.wait_for("row-001");
    assert!(!tui.contents().contains("lines back"), "{}", tui.contents());
    quit_less(&mut tui);
    tui.quit_ending_everything(&mark);
}

impl Terminal {
    /// The colors and boldness of the cell where `text` first shows on the screen.
    fn pen_at(&self, text: &str) -> (vt100::Color, vt100::Color, bool) {
        let parser = self.screen.lock().expect("screen");
        let screen = parser.screen();
        for (row, line) in (0u16..).zip(screen.rows(0, 120)) {
            if let Some(at) = line.find(text) {
                let col = u16::try_from(line[..at].chars().count()).expect("a column");
                let cell = screen.cell(row, col).expect("a cell");
                return (cell.fgcolor(), cell.bgcolor(), cell.bold());
            }
        }
        panic!("`{text}` is not on the screen:\n{}", screen.contents());
    }
}

#[test]
fn history_scrolled_back_keeps_its_colors() {
    let mark = unique_id("e2e-history-colors");
    // Blue set once, thousands of lines before the page shown; then bold red lines each reset.
    let call = "printf '\\033[34m'; seq 1 3000 | sed 's/^/blue-/'; printf '\\033[0m'; \
                for i in $(seq 1 40); do printf '\\033[1;31mred-%d\\033[0m plain-%d\\n' $i $i; done; \
                sleep 600";
    let mut tui = Terminal::start(&["--embedded", call], &mark);
    tui.wait_for("plain-40");
    // The live screen has its colors.
    assert_eq!(
        tui.pen_at("red-40"),
        (vt100::Color::Idx(1), vt100::Color::Default, true)
    );
    // A page back: the last blue lines and the first red ones, read from the log.
    tui.send(b"\x1b[5~");
    tui.wait_for("lines back");
    tui.wait_for("blue-3000");
    tui.wait_for("red-1 ");
    assert_eq!(
        tui.pen_at("blue-3000"),
        (vt100::Color::Idx(4), vt100::Color::Default, false)
    );
    assert_eq!(
        tui.pen_at("red-1 "),
        (vt100::Color::Idx(1), vt100::Color::Default, true)
    );
    assert_eq!(
        tui.pen_at("plain-1"),
        (vt100::Color::Default, vt100::Color::Default, false)
    );
    tui.quit_ending_everything(&mark);
}

#[test]
fn the_demo_ends_with_its_interface_and_starts_no_server() {
    let mark = unique_id("e2e-demo");
    let socket = temp_dir(&mark).join("sock/demo.sock");
    let mut tui = Terminal::start_with(&[], &mark, &[("OINO_SOCKET", socket.as_path())]);
    tui.wait_for("the clock ticks");
    tui.wait_for("type a line and press Enter");
    // The quit prompt says the demo's calls end, and none is left (no server either).
    tui.quit_ending_everything(&mark);
    assert!(!socket.exists(), "the demo started a server");
}

/// A mistake in the settings: the interface (here, on the demo in its own process) starts with
/// the defaults and says where the mistake is; it once ended at once with the error.
#[test]
fn a_mistake_in_the_settings_is_shown_and_the_interface_starts_anyway() {
    let mark = unique_id("e2e-bad-settings");
    let dir = temp_dir(&mark);
    let socket = dir.join("sock/bad.sock");
    let settings = dir.join("config.toml");
    std::fs::write(&settings, "[theme]\nrunning = \"plaid\"\n").expect("settings");
    let mut tui = Terminal::start_with(
        &[],
        &mark,
        &[
            ("OINO_SOCKET", socket.as_path()),
            ("OINO_CONFIG", settings.as_path()),
        ],
    );
    tui.wait_for("settings not used");
    tui.wait_for("the clock ticks");
    tui.quit_ending_everything(&mark);
}

#[test]
fn attach_puts_this_terminal_on_a_task_and_the_detach_key_leaves_it_running() {
    let mark = unique_id("e2e-attach");
    let server = crate::support::ServerGuard::new("e2e-attach");
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--name",
            "shell",
            "--",
            "PS1='ready> ' bash --norc --noprofile -i",
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{started:?}");
    let env = [("OINO_SOCKET", server.socket.as_path())];
    let mut tui = Terminal::start_with(&["attach", "shell"], &mark, &env);
    tui.wait_for("attached to `shell`");
    tui.wait_for("Ctrl-A detaches");
    // What it showed before the attach is drawn first.
    tui.wait_for("ready>");
    // Keys go to it, and it runs at this terminal's size (less the header and the bar).
    tui.send(b"echo typed-$((6 * 7)); stty size\r");
    tui.wait_for("typed-42");
    tui.wait_for("28 120");
    // Resizing the terminal resizes it.
    tui.screen
        .lock()
        .expect("screen")
        .screen_mut()
        .set_size(rows(20), rows(100));
    tui.master
        .resize(PtySize {
            rows: 20,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("resize");
    tui.wait_until("the bar on the last row of 20", |screen| {
        screen
            .lines()
            .nth(19)
            .is_some_and(|line| line.contains("attached to"))
    });
    tui.send(b"stty size\r");
    tui.wait_for("18 100");
    // The detach key leaves it running.
    tui.send(b"\x01");
    assert!(tui.wait_exit().success());
    tui.wait_for("detached from `shell`: it keeps running");
    tui.assert_restored_and_alone(&mark);
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: Vec<oino::remote::protocol::wire::Entry> =
        serde_json::from_slice(&listed.stdout).expect("JSON");
    assert!(
        entries
            .iter()
            .any(|entry| entry.name.as_deref() == Some("shell")
                && entry.state == oino::remote::protocol::wire::State::Running),
        "{entries:?}"
    );
}

/// Attached to a shell, oino asks the terminal for no mouse reports until the program does;
/// killed with SIGINT or SIGQUIT (as `kill` sends them: Ctrl-C is a key in raw mode), it puts
/// the terminal back: main screen, cooked mode, no mouse reports.
#[test]
fn attach_asks_for_the_mouse_only_for_a_program_that_does_and_a_signal_restores_the_terminal() {
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGQUIT,
    ] {
        let mark = unique_id("e2e-attach-signal");
        let server = crate::support::ServerGuard::new("e2e-attach-signal");
        let started = server
            .oino(&[
                "run",
                "--detach-after",
                "0.2",
                "--name",
                "shell",
                "--",
                "PS1='ready> ' bash --norc --noprofile -i",
            ])
            .output()
            .expect("oino run");
        assert!(started.status.success(), "{started:?}");
        let env = [("OINO_SOCKET", server.socket.as_path())];
        let mut tui = Terminal::start_with(&["attach", "shell"], &mark, &env);
        tui.wait_for("ready>");
        let asked = |tui: &Terminal, mode: &str| {
            String::from_utf8_lossy(&tui.raw.lock().expect("raw"))
                .contains(&format!("\x1b[?{mode}h"))
        };
        assert!(
            !asked(&tui, "1003") && !asked(&tui, "1000"),
            "a shell got mouse reports"
        );
        // The program asks for clicks: so does oino, of the terminal.
        tui.send(b"printf '\\033[?1000h'; echo asked\r");
        tui.wait_for("asked");
        wait_until_blocking("oino to ask for the mouse", || asked(&tui, "1000"));
        assert!(
            !asked(&tui, "1003"),
            "more mouse reports than the program asked for"
        );
        let pid = tui.child.process_id().expect("a pid");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
            signal,
        )
        .expect("kill");
        tui.wait_exit();
        tui.assert_restored_and_alone(&mark);
    }
}

/// The texts oino put on the clipboard (OSC 52), in order.
fn clipboard(raw: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(raw);
    text.split("\x1b]52;c;")
        .skip(1)
        .filter_map(|rest| rest.split('\x07').next())
        .map(|encoded| String::from_utf8(base64_decode(encoded)).expect("UTF-8"))
        .collect()
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|c| *c != b'=').map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (at, digit)| {
            word | u32::from(*digit) << (18 - 6 * at)
        });
        out.extend(word.to_be_bytes()[1..chunk.len()].iter());
    }
    out
}

#[test]
fn copy_puts_the_selection_on_the_clipboard_only_when_asked() {
    let mark = unique_id("e2e-copy");
    // The program tries to set the clipboard itself: that never gets through.
    let call = "printf 'alpha beta\\ngamma\\n\\033]52;c;ZXZpbA==\\007'; sleep 600";
    let mut tui = Terminal::start(&["--embedded", call], &mark);
    // In the pane (the header shows the command, `gamma` included).
    tui.wait_for("│gamma");
    assert!(clipboard(&tui.raw.lock().expect("raw")).is_empty());
    // From the keyboard: v at the cursor (the row after gamma), up twice, to the row's start, y.
    tui.send(b"v");
    tui.wait_for("y copies to the clipboard");
    tui.send(b"kk0y");
    tui.wait_for("copied 17 characters");
    assert_eq!(
        clipboard(&tui.raw.lock().expect("raw")),
        ["alpha beta\ngamma\n"]
    );
    // With the mouse: a drag over `alpha` (the pane starts at column 32, row 2).
    tui.send(b"\x1b[<0;32;2M\x1b[<32;34;2M\x1b[<32;36;2M\x1b[<0;36;2m");
    tui.wait_for("copied 5 characters");
    assert_eq!(
        clipboard(&tui.raw.lock().expect("raw")),
        ["alpha beta\ngamma\n", "alpha"]
    );
    tui.quit_ending_everything(&mark);
}

/// The cells of `screen` that carry a color: (row, column, the text there, its foreground).
fn colored_cells(screen: &vt100::Screen) -> Vec<(u16, u16, String, vt100::Color)> {
    let (rows, cols) = screen.size();
    let mut colored = Vec::new();
    for row in 0..rows.get() {
        for col in 0..cols.get() {
            let Some(cell) = screen.cell(row, col) else {
                continue;
            };
            if cell.fgcolor() != vt100::Color::Default || cell.bgcolor() != vt100::Color::Default {
                colored.push((row, col, cell.contents().to_owned(), cell.fgcolor()));
            }
        }
    }
    colored
}

#[test]
fn no_color_takes_oinos_colors_away_and_leaves_the_programs() {
    let mark = unique_id("e2e-no-color");
    let no_color = std::path::Path::new("1");
    let command = "printf 'plain \\033[31mred-text\\033[0m plain\\n'; sleep 600";
    let mut tui = Terminal::start_with(
        &["--embedded", command, "sleep 601"],
        &mark,
        &[("NO_COLOR", no_color)],
    );
    tui.wait_for("plain red-text plain");
    // The program's red reaches the terminal, and nothing else has a color: not the list, the
    // header, the rules or the bar.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let colored = colored_cells(tui.screen.lock().expect("screen").screen());
        let red = |(_, _, text, color): &(u16, u16, String, vt100::Color)| {
            text != " " && *color == vt100::Color::Idx(1)
        };
        let text: String = colored
            .iter()
            .map(|(_, _, text, _)| text.as_str())
            .collect();
        if text == "red-text" && colored.iter().all(red) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "colored cells (row, column, text, foreground): {colored:?}\n{}",
            tui.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    tui.quit_ending_everything(&mark);
}
