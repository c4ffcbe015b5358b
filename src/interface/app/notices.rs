//! What the bar tells, and when: a notice lasts until the next key or [`NOTICE_TIME`]. Calls
//! are named as the list names them (their label, cut), never by their id alone; a call that
//! waits before the list has it is told once it is listed.

use std::time::{Duration, Instant};

use crate::core::{CoreEvent, EntryInfo, EntryKind};
use crate::interface::fit;

use super::{Action, App, Effect, Notice, settings};

/// How long a notice stays in the bar.
pub(super) const NOTICE_TIME: Duration = Duration::from_secs(8);
/// The most columns of a call's name quoted in a notice.
const MAX_NAME_COLS: usize = 30;
/// The most columns of a prompt quoted in a notice.
const MAX_PROMPT_COLS: usize = 40;

impl App {
    /// Says something in the bar.
    pub fn say(&mut self, text: impl Into<String>, is_error: bool) {
        // A name or a command in it shows its control characters, escaped.
        let text: String = text.into();
        self.notice = Some(Notice {
            text: crate::inert::escaped(&text).into_owned(),
            is_error,
            shown_at: Instant::now(),
        });
    }

    /// Ends a notice whose time is up.
    pub(crate) fn expire_notice(&mut self) {
        if self
            .notice
            .as_ref()
            .is_some_and(|notice| notice.shown_at.elapsed() > NOTICE_TIME)
        {
            self.notice = None;
        }
    }

    /// `id` waits for input at `prompt`: told by its name, or once the list has it.
    pub(super) fn tell_waiting(&mut self, id: &str, prompt: &str) {
        let Some(entry) = self.entries.iter().find(|entry| entry.id == id) else {
            self.untold_wait = Some((id.to_owned(), prompt.to_owned()));
            return;
        };
        let text = format!(
            "`{}` waits for input: {} ({} to type into it)",
            quoted_name(entry),
            fit::cut(prompt.trim_end(), MAX_PROMPT_COLS),
            self.key_of(Action::Focus)
        );
        self.say(text, false);
    }

    /// Tells what the new list of entries brings: a wait told before its entry was listed, a
    /// log that could not be written or reached its cap (once each, where the person looks).
    pub(super) fn tell_entries(&mut self, entries: &[EntryInfo]) {
        let told = |entry: &EntryInfo| entry.log_error.is_some() || entry.log_cut.is_some();
        let untold = entries
            .iter()
            .find(|entry| told(entry) && !self.log_errors_told.contains(&entry.id));
        if let Some(entry) = untold {
            let note = match (&entry.log_error, &entry.log_cut) {
                (Some(error), _) => crate::call::log_error_note(error),
                (None, Some(cut)) => crate::call::log_cut_note(cut, &entry.log_path),
                (None, None) => String::new(),
            };
            self.say(
                format!("{}: {note}", quoted_name(entry)),
                entry.log_error.is_some(),
            );
        }
        self.log_errors_told.extend(
            entries
                .iter()
                .filter(|entry| told(entry))
                .map(|entry| entry.id.clone()),
        );
    }

    /// A wait told before its entry was listed, now that it is (or has gone).
    pub(super) fn tell_untold_wait(&mut self) {
        let Some((id, prompt)) = self.untold_wait.take() else {
            return;
        };
        let waits = self
            .entries
            .iter()
            .any(|entry| entry.id == id && entry.state.is_running());
        if waits {
            self.tell_waiting(&id, &prompt);
        }
    }

    /// What happened in a project, said in the bar (here the file is applied with a key too).
    pub(super) fn project_notice(&mut self, notice: &str) {
        let key = format!("`oino up` or {}", self.key_of(Action::ProjectUp));
        self.say(notice.replace("`oino up`", &key), false);
    }

    /// A task's end, told as the settings ask (nothing by default).
    pub(super) fn end_notice(&self, event: &CoreEvent) -> Option<Effect> {
        let CoreEvent::Ended { id, state } = event else {
            return None;
        };
        if self.settings.notify == settings::Notify::None {
            return None;
        }
        let task = self
            .entries
            .iter()
            .find(|entry| entry.id == *id && entry.kind == EntryKind::Task)?;
        Some(Effect::Notify {
            text: format!(
                "task {} `{}` {state}",
                task.task_id.as_deref().unwrap_or(&task.id),
                task.label()
            ),
        })
    }
}

/// An entry's name as the list shows it, cut for a notice.
fn quoted_name(entry: &EntryInfo) -> String {
    fit::cut(&crate::inert::escaped(entry.label()), MAX_NAME_COLS)
}

impl App {
    /// Takes how the far hosts stand now; a link that dropped or came back is told.
    pub(crate) fn set_hosts(&mut self, hosts: Vec<crate::interface::fleet::HostView>) {
        use crate::interface::fleet::HostState::{Down, Linking, Up};
        for host in &hosts {
            let before = self
                .hosts
                .iter()
                .find(|old| old.name == host.name)
                .map(|old| &old.state);
            match (before, &host.state) {
                (Some(Up), Down { .. }) => self.say(
                    format!(
                        "the link to {} dropped: linking again (what runs there goes on)",
                        host.name
                    ),
                    true,
                ),
                (Some(Down { .. }), Up) => {
                    self.say(format!("{} is linked again", host.name), false);
                }
                // Its first failure in full; the list keeps the transport's words.
                (Some(Linking), Down { whole, .. }) => self.say(whole.clone(), true),
                (Some(Down { .. }), Down { .. }) | (_, Linking | Up) | (None, _) => {}
            }
        }
        self.hosts = hosts;
    }
}
