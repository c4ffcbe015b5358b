//! Where things go on the screen, and which list line each row shows: computed from the state
//! alone, so that drawing and mouse clicks agree.

use crate::core::{EntryInfo, EntryKind, EntryState};
use crate::pty::TermSize;

use super::App;

/// The smallest terminal the layout works in.
pub const MIN_COLS: u16 = 40;
/// The fewest rows the layout works in.
pub const MIN_ROWS: u16 = 8;

/// Where things go on the screen, computed from its size alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The list of entries, on the left (no width when zoomed).
    pub list: ratatui::layout::Rect,
    /// One row above the pane: its entry's state, pid, age and id.
    pub header: ratatui::layout::Rect,
    /// The selected entry's screen.
    pub pane: ratatui::layout::Rect,
    /// The bottom row: notices, prompts and questions.
    pub bar: ratatui::layout::Rect,
}

impl Layout {
    /// The layout for a terminal of `cols` x `rows` (the list `list_width` wide, if set), or
    /// `None` when it is too small.
    #[must_use]
    pub fn new(cols: u16, rows: u16, zoom: bool, list_width: Option<u16>) -> Option<Self> {
        use ratatui::layout::Rect;
        if cols < MIN_COLS || rows < MIN_ROWS {
            return None;
        }
        // The settings' width, leaving the pane at least half the terminal.
        let list_cols = match (zoom, list_width) {
            (true, _) => 0,
            (false, Some(width)) => width.min(cols / 2),
            (false, None) => (cols / 4).clamp(24, 40),
        };
        // The list has a one-column rule on its right.
        let pane_x = if zoom { 0 } else { list_cols + 1 };
        let body_rows = rows - 1;
        Some(Self {
            list: Rect::new(0, 0, list_cols, body_rows),
            header: Rect::new(pane_x, 0, cols - pane_x, 1),
            pane: Rect::new(pane_x, 1, cols - pane_x, body_rows - 1),
            bar: Rect::new(0, rows - 1, cols, 1),
        })
    }

    /// The size of the PTYs: the pane's.
    #[must_use]
    pub(crate) fn pane_size(&self) -> TermSize {
        TermSize::new(self.pane.width, self.pane.height)
    }
}

/// The section of the list an entry is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    /// A project's processes, under its name, in its file's order.
    Project,
    /// Running calls: someone waits for them.
    Running,
    /// Running tasks, and what a dead server left running.
    Tasks,
    /// Ended calls and tasks.
    Finished,
}

impl Section {
    /// The section `entry` is listed in.
    #[must_use]
    pub fn of(entry: &EntryInfo) -> Self {
        if entry.project.is_some() {
            return Self::Project;
        }
        match (entry.state, entry.kind) {
            (EntryState::Running, EntryKind::Call) => Self::Running,
            (EntryState::Running, EntryKind::Task) | (EntryState::Orphaned { .. }, _) => {
                Self::Tasks
            }
            _ => Self::Finished,
        }
    }

    /// Its title in the list.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::Project => "Project",
            Self::Running => "Running",
            Self::Tasks => "Tasks",
            Self::Finished => "Finished",
        }
    }
}

/// One line of the list: a section's title or an entry (by index in `app.entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListLine {
    /// The filter the list is narrowed by, on top.
    Filter,
    /// A machine's heading, when there are far hosts: this one (`None`), or a far host's (its
    /// index in `app.hosts`).
    Host(Option<usize>),
    /// Why a far host is not reached (its index in `app.hosts`), under its heading: a row of
    /// [`host_down_rows`].
    HostDown(usize, usize),
    /// A section's title.
    Title(Section),
    /// A project's name, over its processes: the index of its first in `app.entries`.
    Heading(usize),
    /// An entry, by its index in `app.entries`.
    Entry(usize),
}

/// The list's lines in order: the filter when there is one, then the entries it lets through,
/// a section's title before its first entry; with far hosts, each machine's under its heading
/// (a host's even when none of its entries is listed).
#[must_use]
pub fn list_lines(app: &App) -> Vec<ListLine> {
    let mut lines = Vec::with_capacity(app.entries.len() + 4 + 2 * app.hosts.len());
    if app.filter.is_some() {
        lines.push(ListLine::Filter);
    }
    let mut listed = app.listed().into_iter().peekable();
    let machines = if app.hosts.is_empty() {
        1
    } else {
        app.hosts.len() + 1
    };
    for rank in 0..machines {
        if !app.hosts.is_empty() {
            let far = rank.checked_sub(1);
            lines.push(ListLine::Host(far));
            if let Some(far) = far {
                let rows = host_down_rows(app, far).len();
                lines.extend((0..rows).map(|row| ListLine::HostDown(far, row)));
            }
        }
        let mut section = None;
        let mut project = None;
        while let Some(index) = listed.next_if(|&index| {
            // Entries of a host no longer listed come last, under the last machine.
            let entry_rank = app.host_rank(&app.entries[index]);
            entry_rank == rank || (rank + 1 == machines && entry_rank > rank)
        }) {
            let entry = &app.entries[index];
            let this = Section::of(entry);
            let this_project = entry.project.as_ref().map(|mark| &mark.project);
            if this == Section::Project {
                if project != this_project {
                    lines.push(ListLine::Heading(index));
                    project = this_project;
                }
            } else if section != Some(this) {
                lines.push(ListLine::Title(this));
            }
            section = Some(this);
            lines.push(ListLine::Entry(index));
        }
    }
    lines
}

/// Why far host `far` is not reached and when it is tried again, in rows of the list's width
/// (at most three); none while it is reached.
#[must_use]
pub(crate) fn host_down_rows(app: &App, far: usize) -> Vec<String> {
    /// The most rows the words of one host's failure take.
    const MAX_ROWS: usize = 3;
    let Some(crate::interface::fleet::HostState::Down {
        error, again_secs, ..
    }) = app.hosts.get(far).map(|host| &host.state)
    else {
        return Vec::new();
    };
    let text = format!(
        "{} · retried after {again_secs} s",
        crate::inert::escaped(error)
    );
    // Under the heading, two columns in.
    let width = app
        .layout()
        .map_or(usize::MAX, |layout| usize::from(layout.list.width))
        .saturating_sub(2)
        .max(1);
    crate::interface::fit::wrap(&text, width, MAX_ROWS)
}

/// The first list line shown, so that the selected entry is in view.
#[must_use]
pub fn list_offset(app: &App, lines: &[ListLine], height: usize) -> usize {
    let selected = app
        .selected
        .as_deref()
        .and_then(|id| app.entries.iter().position(|entry| entry.id == id))
        .and_then(|index| {
            lines
                .iter()
                .position(|line| *line == ListLine::Entry(index))
        })
        .unwrap_or(0);
    (selected + 1).saturating_sub(height)
}

/// The entry shown on screen row `row` of the list, if any.
#[must_use]
pub fn list_row_entry(app: &App, layout: Layout, row: u16) -> Option<usize> {
    let lines = list_lines(app);
    let offset = list_offset(app, &lines, usize::from(layout.list.height));
    let index = usize::from(row.checked_sub(layout.list.y)?) + offset;
    match lines.get(index)? {
        ListLine::Entry(entry) => Some(*entry),
        _ => None,
    }
}
