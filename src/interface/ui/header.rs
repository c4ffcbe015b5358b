//! The line above a pane: its entry's state, pid, age and id (the focused pane's label bright,
//! with its scroll and search).
//!
//! The line is made of parts, each weighed by how much it matters. When they do not fit, a long
//! label is cut to a name's length, the least parts go whole (what the tree costs, the pid, the
//! age, the id, the restarts), then a prompt, a project's reason and the label are cut, then
//! the rest go whole; the state and the scroll stay to the last. Whatever is still cut ends
//! with `…`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::core::project::{ProcessPhase, ProjectMark};
use crate::core::{EntryInfo, EntryState};
use crate::interface::app::{Action, App};
use crate::interface::fit;
use crate::time::format_elapsed;

use super::elapsed_ms;
use super::theme::{Theme, state_symbol, title_style};

/// The columns a long label is cut to before any part goes.
const NAME_COLS: usize = 24;
/// The fewest columns the label is cut to before parts that matter more go.
const MIN_LABEL_COLS: usize = 8;
/// The most columns of a prompt quoted in the header.
const MAX_PROMPT_COLS: usize = 40;
/// The fewest columns a quoted prompt (or a project's reason) is cut to before parts that
/// matter more go.
const MIN_PROMPT_COLS: usize = 8;

/// How much a part of the header matters: when the line is full, the least goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Weight {
    /// What its tree costs (cpu, mem).
    Usage,
    Pid,
    Age,
    Id,
    /// How many times a project's process was restarted.
    Restarts,
    /// The entry's name: cut (to [`MIN_LABEL_COLS`]), never dropped.
    Label,
    /// Its log could not be written, or was capped.
    Log,
    /// Not ready yet.
    Starting,
    Search,
    /// Why a project's process waits, is blocked, restarts or gave up: cut (to
    /// [`MIN_PROMPT_COLS`]) before it goes.
    Project,
    /// What it waits for: its prompt is cut (to [`MIN_PROMPT_COLS`]) before it goes.
    Waiting,
    /// How far the pane is scrolled back, and the key back to live.
    Scroll,
    /// Its symbol and its state: never dropped.
    State,
}

/// A part of the header: `lead`, `body` (the part that may be cut, down to `min_body`
/// columns), `tail`, in one style.
#[derive(Clone)]
struct Part {
    lead: String,
    body: String,
    tail: String,
    min_body: usize,
    style: Style,
    weight: Weight,
}

impl Part {
    /// A part that goes whole or not at all.
    fn whole(text: String, style: Style, weight: Weight) -> Self {
        Self {
            lead: text,
            body: String::new(),
            tail: String::new(),
            min_body: 0,
            style,
            weight,
        }
    }

    fn columns(&self) -> usize {
        fit::columns(&self.lead) + fit::columns(&self.body) + fit::columns(&self.tail)
    }

    /// Cuts the body by up to `excess` columns, not below its least.
    fn shrink(&mut self, excess: usize) {
        let body = fit::columns(&self.body);
        let to = body.saturating_sub(excess).max(self.min_body);
        if to < body {
            self.body = fit::cut(&self.body, to);
        }
    }

    fn text(&self) -> String {
        format!("{}{}{}", self.lead, self.body, self.tail)
    }
}

fn total_columns(parts: &[Part]) -> usize {
    parts.iter().map(Part::columns).sum()
}

/// Drops the part weighing least below `below` (not the label): whether there was one.
fn drop_one(parts: &mut Vec<Part>, below: Weight) -> bool {
    let least = (parts.iter().enumerate())
        .filter(|(_, part)| part.weight < below && part.weight != Weight::Label)
        .min_by_key(|(_, part)| part.weight)
        .map(|(at, _)| at);
    match least {
        Some(at) => {
            parts.remove(at);
            true
        }
        None => false,
    }
}

/// `parts` with a prompt, a project's reason, then the label cut, as far as each may be,
/// until they fit in `width`.
fn shrunk(parts: &[Part], width: usize) -> Vec<Part> {
    let mut cut = parts.to_vec();
    for weight in [Weight::Waiting, Weight::Project, Weight::Label] {
        let excess = total_columns(&cut).saturating_sub(width);
        if let Some(part) = cut.iter_mut().find(|part| part.weight == weight) {
            part.shrink(excess);
        }
    }
    cut
}

/// The parts that fit in `width` columns, in their order, as the module says.
fn fit_parts(mut parts: Vec<Part>, width: usize) -> Vec<Part> {
    // A long label (a whole command) is cut to a name's length before anything goes.
    let excess = total_columns(&parts).saturating_sub(width);
    if let Some(label) = parts.iter_mut().find(|part| part.weight == Weight::Label) {
        let min = std::mem::replace(&mut label.min_body, NAME_COLS);
        label.shrink(excess);
        label.min_body = min;
    }
    while total_columns(&parts) > width && drop_one(&mut parts, Weight::Label) {}
    // Cut from whole after each drop: what a dropped part leaves goes back to what was cut.
    let mut fitted = loop {
        let cut = shrunk(&parts, width);
        if total_columns(&cut) <= width || !drop_one(&mut parts, Weight::State) {
            break cut;
        }
    };
    // Only the state and the label are left: the label is cut further for the state.
    let excess = total_columns(&fitted).saturating_sub(width);
    if let Some(label) = fitted.iter_mut().find(|part| part.weight == Weight::Label) {
        label.min_body = 1;
        label.shrink(excess);
    }
    cut_end(fitted, width)
}

/// `parts` cut where the line ends, the cut part ending with `…`.
fn cut_end(parts: Vec<Part>, width: usize) -> Vec<Part> {
    let mut room = width;
    let mut fitted = Vec::with_capacity(parts.len());
    for mut part in parts {
        let columns = part.columns();
        if columns > room {
            if room > 0 {
                part.lead = fit::cut(&part.text(), room);
                part.body.clear();
                part.tail.clear();
                fitted.push(part);
            }
            break;
        }
        room -= columns;
        fitted.push(part);
    }
    fitted
}

pub(super) fn render_header(
    app: &App,
    entry: &EntryInfo,
    now_ms: u64,
    theme: &Theme,
    area: Rect,
    buffer: &mut Buffer,
) {
    let focused = app.selected.as_deref() == Some(entry.id.as_str());
    let state = match (&entry.task_id, entry.state) {
        (Some(task_id), EntryState::Running) => format!("task {task_id}, running"),
        (_, state) => state.to_string(),
    };
    let keys = ProjectKeys {
        restart: app.key_of(Action::Restart),
        up: app.key_of(Action::ProjectUp),
    };
    let label_style = if focused && app.is_split() {
        title_style().add_modifier(ratatui::style::Modifier::REVERSED)
    } else if focused {
        title_style()
    } else {
        theme.dim()
    };
    let mut parts = vec![
        Part::whole(
            format!(" {} ", state_symbol(entry)),
            theme.state(entry),
            Weight::State,
        ),
        Part {
            min_body: MIN_LABEL_COLS,
            ..Part::whole(String::new(), label_style, Weight::Label)
        },
    ];
    parts[1].body = crate::inert::escaped(entry.label()).into_owned();
    // A still screen (a headless script froze the clock) leaves out what differs every run.
    let pid = Some(entry.pid).filter(|_| app.frozen_ms.is_none());
    parts.extend(entry_marks(entry, pid, &state, now_ms, theme));
    if let Some(mark) = &entry.project {
        parts.extend(project_marks(mark, &keys, theme));
    }
    parts.extend(input_marks(entry, theme));
    parts.extend(view_marks(app, focused, theme));
    if let (Some(usage), true) = (app.usage.get(&entry.id), entry.state.is_running()) {
        parts.push(Part::whole(
            format!("  cpu {} · mem {}", usage.cpu_text(), usage.memory_text()),
            theme.dim(),
            Weight::Usage,
        ));
    }
    let spans: Vec<Span<'static>> = fit_parts(parts, usize::from(area.width))
        .into_iter()
        .map(|part| Span::styled(part.text(), part.style))
        .collect();
    Line::from(spans).render(area, buffer);
}

/// What the entry says of its run: its state, pid (unless `None`), age and id.
fn entry_marks(
    entry: &EntryInfo,
    pid: Option<u32>,
    state: &str,
    now_ms: u64,
    theme: &Theme,
) -> Vec<Part> {
    let mut parts = vec![Part::whole(
        format!("  {state}"),
        theme.dim(),
        Weight::State,
    )];
    if entry.pid != 0 {
        parts.extend(pid.map(|pid| Part::whole(format!(" · pid {pid}"), theme.dim(), Weight::Pid)));
        parts.extend([
            Part::whole(
                format!(" · {}", format_elapsed(elapsed_ms(entry, now_ms))),
                theme.dim(),
                Weight::Age,
            ),
            Part::whole(
                format!(" · {}", crate::inert::escaped(&entry.id)),
                theme.dim(),
                Weight::Id,
            ),
        ]);
    }
    parts
}

/// What it waits for, whether it is ready, and what its log lost.
fn input_marks(entry: &EntryInfo, theme: &Theme) -> Vec<Part> {
    let mut parts = Vec::new();
    if let (Some(prompt), true) = (&entry.waiting_for_input, entry.state.is_running()) {
        parts.push(Part {
            lead: "  [waiting for input: ".to_owned(),
            body: fit::cut(&crate::inert::escaped(prompt), MAX_PROMPT_COLS),
            tail: "]".to_owned(),
            min_body: MIN_PROMPT_COLS,
            style: theme.fg(Color::Yellow),
            weight: Weight::Waiting,
        });
    }
    if entry.state.is_running() && entry.ready == Some(false) {
        parts.push(Part::whole(
            "  [starting: not ready yet]".to_owned(),
            theme.fg(Color::Yellow),
            Weight::Starting,
        ));
    }
    if entry.log_error.is_some() {
        parts.push(Part::whole(
            "  [log not written: output kept in memory]".to_owned(),
            theme.fg(Color::Red),
            Weight::Log,
        ));
    } else if let Some(cut) = &entry.log_cut {
        parts.push(Part::whole(
            format!(
                "  [log capped: {} left out]",
                crate::output::byte_size(cut.left_out)
            ),
            theme.fg(Color::Yellow),
            Weight::Log,
        ));
    }
    parts
}

/// The keys a project's process's header names, as bound.
struct ProjectKeys {
    restart: String,
    up: String,
}

/// What a project's process says beyond its run: why it waits or is blocked, its backoff, that
/// it gave up or its file changed, and how many times it was restarted.
fn project_marks(mark: &ProjectMark, keys: &ProjectKeys, theme: &Theme) -> Vec<Part> {
    let mut marks = Vec::new();
    let (text, color) = match &mark.phase {
        Some(ProcessPhase::Waiting { waiting_for }) => (
            format!("waits for {}", waiting_for.join(", ")),
            Color::Yellow,
        ),
        Some(ProcessPhase::Blocked { reason }) => (format!("blocked: {reason}"), Color::Red),
        Some(ProcessPhase::Restarting { backoff_left_ms }) => (
            format!(
                "restarting in {}",
                crate::time::format_wait(*backoff_left_ms)
            ),
            Color::Yellow,
        ),
        Some(ProcessPhase::GaveUp) => (
            format!("gave up: {} starts it again", keys.restart),
            Color::Red,
        ),
        Some(ProcessPhase::Changed { change }) => (
            format!("{change} changed in the file: {} applies it", keys.up),
            Color::Yellow,
        ),
        None => (String::new(), Color::Reset),
    };
    if !text.is_empty() {
        marks.push(Part {
            lead: "  [".to_owned(),
            body: crate::inert::escaped(&text).into_owned(),
            tail: "]".to_owned(),
            min_body: MIN_PROMPT_COLS,
            style: theme.fg(color),
            weight: Weight::Project,
        });
    }
    if mark.restarts > 0 {
        marks.push(Part::whole(
            format!("  ↻{} restarts", mark.restarts),
            theme.dim(),
            Weight::Restarts,
        ));
    }
    marks
}

/// Where the focused pane's view is: scrolled back, searching.
fn view_marks(app: &App, focused: bool, theme: &Theme) -> Vec<Part> {
    let mut right = Vec::new();
    if focused && app.scroll > 0 {
        right.push(Part::whole(
            format!(
                "  [{} lines back · {} for live]",
                app.scroll,
                app.key_of(crate::interface::app::Action::Live)
            ),
            theme.fg(Color::Yellow),
            Weight::Scroll,
        ));
    }
    if let (Some(search), true) = (&app.search, focused) {
        right.push(Part::whole(
            format!("  [search: {}]", search.pattern),
            theme.fg(Color::Yellow),
            Weight::Search,
        ));
    }
    right
}
