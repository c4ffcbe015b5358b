//! Search: a pattern typed at `/` (the prompt), looked for in the selected entry's whole history.
//! The first jump goes from the live end back to the newest match; `n` goes on the same way
//! (older), `N` back (newer), as `?` does in less and vim. Each answer says where the match ranks
//! among all the matching lines, the newest first, for the bar's `match 3/10`; Esc ends it.

use crate::output::{Matcher, SearchHit};

use super::{App, Effect};

/// The search on: what was typed, and its current match once there is one.
#[derive(Clone, Debug)]
pub struct Search {
    /// The pattern as typed.
    pub pattern: String,
    /// The pattern compiled: the pane marks what it matches as the server finds it.
    pub matcher: Matcher,
    /// The current match: its line, its rank (the newest first) and how many lines match.
    pub hit: Option<SearchHit>,
}

impl Search {
    /// The current match's line (0 is the oldest), once there is one.
    #[must_use]
    pub fn current_line(&self) -> Option<u64> {
        self.hit.and_then(|hit| hit.line)
    }

    /// `match 3/10`: the current match's rank (the newest is 1) among the matching lines.
    #[must_use]
    pub fn position(&self) -> Option<String> {
        let hit = self.hit?;
        hit.line?;
        Some(format!("match {}/{}", hit.rank, hit.matches))
    }
}

/// What a search request came to, told in the bar when it found nothing further.
#[must_use]
pub(crate) fn not_found_text(query: &str, hit: SearchHit, newer: bool) -> String {
    if hit.matches == 0 {
        return format!("no match for `{query}`");
    }
    let way = if newer { "after" } else { "before" };
    format!(
        "no more matches for `{query}` {way} this one ({} in all)",
        hit.matches
    )
}

impl App {
    /// Searches for `pattern` (an empty one ends the search), from the live end back.
    pub(super) fn start_search(&mut self, pattern: String) -> Vec<Effect> {
        if pattern.is_empty() {
            self.search = None;
            return Vec::new();
        }
        let matcher = Matcher::new(&pattern);
        if matcher.is_text() {
            self.say(
                format!("`{pattern}` is not a regular expression: searched as text"),
                false,
            );
        }
        self.search = Some(Search {
            pattern,
            matcher,
            hit: None,
        });
        self.scroll = 0;
        self.search_effect(/*newer*/ false)
    }

    /// The search for the nearest match after the current one (`newer`) or before it; without
    /// one in view, from the rows in view.
    pub(super) fn search_effect(&self, newer: bool) -> Vec<Effect> {
        match (&self.search, &self.selected, self.pane_size()) {
            (Some(search), Some(id), Some(size)) => vec![Effect::Search {
                id: id.clone(),
                query: search.pattern.clone(),
                newer,
                scroll: self.scroll,
                rows: size.rows,
                current: search.current_line(),
            }],
            _ => Vec::new(),
        }
    }

    /// A search for `query` found its match: it becomes the current one, scrolled to.
    pub(super) fn found(&mut self, query: &str, scroll: usize, hit: SearchHit) {
        if let Some(search) = self
            .search
            .as_mut()
            .filter(|search| search.pattern == query)
        {
            search.hit = Some(hit);
            self.scroll = scroll;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_says_where_the_match_ranks_and_why_none_was_found() {
        let mut search = Search {
            pattern: "err".into(),
            matcher: Matcher::new("err"),
            hit: None,
        };
        assert_eq!(search.position(), None);
        search.hit = Some(SearchHit {
            line: Some(40),
            rank: 3,
            matches: 10,
        });
        assert_eq!(search.position().as_deref(), Some("match 3/10"));
        assert_eq!(search.current_line(), Some(40));
        let none = SearchHit::default();
        assert_eq!(not_found_text("err", none, false), "no match for `err`");
        let further = SearchHit {
            line: None,
            rank: 0,
            matches: 10,
        };
        assert_eq!(
            not_found_text("err", further, false),
            "no more matches for `err` before this one (10 in all)"
        );
        assert_eq!(
            not_found_text("err", further, true),
            "no more matches for `err` after this one (10 in all)"
        );
    }
}
