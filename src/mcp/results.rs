//! What the bridge answers: a bash call's result (its text, its notes, how to go on with the
//! task it became), a task's line in `task_list`, and the progress a long call reports.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};

use super::reader;
use crate::call::CallResult;
use crate::core::EntryInfo;
use crate::link::Link;
use crate::remote::protocol::requests as ask;

/// One task as `task_list` shows it: id, name, state, run time, where it runs, its pid, output
/// and command.
pub(super) fn task_line(entry: &EntryInfo) -> String {
    format!(
        "{} {:?}: {} · {} · in {} · pid {} · {} of output{} · $ {}",
        entry.task_id.as_deref().unwrap_or(&entry.id),
        entry.name.as_deref().unwrap_or_default(),
        reader::state_words(entry),
        reader::ran_words(entry, crate::time::now_ms()),
        super::shown_path(&entry.cwd),
        entry.pid,
        crate::output::byte_size(entry.bytes.saturating_sub(entry.detach_offset)),
        match (&entry.log_error, &entry.log_cut) {
            (Some(_), _) => " (log not written: only the newest part is kept)".into(),
            (None, Some(cut)) => format!(
                " (log capped: {} left out)",
                crate::output::byte_size(cut.left_out)
            ),
            (None, None) => String::new(),
        },
        one_line(&entry.command),
    )
}

/// A command as one line of a list: its first line, at most 200 characters, controls escaped.
fn one_line(command: &str) -> String {
    const MOST: usize = 200;
    let first = command.lines().next().unwrap_or_default();
    let escaped = crate::inert::escaped(first);
    let mut shown: String = escaped.chars().take(MOST).collect();
    if escaped.chars().count() > MOST || first.len() < command.trim_end().len() {
        shown.push_str(" …");
    }
    shown
}

/// While a call runs, tells a client that asked for progress (with a `progressToken`) the
/// newest line of output, once a second: clients that show progress show it live, and clients
/// that reset their request timeout on progress keep waiting. Never ends.
pub(super) async fn report_progress(
    link: &Link,
    id: &str,
    progress: Option<(Peer<RoleServer>, ProgressToken)>,
) {
    const EVERY: Duration = Duration::from_secs(1);
    let Some((peer, token)) = progress else {
        return std::future::pending().await;
    };
    let mut seconds = 0_u32;
    loop {
        tokio::time::sleep(EVERY).await;
        seconds += 1;
        let newest = newest_line(link, id)
            .await
            .unwrap_or_else(|| "(no output yet)".to_owned());
        let mut report = ProgressNotificationParam::new(token.clone(), f64::from(seconds));
        report.message = Some(format!("{seconds} s: {newest}"));
        let _ = peer.notify_progress(report).await;
    }
}

/// The last line of the entry's output that is not blank, shortened to a line's worth.
async fn newest_line(link: &Link, id: &str) -> Option<String> {
    const TAIL: u64 = 4096;
    let entry = link
        .ask(ask::Entry {
            key: String::from(id),
        })
        .await
        .ok()?;
    let tail = link
        .ask(ask::Output {
            key: String::from(id),
            since: Some(entry.bytes.saturating_sub(TAIL)),
            max_bytes: Some(4096),
        })
        .await
        .ok()?;
    let last = tail
        .text
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())?;
    Some(last.chars().take(200).collect())
}

/// `[ran 0.8 s]`, or how a failed call ended and when: `[exit code 1 · 12.4 s]`.
pub(super) fn ended_note(result: &CallResult, ran: &str) -> String {
    match result.exit {
        Some(exit) if !exit.success() && !result.timed_out => format!("[{exit} · {ran}]"),
        _ => format!("[ran {ran}]"),
    }
}

/// A bash call's result as the agent gets it: the text (output so far and the marker, when
/// detached), then after an end the notes (how it ended, how long it ran, where the shell is
/// now), or after a detach how to go on with the task.
pub(super) async fn bash_result(
    link: &Link,
    id: &str,
    result: CallResult,
    (ran, background): (&str, bool),
    notes: &[String],
) -> CallToolResult {
    let text = match &result.detached {
        Some(detached) => one_blank_line_before_marker(&result.text, detached),
        None if result.text.is_empty() => "(no output)".to_owned(),
        None => result.text.clone(),
    };
    let mut content = vec![ContentBlock::text(text)];
    if let Some(detached) = &result.detached {
        let entry = link
            .ask(ask::Entry {
                key: String::from(id),
            })
            .await
            .ok();
        let name = entry
            .as_ref()
            .and_then(|entry| entry.name.as_ref())
            .map(|name| format!(" ({name:?})"))
            .unwrap_or_default();
        let place = entry
            .map(|entry| format!(" in {}", super::shown_path(&entry.cwd)))
            .unwrap_or_default();
        let what = if result.omitted_from.is_some() {
            "what the text above left out, then what it writes next,"
        } else {
            "what it writes next"
        };
        // A task from its start ran as no call.
        let ran = if background {
            String::new()
        } else {
            format!(" (after {ran} as a call)")
        };
        content.push(ContentBlock::text(format!(
            "Task {task}{name} keeps running{place}{ran}. Read {what} with task_output \
             {{\"task\": \"{task}\"}} (add wait_ms, and a pattern to wait for a line); type \
             into it with task_input; end it with task_kill.",
            task = detached.task_id
        )));
    }
    if !notes.is_empty() {
        content.push(ContentBlock::text(notes.join("\n") + "\n"));
    }
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A detached call's text with one blank line before the marker, not two: the output's own last
/// newline is the first of the marker's two.
fn one_blank_line_before_marker(text: &str, detached: &crate::call::DetachedTo) -> String {
    let marker = crate::call::detach_marker(&detached.task_id, &detached.reason);
    match text.strip_suffix(&marker) {
        Some(output) if output.ends_with('\n') => output[..output.len() - 1].to_owned() + &marker,
        _ => text.to_owned(),
    }
}
