//! The list's filter: text typed at `f` narrows the list, as it is typed, to the entries whose
//! name, command or description holds it (smart case: exact only when it has a capital letter).
//! Enter keeps it, Esc clears it; the selection moves to a listed entry when it is hidden, so
//! what the pane shows is always in the list.

use crate::core::EntryInfo;

use super::{App, Mode};

/// Whether `entry` holds `filter` in its name, task id, description or command (smart case).
#[must_use]
pub(crate) fn entry_matches(entry: &EntryInfo, filter: &str) -> bool {
    let exact = filter.chars().any(char::is_uppercase);
    let lowered = filter.to_lowercase();
    let holds = |text: &str| {
        if exact {
            text.contains(filter)
        } else {
            text.to_lowercase().contains(&lowered)
        }
    };
    [
        entry.name.as_deref(),
        entry.task_id.as_deref(),
        entry.title.as_deref(),
        Some(entry.command.as_str()),
    ]
    .into_iter()
    .flatten()
    .any(holds)
}

impl App {
    /// Whether the list shows `entry` (every entry, without a filter).
    #[must_use]
    pub(crate) fn is_listed(&self, entry: &EntryInfo) -> bool {
        self.filter
            .as_deref()
            .is_none_or(|filter| entry_matches(entry, filter))
    }

    /// The indices in `entries` of those the list shows, in order.
    #[must_use]
    pub(crate) fn listed(&self) -> Vec<usize> {
        (0..self.entries.len())
            .filter(|&index| self.is_listed(&self.entries[index]))
            .collect()
    }

    /// Narrows the list to entries that hold `text` (none: every entry).
    pub(super) fn set_filter(&mut self, text: &str) {
        self.filter = (!text.is_empty()).then(|| text.to_owned());
        self.keep_selection_listed();
    }

    /// A hidden selection moves to the first entry listed; with none listed, nothing is
    /// selected.
    pub(super) fn keep_selection_listed(&mut self) {
        if self
            .selected_entry()
            .is_some_and(|entry| self.is_listed(entry))
        {
            return;
        }
        // Keys typed into a process never go on to another one: one that left the list (its
        // host's link dropped) takes the keys back.
        if self.mode == Mode::Focus && self.attached.is_none() {
            self.mode = Mode::Normal;
            self.say(
                "the process you typed into left the list: keys are oino's again",
                true,
            );
        }
        let first = self
            .listed()
            .first()
            .map(|&index| self.entries[index].id.clone());
        if let Some(id) = first {
            self.select_id(id);
        } else {
            self.selected = None;
            self.scroll = 0;
        }
        self.due.pane = true;
    }

    /// Moves the selection `step` entries along the list (clamped to its ends).
    pub(super) fn select_step(&mut self, step: isize) {
        let listed = self.listed();
        let Some(last) = listed.len().checked_sub(1) else {
            return;
        };
        let at = self
            .selected_index()
            .and_then(|index| listed.iter().position(|&listed| listed == index));
        let next = match at {
            Some(at) => at.saturating_add_signed(step).min(last),
            None => 0,
        };
        self.select_index(listed[next]);
    }

    /// Selects the first entry listed, or the last.
    pub(super) fn select_end(&mut self, last: bool) {
        let listed = self.listed();
        let end = if last { listed.last() } else { listed.first() };
        if let Some(&index) = end {
            self.select_index(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::EntryState;

    fn entry(id: &str, command: &str, name: Option<&str>, title: Option<&str>) -> EntryInfo {
        EntryInfo {
            name: name.map(str::to_owned),
            title: title.map(str::to_owned),
            state: EntryState::Running,
            ..crate::interface::app::tests::entry(id, command)
        }
    }

    #[test]
    fn the_filter_looks_at_name_command_and_description_in_smart_case() {
        let web = entry("c1", "npm run dev", Some("web"), None);
        let tests = entry("c2", "cargo test", None, Some("Unit tests"));
        assert!(!entry_matches(&web, "WEB"));
        assert!(entry_matches(&web, "we"));
        assert!(entry_matches(&web, "npm"));
        assert!(entry_matches(&tests, "unit"));
        assert!(entry_matches(&tests, "Unit"));
        assert!(!entry_matches(&tests, "UNIT"));
        assert!(entry_matches(&tests, "cargo t"));
        assert!(!entry_matches(&tests, "web"));
    }

    #[test]
    fn the_selection_stays_on_a_listed_entry() {
        let mut app = App::new((80, 12), true);
        app.set_entries(vec![
            entry("c1", "npm run dev", Some("web"), None),
            entry("c2", "cargo test", None, None),
            entry("c3", "cargo build", None, None),
        ]);
        let selected = |app: &App| app.selected.clone().unwrap_or_default();
        assert_eq!(selected(&app), "c1");
        app.set_filter("cargo");
        assert_eq!(app.listed(), [1, 2]);
        assert_eq!(selected(&app), "c2");
        app.select_step(1);
        assert_eq!(selected(&app), "c3");
        app.select_step(1);
        assert_eq!(selected(&app), "c3");
        app.select_end(/*last*/ false);
        assert_eq!(selected(&app), "c2");
        // Nothing listed: nothing selected, until the filter goes.
        app.set_filter("nothing like it");
        assert_eq!(app.selected, None);
        app.set_filter("");
        assert_eq!(selected(&app), "c1");
        assert_eq!(app.listed(), [0, 1, 2]);
    }
}
