//! Every action a key can do, in one table: its name in the settings file, its line in the help,
//! its default keys (with how the hints show them, and its word in the bar) and what it does. A
//! new action is a line here and its handler below.

use crossterm::event::{KeyCode, KeyModifiers};

use super::{App, Binding, Confirm, Effect, Help, Mode, Prompt, PromptPurpose, parse_key};

/// The table: `Variant "name" [default keys] "label" hint, "what it does", handler;`.
macro_rules! actions {
    ($($action:ident $name:literal [$($key:literal)*] $label:literal $hint:expr,
        $doc:literal, $handler:path;)*) => {
        /// What a key can do.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Action {
            $(#[doc = $doc] $action,)*
        }

        impl Action {
            /// Every action, in the help's order.
            pub(crate) const ALL: &[Self] = &[$(Self::$action),*];

            /// The name the settings file binds keys to.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$action => $name,)*
                }
            }

            /// What the action does, for the help.
            #[must_use]
            pub(crate) fn describe(self) -> &'static str {
                match self {
                    $(Self::$action => $doc,)*
                }
            }

            /// Does it.
            pub(super) fn run(self, app: &mut App) -> Vec<Effect> {
                match self {
                    $(Self::$action => $handler(app),)*
                }
            }
        }

        /// The default keys.
        #[must_use]
        pub(crate) fn default_keymap() -> Vec<Binding> {
            vec![$(Binding {
                keys: default_keys(&[$($key),*]),
                label: $label.to_owned(),
                hint: $hint,
                action: Action::$action,
            },)*]
        }
    };
}

actions! {
    SelectNext "select-next" ["j" "down"] "j ↓" None,
        "select the next call or task", select_next;
    SelectPrevious "select-previous" ["k" "up"] "k ↑" None,
        "select the previous call or task", select_previous;
    SelectFirst "select-first" ["g" "home"] "g" None,
        "select the first", select_first;
    SelectLast "select-last" ["G"] "G" None,
        "select the last", select_last;
    Detach "detach" ["d"] "d" Some("detach"),
        "detach the selected call into a named background task", detach;
    DetachNow "detach-now" ["ctrl-b"] "Ctrl-B" None,
        "detach at once, named after its description or command", detach_now;
    NewCall "new" ["n"] "n" Some("new"),
        "start a new call", new_call;
    Restart "restart" ["r"] "r" Some("restart"),
        "run the selected command again (asks first while it runs)", restart;
    Kill "kill" ["x"] "x" Some("kill"),
        "kill the selected call or task (asks first)", kill;
    Focus "type" ["enter" "i"] "Enter i" Some("type"),
        "type into the selected process (Ctrl-A to come back)", focus;
    PageUp "page-up" ["pgup"] "PgUp" None,
        "scroll back through the output", page_up;
    PageDown "page-down" ["pgdn"] "PgDn" None,
        "scroll forward", page_down;
    Live "live" ["end"] "End" None,
        "back to the live output", live;
    Search "search" ["/"] "/" Some("search"),
        "search all the output: a regular expression, smart case", search;
    NextMatch "next-match" ["n"] "n" None,
        "next match, further back (while searching)", next_match;
    PreviousMatch "previous-match" ["N"] "N" None,
        "previous match, forward (while searching)", previous_match;
    ProjectDown "project-down" ["D"] "D" None,
        "stop the selected project's processes (asks first)", project_down;
    ProjectUp "project-up" ["U"] "U" None,
        "start the selected project, or apply its changed file", project_up;
    Filter "filter" ["f"] "f" None,
        "filter the list by name or command (Esc clears it)", filter;
    Zoom "zoom" ["z"] "z" Some("zoom"),
        "zoom the pane to the whole screen and back", zoom;
    Split "split" ["s"] "s" None,
        "show the next call in a pane beside (up to four)", split;
    NextPane "next-pane" ["tab"] "Tab" None,
        "move the focus to the next pane", next_pane;
    ClosePane "close-pane" ["S"] "S" None,
        "close the focused pane", close_pane;
    Copy "copy" ["v"] "v" None,
        "select text in the pane to copy (y copies; a drag too)", copy;
    Help "help" ["?"] "?" Some("help"),
        "this help", help;
    Quit "quit" ["q"] "q" Some("quit"),
        "quit (asks first only when quitting ends processes)", quit;
}

impl Action {
    /// The names the settings file binds keys to, in the help's order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|action| action.name())
    }

    /// The action a settings file names.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|action| action.name() == name)
    }
}

/// The keys of a default binding: a capital letter with Shift and without (terminals differ).
fn default_keys(names: &[&str]) -> Vec<(KeyCode, KeyModifiers)> {
    names
        .iter()
        .flat_map(|name| {
            let key = parse_key(name).unwrap_or_else(|err| panic!("a default key: {err}"));
            let capital = matches!(key.code, KeyCode::Char(c) if c.is_uppercase());
            let plain = capital.then_some((key.code, KeyModifiers::NONE));
            plain
                .into_iter()
                .chain(std::iter::once((key.code, key.modifiers)))
        })
        .collect()
}

fn select_next(app: &mut App) -> Vec<Effect> {
    app.select_step(1);
    Vec::new()
}

fn select_previous(app: &mut App) -> Vec<Effect> {
    app.select_step(-1);
    Vec::new()
}

fn select_first(app: &mut App) -> Vec<Effect> {
    app.select_end(/*last*/ false);
    Vec::new()
}

fn select_last(app: &mut App) -> Vec<Effect> {
    app.select_end(/*last*/ true);
    Vec::new()
}

fn detach(app: &mut App) -> Vec<Effect> {
    app.detach(false)
}

fn detach_now(app: &mut App) -> Vec<Effect> {
    app.detach(true)
}

fn prompt(app: &mut App, purpose: PromptPurpose) -> Vec<Effect> {
    app.mode = Mode::Prompt(Prompt {
        purpose,
        text: String::new(),
        proposal: false,
    });
    Vec::new()
}

fn new_call(app: &mut App) -> Vec<Effect> {
    // On the selected entry's machine, as every other key acts.
    let host = app.selected_host().map(str::to_owned);
    prompt(app, PromptPurpose::NewCommand { host })
}

fn kill(app: &mut App) -> Vec<Effect> {
    match app.selected_entry() {
        Some(entry) if entry.state.is_running() => {
            app.mode = Mode::Confirm(Confirm::Kill {
                id: entry.id.clone(),
                label: entry.label().to_owned(),
            });
        }
        Some(_) => app.say("it has already ended", true),
        None => app.say("nothing to kill", true),
    }
    Vec::new()
}

fn restart(app: &mut App) -> Vec<Effect> {
    match app.selected_entry() {
        Some(entry) if entry.state.is_running() => {
            app.mode = Mode::Confirm(Confirm::Restart {
                id: entry.id.clone(),
                label: entry.label().to_owned(),
            });
        }
        Some(entry) => return vec![app.restart(entry.id.clone())],
        None => app.say("nothing to restart", true),
    }
    Vec::new()
}

/// Says why a far host's project is not stopped or applied from here; whether it did.
fn refuse_far_project(app: &mut App) -> bool {
    let Some(host) = app.selected_host().map(str::to_owned) else {
        return false;
    };
    app.say(
        format!(
            "a project on {} is run from its file there: `oino up` or `oino down` in its folder \
             on that machine",
            crate::inert::escaped(&host)
        ),
        true,
    );
    true
}

fn project_down(app: &mut App) -> Vec<Effect> {
    if refuse_far_project(app) {
        return Vec::new();
    }
    match app.selected_entry().and_then(|entry| entry.project.clone()) {
        Some(mark) => {
            app.mode = Mode::Confirm(Confirm::ProjectDown {
                file: mark.file,
                name: mark.project,
            });
        }
        None => app.say("select a project's process to stop its project", true),
    }
    Vec::new()
}

fn project_up(app: &mut App) -> Vec<Effect> {
    if refuse_far_project(app) {
        return Vec::new();
    }
    if let Some(mark) = app.selected_entry().and_then(|entry| entry.project.clone()) {
        return vec![Effect::ProjectUp {
            file: mark.file,
            name: mark.project,
        }];
    }
    app.say("select a project's process to apply its file", true);
    Vec::new()
}

fn focus(app: &mut App) -> Vec<Effect> {
    match app.selected_entry() {
        Some(entry) if entry.state.is_running() => {
            app.mode = Mode::Focus;
            app.scroll = 0;
        }
        Some(_) => app.say("it has ended: there is nothing to type into", true),
        None => app.say("no call selected", true),
    }
    Vec::new()
}

fn page_up(app: &mut App) -> Vec<Effect> {
    app.scroll = app.scroll.saturating_add(app.page_rows());
    Vec::new()
}

fn page_down(app: &mut App) -> Vec<Effect> {
    app.scroll = app.scroll.saturating_sub(app.page_rows());
    Vec::new()
}

fn live(app: &mut App) -> Vec<Effect> {
    app.scroll = 0;
    Vec::new()
}

fn search(app: &mut App) -> Vec<Effect> {
    prompt(app, PromptPurpose::Search)
}

/// The first jump goes from the live end back: the next match is further back, as after `?`
/// in less and vim.
fn next_match(app: &mut App) -> Vec<Effect> {
    app.search_effect(/*newer*/ false)
}

fn previous_match(app: &mut App) -> Vec<Effect> {
    app.search_effect(/*newer*/ true)
}

fn filter(app: &mut App) -> Vec<Effect> {
    app.mode = Mode::Prompt(Prompt {
        purpose: PromptPurpose::Filter,
        text: app.filter.clone().unwrap_or_default(),
        proposal: false,
    });
    Vec::new()
}

fn zoom(app: &mut App) -> Vec<Effect> {
    app.zoom = !app.zoom;
    app.due.split = true;
    app.resize_all()
}

fn split(app: &mut App) -> Vec<Effect> {
    app.split();
    Vec::new()
}

fn next_pane(app: &mut App) -> Vec<Effect> {
    app.next_pane();
    Vec::new()
}

fn close_pane(app: &mut App) -> Vec<Effect> {
    app.close_pane();
    Vec::new()
}

fn copy(app: &mut App) -> Vec<Effect> {
    app.start_copy();
    Vec::new()
}

fn help(app: &mut App) -> Vec<Effect> {
    app.mode = Mode::Help(Help::default());
    Vec::new()
}

/// Quits at once when the processes live in the server (nothing ends, the terminal is told
/// what keeps running); asks first when quitting ends them.
fn quit(app: &mut App) -> Vec<Effect> {
    let running = super::confirm::Running::of(&app.entries);
    if app.processes_outlive || running.is_none() {
        app.quit = true;
    } else {
        app.mode = Mode::Confirm(Confirm::Quit { running });
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_one_name_and_default_keys() {
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(*action));
            assert!(!action.describe().is_empty());
        }
        let keymap = default_keymap();
        assert_eq!(keymap.len(), Action::ALL.len());
        assert!(keymap.iter().all(|binding| !binding.keys.is_empty()));
        // A capital letter is bound with Shift and without.
        let last = keymap
            .iter()
            .find(|binding| binding.action == Action::SelectLast)
            .expect("select-last");
        assert_eq!(
            last.keys,
            [
                (KeyCode::Char('G'), KeyModifiers::NONE),
                (KeyCode::Char('G'), KeyModifiers::SHIFT)
            ]
        );
    }
}
