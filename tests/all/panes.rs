//! Byte cases and a real program drawn in an oino call and in tmux (what a tmux client draws),
//! compared cell for cell: blanks in the background colour, erases, the saved cursor, widths,
//! SGR forms, tabs, the alternate screen and margins.

use std::fmt::Write as _;
use std::time::Instant;

use crate::support::{ServerGuard, temp_dir, wait_until_blocking};
use crate::vttest::{assert_equal, differences, drawn, need, start};

/// Each case starts from a plain, homed, cleared main screen with no margins and the palette
/// as it comes.
const CASES: [&str; 26] = [
    r"\033[44m\033[2J\033[3;1Habcdefghij\033[3;3H\033[2P",
    r"\033[44m\033[2J\033[3;1Habcdefghij\033[3;3H\033[2@",
    r"\033[44m\033[2J\033[24;1H\n\n",
    r"\033[44m\033[2J\033[H\033M",
    r"\033[44m\033[2J\033[5;1H\033[2L",
    r"\033[44m\033[2J\033[5;1H\033[2M",
    r"\033[44m\033[2J\033[2S",
    r"\033[44m\033[2J\033[2T",
    r"\033[44m\033[2J\033[2;5r\033[5;1H\n\n",
    r"\033[44m\033[2J\033[24;1Hxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    r"\033[7m\033[2;5H\033[K",
    r"\033[7m\033[3;1H\033[J",
    r"\033[4m\033[2;3H\033[K",
    r"\033[5;10HA\033[s\033[1;1HB\033[uC",
    r"\033[?1049h\033[5;10HA\033[s\033[1;1HB\033[uC",
    r"a\342\235\244\357\270\217bcd\033[2D\033[4hXY\033[4l",
    r"a\302\255b \360\237\221\250\342\200\215\360\237\221\251\342\200\215\360\237\221\247x",
    r"\033[4:3mcurly\033[m \033[4:2mdouble\033[m \033[21mdouble\033[m \033[8mhidden\033[m \033[53mover\033[m \033[38:2::255:0:0mred\033[m",
    r"\033[1;20H\033[ZX",
    r"\033[1;80HA\tB",
    r"a\033[2b\033[m\033[3b",
    r"AB\033[?1047h\033[3;3HX\033[?1047lY",
    r"\033[2;2H\033[?47h\033[4;4H\033[?47lZ",
    r"\033[5;5HX\033[3;6r|",
    r"\033]4;9;rgb:ff/80/00\007\033[91mX\033[m \033]4;1;#102030\033\\\033[31mY\033[m \033[38;5;9mZ",
    r"A\r\n\033[3b \033[9mB\033[2b\033[m \033[1;1H\033[?1047lC",
];

const FIRST: &str = "Byte cases: Enter shows each";
const LAST: &str = "Byte cases done";

/// A bash script that shows each case and waits for Enter.
fn script() -> String {
    let mut script = format!("stty -echo\nprintf '{FIRST}\\n'\nread -r _\n");
    for case in CASES {
        let _ = writeln!(
            script,
            "printf '\\033[?1049l\\033[0m\\033[r\\033]104\\007\\033[H\\033[2J'; printf '{case}'; read -r _"
        );
    }
    let _ = writeln!(
        script,
        "printf '\\033[0m\\033[H\\033[2J{LAST}\\n'\nread -r _"
    );
    script
}

#[test]
fn byte_cases_look_as_in_tmux() {
    need("tmux");
    let server = ServerGuard::new("panes");
    let path = temp_dir("panes-cases").join("cases.sh");
    std::fs::write(&path, script()).expect("script written");
    let command = format!("bash {}", path.display());
    let sides = start(&server, "cases", &command, FIRST, FIRST);
    let started = Instant::now();
    let mut report = Vec::new();
    let compared = sides.walk(&[], LAST, &mut report);
    assert_equal(&report, compared, CASES.len() + 1, started);
}

#[test]
fn vim_with_a_dark_colour_scheme_scrolls_as_in_tmux() {
    need("vim");
    need("tmux");
    let server = ServerGuard::new("panes-vim");
    let path = temp_dir("panes-vim").join("lines.txt");
    let text: String = (1..=200).map(|line| format!("line {line}\n")).collect();
    std::fs::write(&path, text).expect("file written");
    // The same terminal type on both sides: vim leaves blanks to BCE where terminfo says so.
    let command = format!(
        "env TERM=xterm-256color vim -u NONE -i NONE -N -n {}",
        path.display()
    );
    let sides = start(&server, "vim", &command, "line 1", "line 1");
    sides.oino.keys(":colorscheme darkblue");
    sides.reference.keys(":colorscheme darkblue");
    for _ in 0..5 {
        sides.oino.send("\u{5}");
        sides.reference.send(&["C-e"]);
    }
    let started = Instant::now();
    let mut last = (String::new(), String::new());
    let mut same = 0;
    wait_until_blocking("vim to scroll five lines in oino and in tmux", || {
        let now = (sides.oino.capture(), sides.reference.capture());
        let scrolled = |capture: &str| drawn(capture, false).text().starts_with("line 6\n");
        same = if now == last && scrolled(&now.0) && scrolled(&now.1) {
            same + 1
        } else {
            0
        };
        last = now;
        same >= 3
    });
    let (ours, theirs) = (drawn(&last.0, false), drawn(&last.1, true));
    let differing = differences(&ours, &theirs);
    let report: Vec<String> = (!differing.is_empty())
        .then(|| {
            format!(
                "vim:\n  {}\n--- oino:\n{}--- tmux:\n{}",
                differing.join("\n  "),
                ours.text(),
                theirs.text()
            )
        })
        .into_iter()
        .collect();
    assert_equal(&report, 1, 1, started);
}
