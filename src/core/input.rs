//! Calls that wait for someone to type: noticed from the kernel's account of the terminal's
//! foreground processes a while after the call's last output began (output that goes on does
//! not put the look off: a prompt under a spinner, or one printed again each second, is still
//! a prompt), shown on its entry, and acted on by its waiter's policy (a program's call may be
//! detached or killed; a person sees it marked). A process that waits for the keyboard with a
//! timeout is looked at twice: one that worked in between (a job that checks for a key now and
//! then) waits for nobody.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Core;
use super::entries::Entry;
use super::types::CoreEvent;
use crate::call::{DetachCause, InputPolicy};
use crate::pty::Waiter;
use crate::pty::waiting::TerminalRead;

/// How often a running call's output is looked at, at most.
const TICK: Duration = Duration::from_millis(250);
/// How long a call is quiet before its processes are looked at: a prompt is the last thing
/// printed before the wait.
const QUIET: Duration = Duration::from_secs(1);
/// The longest wait between two looks at a call that stays quiet without reading: a thousand
/// idle servers cost a look every 60 ms together (under 0.5% of a core). Output, which comes
/// with every prompt, starts the looks over at [`QUIET`].
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The longest prompt line kept.
const MAX_PROMPT_CHARS: usize = 200;
/// The CPU time a process that waits for the keyboard with a timeout may use between two looks
/// and still be waiting for someone (its looks at the keyboard cost a little; work costs more).
const IDLE_CPU_TICKS: u64 = 5;

impl Core {
    /// Follows `entry` until it ends, marking it while a process of it waits for input.
    pub(super) async fn watch_for_input(self, entry: Arc<Entry>) {
        // Subscribed before the first look: output between the two is not noticed late.
        let mut output = entry.sink.readable_watch();
        let mut status = entry.status.subscribe();
        let mut seen = *output.borrow_and_update();
        let mut next_look = Instant::now() + QUIET;
        let mut backoff = QUIET;
        let mut acted = false;
        // A process seen waiting for the keyboard with a timeout at the last look, and its CPU
        // time then.
        let mut polled: Option<(i32, u64)> = None;
        while entry.is_running() {
            // Woken by output (looked at once a tick at most, however fast it comes), by a
            // change of state, or when the next look is due: a quiet call costs nothing between
            // looks.
            tokio::select! {
                changed = output.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    tokio::time::sleep(TICK).await;
                }
                changed = status.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
                () = tokio::time::sleep_until(next_look) => {}
            }
            let now = Instant::now();
            let written = entry.sink.readable();
            if written != seen {
                seen = written;
                backoff = QUIET;
                if entry.status.borrow().waiting_for_input.is_some() {
                    // Answered, maybe: looked at again at once (a spinner under a prompt
                    // writes too, and the prompt is still there).
                    next_look = now;
                } else {
                    // Looked at no later than a second after the output began, whether it goes
                    // on or not.
                    next_look = next_look.min(now + QUIET);
                }
            }
            if now < next_look {
                continue;
            }
            let control = entry.control.clone();
            let read = tokio::task::spawn_blocking(move || control.reading_terminal())
                .await
                .unwrap_or(TerminalRead::No);
            if !entry.is_running() {
                break;
            }
            let reading = match read {
                TerminalRead::No => {
                    polled = None;
                    false
                }
                TerminalRead::Waits => true,
                // Twice in a row, the same process, idle in between.
                TerminalRead::Polls { pid, cpu_ticks } => {
                    let idle = polled.is_some_and(|(was, ticks)| {
                        was == pid && cpu_ticks.saturating_sub(ticks) <= IDLE_CPU_TICKS
                    });
                    polled = Some((pid, cpu_ticks));
                    idle
                }
            };
            if reading {
                // Looked at again each second: a password typed shows nothing.
                next_look = now + QUIET;
                if entry.status.borrow().waiting_for_input.is_none() {
                    let prompt = prompt_line(&entry);
                    self.set_waiting(&entry, Some(prompt.clone()));
                    if !acted {
                        acted = true;
                        self.act_on_input(&entry, &prompt).await;
                    }
                }
            } else if polled.is_some() {
                // The second look at a process polling the keyboard, a second on.
                self.set_waiting(&entry, None);
                next_look = now + QUIET;
            } else {
                self.set_waiting(&entry, None);
                acted = false;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                next_look = now + backoff;
            }
        }
        self.set_waiting(&entry, None);
    }

    pub(super) fn set_waiting(&self, entry: &Entry, prompt: Option<String>) {
        let changed = entry.status.send_if_modified(|status| {
            if status.waiting_for_input == prompt {
                return false;
            }
            status.waiting_for_input.clone_from(&prompt);
            true
        });
        if changed {
            self.emit(CoreEvent::Waiting {
                id: entry.id.clone(),
                prompt,
            });
        }
    }

    /// What the waiter of a program's call asked for when it waits for input.
    async fn act_on_input(&self, entry: &Entry, prompt: &str) {
        let is_call = entry.status.borrow().task.is_none();
        if !is_call || entry.waiter != Waiter::Program {
            return;
        }
        match entry.on_input {
            InputPolicy::Wait => {}
            InputPolicy::Detach => {
                let (reason, cause) = input_reason(entry, prompt).await;
                // Refused only when it ended or was detached meanwhile.
                let _ = self.detach_for(&entry.id, None, &reason, cause).await;
            }
            InputPolicy::Kill => {
                let _ = self.kill(&entry.id).await;
            }
        }
    }
}

/// The line the cursor is on (where a prompt waits), else the last line shown.
fn prompt_line(entry: &Entry) -> String {
    let view = entry.sink.snapshot(None, 0).view();
    view.cursor
        .and_then(|cursor| view.lines.get(usize::from(cursor.row)))
        .filter(|line| !line.trim().is_empty())
        .or_else(|| view.shown_lines().last())
        .map(|line| line.trim().chars().take(MAX_PROMPT_CHARS).collect())
        .unwrap_or_default()
}

/// Why a call that waits for input is detached, in words and as a cause: a full-screen
/// program's cursor row says nothing (a row of `top`, the first line of a file), so it is named
/// by its program.
async fn input_reason(entry: &Entry, prompt: &str) -> (String, DetachCause) {
    if entry.sink.snapshot(None, 0).alternate_screen {
        let control = entry.control.clone();
        let program = tokio::task::spawn_blocking(move || control.foreground_program())
            .await
            .ok()
            .flatten();
        let program = program.as_deref().unwrap_or("a program");
        let words = format!("{program} (full screen) waits for keys");
        (words, DetachCause::Keys)
    } else if prompt.is_empty() {
        ("waiting for input".to_owned(), DetachCause::Input)
    } else {
        (format!("waiting for input: {prompt}"), DetachCause::Input)
    }
}
