//! The prompt mode: a line typed in the bar (a task's name, a new command, a search, the list's
//! filter), given to what asked for it on Enter (the filter takes it as it is typed).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect, Mode, ModeKeys};

/// A line being typed in the bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub purpose: PromptPurpose,
    pub text: String,
    /// The text is a proposal, shown selected: Enter takes it, and the first character typed
    /// (or pasted) replaces it, as in a dialog's name field; an arrow keeps it to edit.
    pub proposal: bool,
}

/// What the line typed is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptPurpose {
    /// The name of the task the call `id` becomes.
    DetachName {
        id: String,
        /// The name proposed: taken as it is, the core names the task (as the call asked at
        /// its start, else after its command, made unique).
        proposed: String,
    },
    /// A command to run: here, or on the far host named (the selected entry's).
    NewCommand {
        host: Option<String>,
    },
    Search,
    /// The list's filter, applied as it is typed.
    Filter,
}

impl ModeKeys for Prompt {
    fn key(mut self, app: &mut App, key: KeyEvent) -> Vec<Effect> {
        match (key.code, key.modifiers) {
            (KeyCode::Esc, _) | (KeyCode::Char('c'), KeyModifiers::CONTROL) => {
                // Esc at the filter clears it.
                if self.purpose == PromptPurpose::Filter {
                    app.set_filter("");
                }
                return Vec::new();
            }
            (KeyCode::Enter, _) => return app.submit(self),
            (KeyCode::Backspace, _) if self.proposal => self.text.clear(),
            (KeyCode::Backspace, _) => {
                self.text.pop();
            }
            (KeyCode::Char('u'), KeyModifiers::CONTROL) => self.text.clear(),
            // A new call's machine: Tab goes through this one and each far host.
            (KeyCode::Tab, _) => {
                if let PromptPurpose::NewCommand { host } = &mut self.purpose {
                    *host = next_machine(app, host.as_deref());
                }
            }
            (KeyCode::Char(c), KeyModifiers::NONE | KeyModifiers::SHIFT) => {
                if self.proposal {
                    self.text.clear();
                }
                self.text.push(c);
            }
            _ => {}
        }
        // Any key but Enter and Esc makes the proposal text like any other.
        self.proposal = false;
        // The filter narrows the list as it is typed.
        if self.purpose == PromptPurpose::Filter {
            app.set_filter(&self.text);
        }
        app.mode = Mode::Prompt(self);
        Vec::new()
    }
}

/// The machine after `host` (`None`: this one) among this one and the far hosts, in the
/// list's order.
fn next_machine(app: &App, host: Option<&str>) -> Option<String> {
    let names: Vec<&str> = app.hosts.iter().map(|view| view.name.as_str()).collect();
    let next = match host {
        None => 0,
        Some(host) => names
            .iter()
            .position(|name| *name == host)
            .map_or(0, |at| at + 1),
    };
    names.get(next).map(|name| (*name).to_owned())
}

impl Prompt {
    /// Pasted text is typed, without its control characters.
    pub(super) fn paste(&mut self, text: &str) {
        if std::mem::take(&mut self.proposal) {
            self.text.clear();
        }
        self.text.extend(text.chars().filter(|c| !c.is_control()));
    }
}

impl App {
    fn submit(&mut self, prompt: Prompt) -> Vec<Effect> {
        let text = prompt.text.trim().to_owned();
        match prompt.purpose {
            PromptPurpose::DetachName { id, proposed } => vec![Effect::Detach {
                id,
                name: (!text.is_empty() && text != proposed).then_some(text),
            }],
            PromptPurpose::NewCommand { .. } if text.is_empty() => Vec::new(),
            PromptPurpose::NewCommand { host } => match self.pane_size() {
                Some(size) => vec![Effect::Start {
                    command: text,
                    size,
                    host,
                }],
                None => Vec::new(),
            },
            PromptPurpose::Search => self.start_search(text),
            PromptPurpose::Filter => {
                self.set_filter(&text);
                Vec::new()
            }
        }
    }
}
