//! The focus mode: keys, pastes and the mouse go to the selected process, as its terminal would
//! send them (Ctrl-A comes back); attached (`oino attach`), every key but the detach key does.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect, Mode, PromptPurpose, encode_key};
use crate::core::EntryState;

/// An interface attached to one entry: its pane is the whole view and every key goes to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    /// The entry's call id.
    pub id: String,
    /// The key that leaves the entry running and ends the attach.
    pub detach_key: KeyEvent,
    /// The name of the detach key, as the bar shows it.
    pub detach_label: String,
    /// How it ended, once it has (the attach ends with it).
    pub ended: Option<EntryState>,
}

impl App {
    /// Attaches to entry `id`: its pane fills the view, every key but `detach_key` goes to it.
    pub fn attach(&mut self, id: String, detach_key: KeyEvent, detach_label: String) {
        self.selected = Some(id.clone());
        self.zoom = true;
        self.mode = Mode::Focus;
        self.attached = Some(Attached {
            id,
            detach_key,
            detach_label,
            ended: None,
        });
    }

    pub(super) fn is_attached_to(&self, id: &str) -> bool {
        self.attached
            .as_ref()
            .is_some_and(|attached| attached.id == id)
    }

    pub(super) fn handle_focus_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(attached) = &self.attached {
            if key.code == attached.detach_key.code
                && key.modifiers == attached.detach_key.modifiers
            {
                self.quit = true;
            } else {
                self.mode = Mode::Focus;
                return self.keys_to_process(key);
            }
            return Vec::new();
        }
        if key.code == KeyCode::Char('a') && key.modifiers == KeyModifiers::CONTROL {
            return Vec::new();
        }
        self.mode = Mode::Focus;
        self.keys_to_process(key)
    }

    /// A key as the selected process's terminal would send it.
    fn keys_to_process(&self, key: KeyEvent) -> Vec<Effect> {
        let application_cursor = self
            .pane
            .as_ref()
            .is_some_and(|pane| pane.application_cursor);
        match (self.selected.clone(), encode_key(key, application_cursor)) {
            (Some(id), Some(bytes)) => vec![Effect::Write { id, bytes }],
            _ => Vec::new(),
        }
    }

    /// A paste: to the focused process (bracketed, when it asked for that), or typed into a
    /// prompt.
    pub(super) fn handle_paste(&mut self, text: &str) -> Vec<Effect> {
        match &mut self.mode {
            Mode::Focus => {
                let Some(id) = self.selected.clone() else {
                    return Vec::new();
                };
                let bracketed = self.pane.as_ref().is_some_and(|pane| pane.bracketed_paste);
                let mut bytes = Vec::with_capacity(text.len() + 12);
                if bracketed {
                    bytes.extend_from_slice(b"\x1b[200~");
                }
                bytes.extend_from_slice(text.as_bytes());
                if bracketed {
                    bytes.extend_from_slice(b"\x1b[201~");
                }
                vec![Effect::Write { id, bytes }]
            }
            Mode::Prompt(prompt) => {
                prompt.paste(text);
                if prompt.purpose == PromptPurpose::Filter {
                    let typed = prompt.text.clone();
                    self.set_filter(&typed);
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}
