//! Search: a pattern typed at `/` (the prompt), looked for in the selected entry's history from
//! the rows in view, newer (`n`) or older (`N`); Esc ends it.

use super::{App, Effect};

impl App {
    /// Searches for `pattern` (an empty one ends the search), from the live end back.
    pub(super) fn start_search(&mut self, pattern: String) -> Vec<Effect> {
        self.search = (!pattern.is_empty()).then_some(pattern);
        self.scroll = 0;
        self.search_effect(false)
    }

    /// The search for the nearest match below the rows in view (`newer`) or above them.
    pub(super) fn search_effect(&self, newer: bool) -> Vec<Effect> {
        match (&self.search, &self.selected, self.pane_size()) {
            (Some(query), Some(id), Some(size)) => vec![Effect::Search {
                id: id.clone(),
                query: query.clone(),
                newer,
                scroll: self.scroll,
                rows: size.rows,
            }],
            _ => Vec::new(),
        }
    }
}
