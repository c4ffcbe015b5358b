//! Where a copy goes: to the terminal oino draws on as OSC 52 and, inside tmux, to tmux's
//! buffer too, since tmux's default `set-clipboard external` keeps an application's OSC 52
//! from reaching it. tmux runs off the loop; what it did comes back as a notice.

use std::io::{IsTerminal, Write as _};
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;

use crate::interface::app::Outcome;

/// How long tmux has to take a copy before it is given up on (and killed).
const TMUX_TIME: Duration = Duration::from_secs(5);

/// Puts `text` on the clipboard: OSC 52 on this terminal, and tmux's buffer when inside tmux
/// (told through `outcomes` once tmux has answered).
pub(crate) fn copy(text: String, outcomes: &mpsc::UnboundedSender<Outcome>) {
    let mut stdout = std::io::stdout();
    if stdout.is_terminal() {
        let sequence = crate::interface::app::osc52(&text);
        let _ = stdout
            .write_all(sequence.as_bytes())
            .and_then(|()| stdout.flush());
    }
    if std::env::var_os("TMUX").is_none_or(|value| value.is_empty()) {
        return;
    }
    let outcomes = outcomes.clone();
    tokio::spawn(async move {
        let count = crate::interface::app::characters(text.chars().count());
        let outcome = match to_tmux(&text).await {
            Ok(()) => Outcome::Done(format!(
                "copied {count} to the clipboard and to tmux's buffer"
            )),
            Err(err) => Outcome::Failed(format!("copied {count}, but not to tmux's buffer: {err}")),
        };
        let _ = outcomes.send(outcome);
    });
}

/// `tmux load-buffer -w -` (`-w`: on to the outer terminal's clipboard as well), or without
/// `-w` for a tmux before 3.2 that refuses it. tmux finds its server from `$TMUX`.
async fn to_tmux(text: &str) -> Result<(), String> {
    match load_buffer(&["load-buffer", "-w", "-"], text).await {
        // Only a tmux that does not know `-w` (it answers with its usage) is asked again:
        // any other failure is said as it is, at once.
        Err(complaint) if complaint.contains("usage:") || complaint.contains("unknown flag") => {
            load_buffer(&["load-buffer", "-"], text).await
        }
        done => done,
    }
}

/// Runs tmux with `args`, `text` on its standard input; its complaint when it fails.
async fn load_buffer(args: &[&str], text: &str) -> Result<(), String> {
    let mut child = tokio::process::Command::new("tmux")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("$TMUX is set, but tmux could not be run: {err}"))?;
    let mut stdin = child.stdin.take();
    let run = async move {
        if let Some(stdin) = &mut stdin {
            // A tmux that fails before it reads says why on its standard error, read below.
            let _ = stdin.write_all(text.as_bytes()).await;
        }
        drop(stdin);
        child.wait_with_output().await
    };
    let output = match tokio::time::timeout(TMUX_TIME, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => return Err(format!("waiting for tmux: {err}")),
        Err(_) => {
            return Err(format!(
                "tmux did not answer within {} s",
                TMUX_TIME.as_secs()
            ));
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said.lines().find(|line| !line.trim().is_empty());
    Err(said.map_or_else(
        || format!("tmux failed ({})", output.status),
        |line| crate::inert::escaped(line.trim()).into_owned(),
    ))
}
