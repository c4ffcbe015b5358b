//! Several panes at once: `s` shows the next call in a pane of its own (up to
//! [`MAX_PANES`]), `Tab` moves the focus, `S` closes the focused pane. The focused pane is the
//! one showing the selected entry: the list, scrolling, search, copy and typing act on it; the
//! others show their entries live. Each pane's PTY has that pane's size.

use ratatui::layout::Rect;

use crate::pty::TermSize;

use super::{Action, App, Layout};

/// Panes shown at most.
pub(crate) const MAX_PANES: usize = 4;
/// Two panes go side by side only when each gets this many columns; else they are stacked.
const SIDE_BY_SIDE_COLS: u16 = 60;
/// The smallest pane a split makes: rows of output (under its header line), and columns.
const MIN_PANE_ROWS: u16 = 3;
const MIN_PANE_COLS: u16 = 20;

/// One pane of a split view: whose it is, its header line and its screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PaneArea {
    pub id: String,
    pub header: Rect,
    pub pane: Rect,
}

/// The header and screen of `count` panes within `area` (right of the list, above the bar):
/// two columns when both are wide enough, rows of them top to bottom; a last pane alone in its
/// row takes the row. `None` when they would be too small.
#[must_use]
pub(crate) fn split_areas(area: Rect, count: usize) -> Option<Vec<(Rect, Rect)>> {
    let count_u16 = u16::try_from(count).ok().filter(|count| *count > 0)?;
    let columns: u16 = if count > 1 && area.width > 2 * SIDE_BY_SIDE_COLS {
        2
    } else {
        1
    };
    let rows = count_u16.div_ceil(columns);
    let row_height = area.height / rows;
    if row_height < MIN_PANE_ROWS + 1 {
        return None;
    }
    let mut areas = Vec::with_capacity(count);
    for row in 0..rows {
        let y = area.y + row * row_height;
        let height = if row + 1 == rows {
            area.height - row * row_height
        } else {
            row_height
        };
        let in_row = columns.min(count_u16 - row * columns);
        // One column between panes side by side, for a rule.
        let width = (area.width - (in_row - 1)) / in_row;
        if width < MIN_PANE_COLS {
            return None;
        }
        for column in 0..in_row {
            let x = area.x + column * (width + 1);
            let width = if column + 1 == in_row {
                area.x + area.width - x
            } else {
                width
            };
            areas.push((
                Rect::new(x, y, width, 1),
                Rect::new(x, y + 1, width, height - 1),
            ));
        }
    }
    Some(areas)
}

impl App {
    /// Whether the view is split (and not zoomed to one pane).
    #[must_use]
    pub(crate) fn is_split(&self) -> bool {
        self.split.len() > 1 && !self.zoom
    }

    /// Every pane of the split view, the focused one included; empty when not split.
    #[must_use]
    pub(crate) fn pane_areas(&self) -> Vec<PaneArea> {
        let Some(single) = self.single_layout().filter(|_| self.is_split()) else {
            return Vec::new();
        };
        split_areas(body(single), self.split.len())
            .unwrap_or_default()
            .into_iter()
            .zip(&self.split)
            .map(|((header, pane), id)| PaneArea {
                id: id.clone(),
                header,
                pane,
            })
            .collect()
    }

    /// The layout with the focused pane where the split puts it.
    pub(super) fn focused_layout(&self, single: Layout) -> Layout {
        let focused = self
            .pane_areas()
            .into_iter()
            .find(|area| self.selected.as_deref() == Some(area.id.as_str()));
        match focused {
            Some(area) => Layout {
                header: area.header,
                pane: area.pane,
                ..single
            },
            None => single,
        }
    }

    /// The size `id`'s PTY should have: its pane's when it is shown in a split, else the
    /// single pane's.
    #[must_use]
    pub(crate) fn size_for(&self, id: &str) -> Option<TermSize> {
        let single = self.single_layout()?;
        Some(
            self.pane_areas()
                .into_iter()
                .find(|area| area.id == id)
                .map_or_else(
                    || single.pane_size(),
                    |area| TermSize::new(area.pane.width, area.pane.height),
                ),
        )
    }

    /// The other panes to fetch: their ids and sizes, when stale.
    pub(crate) fn split_requests(&mut self) -> Vec<(String, TermSize)> {
        if !std::mem::take(&mut self.due.split) {
            return Vec::new();
        }
        let selected = self.selected.clone();
        let areas = self.pane_areas();
        self.split_panes
            .retain(|id, _| areas.iter().any(|area| &area.id == id));
        areas
            .into_iter()
            .filter(|area| Some(&area.id) != selected.as_ref())
            .map(|area| (area.id, TermSize::new(area.pane.width, area.pane.height)))
            .collect()
    }

    /// A pane of the split view was fetched.
    pub(crate) fn set_split_pane(&mut self, id: String, pane: crate::screen::ScreenSnapshot) {
        self.split_panes.insert(id, pane);
    }

    /// `s`: the next entry in the list not shown yet gets a pane of its own, and the focus.
    pub(super) fn split(&mut self) {
        let Some(selected) = self.selected.clone() else {
            let new = self.key_of(Action::NewCall);
            return self.say(format!("nothing to show: {new} starts a call"), true);
        };
        let mut split = if self.is_split() {
            self.split.clone()
        } else {
            vec![selected.clone()]
        };
        if split.len() >= MAX_PANES {
            let close = self.key_of(Action::ClosePane);
            return self.say(
                format!("four panes at most: {close} closes the focused one"),
                true,
            );
        }
        let at = self
            .entries
            .iter()
            .position(|entry| entry.id == selected)
            .unwrap_or(0);
        let count = self.entries.len();
        let next = (1..count)
            .map(|step| &self.entries[(at + step) % count])
            .find(|entry| !split.contains(&entry.id))
            .map(|entry| entry.id.clone());
        let Some(next) = next else {
            let new = self.key_of(Action::NewCall);
            return self.say(
                format!("every call is shown already: {new} starts another"),
                true,
            );
        };
        let fits = self
            .single_layout()
            .and_then(|single| split_areas(body(single), split.len() + 1))
            .is_some();
        if !fits {
            let zoom = self.key_of(Action::Zoom);
            return self.say(
                format!("no room for another pane: a larger terminal, or {zoom}"),
                true,
            );
        }
        split.push(next.clone());
        self.split = split;
        self.zoom = false;
        self.focus(next);
    }

    /// `Tab`: the focus goes to the next pane.
    pub(super) fn next_pane(&mut self) {
        if !self.is_split() {
            let split = self.key_of(Action::Split);
            return self.say(
                format!("one pane: {split} shows the next call beside it"),
                true,
            );
        }
        let at = self.focused_pane().unwrap_or(0);
        let next = self.split[(at + 1) % self.split.len()].clone();
        self.focus(next);
    }

    /// `S`: the focused pane closes; the one before it takes the focus.
    pub(super) fn close_pane(&mut self) {
        let Some(at) = self.focused_pane().filter(|_| self.is_split()) else {
            return self.say("one pane: nothing to close", true);
        };
        self.split.remove(at);
        let next = self.split[at.saturating_sub(1).min(self.split.len() - 1)].clone();
        if self.split.len() < 2 {
            self.split.clear();
        }
        self.due.resizes = true;
        self.focus(next);
    }

    fn focused_pane(&self) -> Option<usize> {
        let selected = self.selected.as_deref()?;
        self.split.iter().position(|id| id == selected)
    }

    /// Selects `id` as shown in its pane: what was scrolled or selected in the last goes.
    fn focus(&mut self, id: String) {
        self.selected = Some(id);
        self.scroll = 0;
        self.selection = None;
        self.due.resizes = true;
        self.due.split = true;
        self.due.pane = true;
    }

    /// Selects `id`: in a split view, the focused pane shows it instead, or the focus goes to
    /// the pane that shows it already.
    pub(super) fn select_id(&mut self, id: String) {
        if self.selected.as_deref() == Some(id.as_str()) {
            return;
        }
        // The current match was one of the entry left.
        if let Some(search) = &mut self.search {
            search.hit = None;
        }
        if self.is_split() && !self.split.contains(&id) {
            if let Some(at) = self.focused_pane() {
                self.split[at].clone_from(&id);
            }
        }
        if self.is_split() {
            self.focus(id);
        } else {
            self.selected = Some(id);
            self.scroll = 0;
        }
    }

    /// Entries that went are no longer shown; the split ends below two panes.
    pub(super) fn keep_split_to_entries(&mut self) {
        let before = self.split.len();
        let entries = &self.entries;
        self.split
            .retain(|id| entries.iter().any(|entry| &entry.id == id));
        if self.split.len() < 2 {
            self.split.clear();
        }
        if self.split.len() != before {
            self.due.resizes = true;
            self.due.split = true;
            if self.focused_pane().is_none() {
                self.selected = self.split.first().cloned().or(self.selected.take());
            }
        }
    }

    /// Resizes owed since the panes changed.
    pub(crate) fn take_resizes(&mut self) -> Vec<super::Effect> {
        if std::mem::take(&mut self.due.resizes) {
            self.resize_all()
        } else {
            Vec::new()
        }
    }
}

/// The space the panes share: right of the list, above the bar.
fn body(single: Layout) -> Rect {
    Rect::new(
        single.header.x,
        single.header.y,
        single.header.width,
        single.header.height + single.pane.height,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::app::{Action, Effect, Input};

    fn sizes(effects: &[Effect]) -> Vec<(&str, u16, u16)> {
        effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Resize { id, size } => Some((id.as_str(), size.cols, size.rows)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn s_adds_the_next_call_the_list_fills_the_focused_pane_and_shift_s_closes_it() {
        // 100x20: the panes share 74 columns and 19 rows right of the list, stacked.
        let mut app = super::super::tests::test_app();
        app.act(Action::Split);
        assert_eq!(
            (app.split.as_slice(), app.selected.as_deref()),
            (&["c1".to_owned(), "c2".to_owned()][..], Some("c2"))
        );
        assert_eq!(
            sizes(&app.take_resizes()),
            [("c1", 74, 8), ("c2", 74, 9), ("c3", 74, 18)]
        );
        assert!(app.take_resizes().is_empty(), "told once");
        assert_eq!(app.layout().unwrap().pane, Rect::new(26, 10, 74, 9));
        // The list shows another entry in the focused pane…
        app.act(Action::SelectNext);
        assert_eq!(app.split, ["c1", "c3"]);
        assert_eq!(
            sizes(&app.take_resizes()),
            [("c1", 74, 8), ("c2", 74, 18), ("c3", 74, 9)]
        );
        // …or, shown in another pane already, moves the focus there.
        app.act(Action::SelectFirst);
        assert_eq!((app.split.len(), app.selected.as_deref()), (2, Some("c1")));
        app.act(Action::NextPane);
        assert_eq!(app.selected.as_deref(), Some("c3"));
        app.act(Action::Split);
        assert_eq!(app.split, ["c1", "c3", "c2"]);
        app.act(Action::Split);
        assert!(
            app.notice
                .as_ref()
                .is_some_and(|notice| notice.text.contains("every call is shown"))
        );
        assert_eq!(app.split.len(), 3);
        app.act(Action::ClosePane);
        assert_eq!(
            (app.split.as_slice(), app.selected.as_deref()),
            (&["c1".to_owned(), "c3".to_owned()][..], Some("c3"))
        );
        app.act(Action::ClosePane);
        assert!(!app.is_split());
        assert_eq!(app.selected.as_deref(), Some("c1"));
        assert_eq!(
            sizes(&app.take_resizes()),
            [("c1", 74, 18), ("c2", 74, 18), ("c3", 74, 18)]
        );
    }

    #[test]
    fn refusals_name_the_keys_as_bound() {
        let mut app = super::super::tests::test_app();
        for binding in &mut app.settings.keymap {
            if binding.action == Action::Split {
                binding.label = "Ctrl-S".into();
            }
        }
        app.act(Action::NextPane);
        let said = app.notice.as_ref().map(|notice| notice.text.as_str());
        assert_eq!(said, Some("one pane: Ctrl-S shows the next call beside it"));
    }

    #[test]
    fn four_panes_at_most_and_a_click_focuses_a_pane() {
        let mut app = super::super::tests::test_app();
        let mut more = app.entries[0].clone();
        for id in ["c4", "c5"] {
            more.id = id.to_owned();
            app.entries.push(more.clone());
        }
        for _ in 0..3 {
            app.act(Action::Split);
        }
        assert_eq!(app.split, ["c1", "c2", "c3", "c4"]);
        app.act(Action::Split);
        assert!(
            app.notice
                .as_ref()
                .is_some_and(|notice| notice.text.contains("four panes at most"))
        );
        let first = app.pane_areas()[0].pane;
        app.handle_input(Input::Mouse(crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
            column: first.x + 3,
            row: first.y + 1,
            modifiers: crossterm::event::KeyModifiers::NONE,
        }));
        assert_eq!(app.selected.as_deref(), Some("c1"));
        // Zoomed, the focused pane is the whole view; back, the split is as it was.
        app.act(Action::Zoom);
        assert!(app.pane_areas().is_empty());
        app.act(Action::Zoom);
        assert_eq!(app.pane_areas().len(), 4);
    }

    #[test]
    fn panes_go_side_by_side_when_wide_and_stacked_when_narrow() {
        let wide = Rect::new(31, 0, 169, 49);
        let two = split_areas(wide, 2).unwrap();
        assert_eq!(two[0], (Rect::new(31, 0, 84, 1), Rect::new(31, 1, 84, 48)));
        assert_eq!(
            two[1],
            (Rect::new(116, 0, 84, 1), Rect::new(116, 1, 84, 48))
        );
        let three = split_areas(wide, 3).unwrap();
        assert_eq!(
            three[2],
            (Rect::new(31, 24, 169, 1), Rect::new(31, 25, 169, 24))
        );
        let four = split_areas(wide, 4).unwrap();
        assert_eq!(four[3].1, Rect::new(116, 25, 84, 24));
        let narrow = Rect::new(25, 0, 75, 23);
        let stacked = split_areas(narrow, 2).unwrap();
        assert_eq!(
            stacked,
            [
                (Rect::new(25, 0, 75, 1), Rect::new(25, 1, 75, 10)),
                (Rect::new(25, 11, 75, 1), Rect::new(25, 12, 75, 11)),
            ]
        );
        assert!(split_areas(narrow, 4).is_some());
        assert_eq!(split_areas(Rect::new(25, 0, 75, 15), 4), None, "too low");
        assert_eq!(split_areas(narrow, 0), None);
    }
}
