//! Background tasks: detaching a call (on a key, a request or its timeout) through the
//! registry, adopting its process, the ids and names of tasks, and the loop that keeps reading
//! them.
//!
//! A detached process keeps its PTY, its log and its screen: [`follow`] goes on routing its
//! chunks into the same [`OutputSink`] the call used, from the exact chunk where the call
//! stopped, until the process ends. [`TaskBook`] allocates short ids (`t1`, `t2`, …) and keeps
//! names unique.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::oneshot;

use super::entries::{Entry, TaskStatus};
use super::{CallHandle, CallRequest, Core, CoreError, CoreEvent, EntryInfo};
use crate::call::{CallResult, DetachCause, DetachedTo, detach_marker, end_leftovers, route_chunk};
use crate::output::OutputSink;
use crate::pty::{ProcessExit, ProcessStream, SpawnedProcess, StreamEvent};

/// The longest task name.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// A task name refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskError {
    /// Another task has that name, or a call has it as its id.
    #[error("the name `{0}` is taken (a task's name, or a call's id): choose another name")]
    DuplicateName(String),
    /// The name breaks a rule of names.
    #[error("invalid task name `{name}`: {why}")]
    InvalidName {
        /// The name refused.
        name: String,
        /// Which rule, in words.
        why: &'static str,
    },
}

/// Task ids and names in use.
#[derive(Debug, Default)]
pub(crate) struct TaskBook {
    next_number: u64,
    names: HashSet<String>,
    /// Names asked for by running calls (name → call id), kept for them until they are
    /// detached or end: of two calls asking for one name, the second is refused at its start.
    reserved: HashMap<String, String>,
}

impl TaskBook {
    /// A new task id and a name for call `for_call`: `name` when given (refused when malformed,
    /// taken by a task, kept for another call, or a call's id as `call_id` tells), else `base`
    /// (the call's own, from [`default_name`]) made unique with a suffix.
    pub(crate) fn allocate(
        &mut self,
        name: Option<&str>,
        base: &str,
        for_call: &str,
        call_id: impl Fn(&str) -> bool,
    ) -> Result<(String, String), TaskError> {
        let name = match name {
            Some(name) => {
                validate_name(name)?;
                let kept_for_it = self.reserved.get(name).is_some_and(|call| call == for_call);
                if !kept_for_it && (self.is_taken(name) || call_id(name) || call_id(&folded(name)))
                {
                    return Err(TaskError::DuplicateName(name.to_owned()));
                }
                self.reserved.remove(name);
                name.to_owned()
            }
            None => return Ok(self.allocate_derived(base, call_id)),
        };
        Ok(self.take(name))
    }

    /// Keeps `name` for call `for_call`, which asked for it at its start; refused when taken.
    pub(crate) fn reserve(&mut self, name: &str, for_call: &str) -> Result<(), TaskError> {
        validate_name(name)?;
        if self.is_taken(name) {
            return Err(TaskError::DuplicateName(name.to_owned()));
        }
        self.reserved.insert(name.to_owned(), for_call.to_owned());
        Ok(())
    }

    /// Lets go of what call `call` kept and did not use.
    pub(crate) fn unreserve(&mut self, call: &str) {
        self.reserved.retain(|_, kept_for| kept_for != call);
    }

    /// Whether a task has this name, or a call keeps it: as written, or in the form it reads
    /// as (`ｗｅｂ` is taken when `web` is).
    #[must_use]
    pub(crate) fn is_taken(&self, name: &str) -> bool {
        if self.names.contains(name) || self.reserved.contains_key(name) {
            return true;
        }
        let plain = folded(name);
        self.names
            .iter()
            .chain(self.reserved.keys())
            .any(|other| (!other.is_ascii() || !name.is_ascii()) && folded(other) == plain)
    }

    /// A new task id and the name `base`, made unique (among tasks and call ids) with a suffix.
    pub(crate) fn allocate_derived(
        &mut self,
        base: &str,
        call_id: impl Fn(&str) -> bool,
    ) -> (String, String) {
        let taken = |name: &str| self.is_taken(name) || call_id(name);
        let name = if taken(base) {
            let mut suffix = 2u64;
            while taken(&format!("{base}-{suffix}")) {
                suffix += 1;
            }
            format!("{base}-{suffix}")
        } else {
            base.to_owned()
        };
        self.take(name)
    }

    /// Whether `id` reads as a task id (`t` and a number), which a call id may not.
    #[must_use]
    pub(crate) fn looks_like_task_id(id: &str) -> bool {
        id.strip_prefix('t')
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|byte| byte.is_ascii_digit()))
    }

    fn take(&mut self, name: String) -> (String, String) {
        self.next_number += 1;
        self.names.insert(name.clone());
        (format!("t{}", self.next_number), name)
    }

    /// The name kept for call `call` since its start, if one is.
    #[must_use]
    pub(crate) fn reserved_for(&self, call: &str) -> Option<String> {
        self.reserved
            .iter()
            .find(|(_, kept_for)| *kept_for == call)
            .map(|(name, _)| name.clone())
    }

    /// Frees a name whose detach did not happen.
    pub(crate) fn release(&mut self, name: &str) {
        self.names.remove(name);
    }
}

/// Checks a task name against the rules of names, before anything is started under it.
pub(crate) fn validate_name(name: &str) -> Result<(), TaskError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some("it is longer than 64 characters")
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@' | '+'))
    {
        Some("use letters, digits and - _ . : @ + only")
    } else if name.chars().all(|c| c == '.') {
        Some("`.` and `..` name folders, not tasks: add a word")
    } else if name.chars().any(|c| c.is_numeric() && !c.is_ascii_digit()) {
        Some("use the digits 0-9 only (others read like an id's: t٣ is t3)")
    } else if looks_like_id(name) {
        Some("it looks like a task or call id (t3, c7, run-42): add a word")
    } else if looks_like_id(&folded(name)) {
        Some(
            "it reads as a task or call id once its letters are folded (ｔ3 is t3): use plain letters",
        )
    } else {
        None
    };
    match why {
        Some(why) => Err(TaskError::InvalidName {
            name: name.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// The form a name is compared in: its NFKC form, in which fullwidth, mathematical and other
/// compatibility letters are the plain ones they look like (`ｗｅｂ` is `web`).
fn folded(name: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::UnicodeNormalization as _;
    if name.is_ascii() {
        return std::borrow::Cow::Borrowed(name);
    }
    std::borrow::Cow::Owned(name.nfkc().collect())
}

/// Whether a name could be an id that oino hands out: `t3`, `c7`, `run-42`, `run-42-2`,
/// `mcp42-7`; an id and a name never mean two things.
fn looks_like_id(name: &str) -> bool {
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let numbered = |rest: &str| rest.split('-').all(digits);
    match name.split_at_checked(1) {
        Some(("t" | "c", rest)) if digits(rest) => true,
        _ => {
            name.strip_prefix("run-").is_some_and(numbered)
                || name
                    .strip_prefix("mcp")
                    .and_then(|rest| rest.split_once('-'))
                    .is_some_and(|(pid, _)| digits(pid))
        }
    }
}

/// A task name from a few words saying what a command does: lower case, kebab-case, at most
/// five words (`"Start the dev server"` → `start-the-dev-server`); none when nothing usable is
/// left.
#[must_use]
pub(crate) fn name_from_words(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .take(5)
        .map(str::to_lowercase)
        .collect();
    let name: String = words.join("-").chars().take(40).collect();
    let name = name.trim_end_matches('-').to_owned();
    validate_name(&name).ok().map(|()| name)
}

/// The name a call's task gets unless one is asked for: from its title (the words a person or
/// an agent gave it), else from its command.
#[must_use]
pub(crate) fn default_name(title: Option<&str>, command: &str) -> String {
    title
        .and_then(name_from_words)
        .unwrap_or_else(|| derive_name(command))
}

/// A name for a command: the first words of its first simple command, lower case, joined by
/// `-` (`npm run dev && open x` → `npm-run-dev`).
#[must_use]
pub(crate) fn derive_name(command: &str) -> String {
    let first = command
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '(' | '{'))
        .split([';', '|', '&', '\n', '(', ')', '<', '>'])
        .next()
        .unwrap_or_default();
    let words: Vec<String> = first
        .split(char::is_whitespace)
        .filter(|word| !word.is_empty() && !word.contains('='))
        .map(|word| {
            // A path names its program by its last part: ./scripts/serve.sh -> serve.sh
            let word = word.rsplit('/').next().unwrap_or(word);
            // Digits other than 0-9 would make a name that reads like an id (t٣): left out.
            word.chars()
                .filter(|c| {
                    (c.is_alphanumeric() && (c.is_ascii_digit() || !c.is_numeric()))
                        || matches!(c, '-' | '_' | '.')
                })
                .collect::<String>()
                .to_lowercase()
        })
        // Flags and bare numbers (ports, `2>&1`) name nothing.
        .filter(|word| {
            !word.is_empty() && !word.starts_with('-') && !word.chars().all(|c| c.is_ascii_digit())
        })
        .take(3)
        .collect();
    let mut name: String = words.join("-").chars().take(32).collect();
    name = name.trim_matches(|c| c == '-' || c == '.').to_owned();
    if name.is_empty() || looks_like_id(&name) {
        name = format!("task-{name}").trim_end_matches('-').to_string();
    }
    name
}

/// Keeps reading a detached process into its sink until it ends; returns how it ended.
pub async fn follow(mut stream: ProcessStream, sink: &OutputSink) -> ProcessExit {
    loop {
        match stream.next().await {
            StreamEvent::Output(chunk) => route_chunk(sink, stream.control(), &chunk).await,
            StreamEvent::Ended(exit) => {
                sink.settle();
                return exit;
            }
        }
    }
}

impl Core {
    /// Lists `entry` as a task already, named and marked before anyone can see it, and follows
    /// its process; its handle's result is the detach marker alone.
    pub(super) fn start_as_task(
        &self,
        entry: &Arc<Entry>,
        task_name: Option<&str>,
        process: SpawnedProcess,
    ) -> CallHandle {
        let (task_id, name) = self.allocate_task(entry, task_name);
        let reason = "started in the background";
        self.lock().entries.push(Arc::clone(entry));
        self.emit(CoreEvent::Started {
            id: entry.id.clone(),
        });
        self.adopt(entry, &task_id, &name, process);
        tokio::spawn(self.clone().watch_for_input(Arc::clone(entry)));
        let (result_tx, result) = oneshot::channel();
        let _ = result_tx.send(CallResult {
            text: detach_marker(&task_id, reason),
            detached: Some(DetachedTo {
                task_id,
                reason: reason.to_owned(),
                cause: DetachCause::Background,
            }),
            ..CallResult::default()
        });
        CallHandle {
            id: entry.id.clone(),
            result,
        }
    }

    /// A task id and name for `entry`: the name asked for, unless another task took it
    /// meanwhile, else one derived from its command.
    pub(super) fn allocate_task(&self, entry: &Entry, task_name: Option<&str>) -> (String, String) {
        let state = &mut *self.lock();
        let entries = &state.entries;
        let call_id = |name: &str| entries.iter().any(|entry| entry.id == name);
        task_name
            .and_then(|name| {
                state
                    .tasks
                    .allocate(Some(name), &entry.default_name(), &entry.id, call_id)
                    .ok()
            })
            .unwrap_or_else(|| state.tasks.allocate_derived(&entry.default_name(), call_id))
    }

    /// The command the shell of call `id` runs: the request's, reporting the shell's last folder
    /// when the request asks (in the private log folder: nobody else can plant anything where
    /// the shell writes).
    pub(super) fn command_to_spawn(&self, request: &mut CallRequest, id: &str) -> String {
        request.options.folder_file =
            (request.report_folder && !request.background).then(|| self.folder_file(id));
        let reporting = request
            .options
            .folder_file
            .as_ref()
            .map(|file| crate::call::reporting_folder(&request.command, file))
            // A command near the longest one can be is run as it is: its folder goes unsaid.
            .filter(|command| command.len() <= super::MAX_COMMAND_BYTES);
        if reporting.is_none() {
            request.options.folder_file = None;
        }
        reporting.unwrap_or_else(|| request.command.clone())
    }

    /// Makes `entry` a task and keeps reading its process.
    pub(super) fn adopt(
        &self,
        entry: &Arc<Entry>,
        task_id: &str,
        name: &str,
        process: SpawnedProcess,
    ) {
        // The call stopped consuming at a chunk boundary, and its text covers the output up to
        // the last boundary: the task's own output starts there (with any sequence or character
        // the last chunk left unfinished).
        let detach_offset = entry.sink.readable();
        entry.status.send_modify(|status| {
            status.task = Some(TaskStatus {
                task_id: task_id.to_owned(),
                name: name.to_owned(),
                detached_at: SystemTime::now(),
                detach_offset,
            });
        });
        self.emit(CoreEvent::Detached {
            id: entry.id.clone(),
            task_id: task_id.to_owned(),
            name: name.to_owned(),
        });
        let core = self.clone();
        let entry = Arc::clone(entry);
        let stream = ProcessStream::new(process, self.inner.config.exit_grace);
        tokio::spawn(async move {
            let control = stream.control().clone();
            let exit = follow(stream, &entry.sink).await;
            end_leftovers(&control, core.inner.config.kill_grace);
            core.mark_ended(&entry, exit, false);
        });
    }

    /// Names the call `id`, which ended before it could be detached, as the task it was to
    /// become: `name`, or one derived from its command.
    pub(super) async fn name_ended(
        &self,
        id: &str,
        name: Option<&str>,
    ) -> Result<EntryInfo, CoreError> {
        let entry = self.find(id)?;
        // A call that is ending is still registered until its end is recorded: that is waited
        // for (briefly: its process is gone).
        let mut status = entry.status.subscribe();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            status.wait_for(|status| !status.state.is_running()),
        )
        .await;
        drop(status);
        if entry.status.borrow().task.is_some() {
            return Err(CoreError::AlreadyTask(id.to_owned()));
        }
        if self.inner.registry.is_running(&entry.id) {
            return Err(CoreError::NotRunning(id.to_owned()));
        }
        let (task_id, name) = {
            let state = &mut *self.lock();
            let entries = &state.entries;
            state
                .tasks
                .allocate(name, &entry.default_name(), &entry.id, |name| {
                    entries.iter().any(|entry| entry.id == name)
                })?
        };
        entry.status.send_modify(|status| {
            status.task = Some(TaskStatus {
                task_id: task_id.clone(),
                name: name.clone(),
                detached_at: SystemTime::now(),
                detach_offset: 0,
            });
        });
        self.emit(CoreEvent::Detached {
            id: entry.id.clone(),
            task_id,
            name,
        });
        Ok(entry.info())
    }

    /// Detaches the running call `key` into a new background task named `name` (or a name
    /// derived from its command), as someone asked. Any front end detaches this way.
    pub async fn detach(
        &self,
        key: &str,
        name: Option<&str>,
        reason: &str,
    ) -> Result<EntryInfo, CoreError> {
        self.detach_for(key, name, reason, DetachCause::Asked).await
    }

    /// [`Core::detach`], for the cause `cause`.
    pub(crate) async fn detach_for(
        &self,
        key: &str,
        name: Option<&str>,
        reason: &str,
        cause: DetachCause,
    ) -> Result<EntryInfo, CoreError> {
        let entry = self.find(key)?;
        if entry.status.borrow().task.is_some() {
            return Err(CoreError::AlreadyTask(key.to_owned()));
        }
        if !self.inner.registry.is_running(&entry.id) {
            return Err(CoreError::NotRunning(key.to_owned()));
        }
        let (task_id, name) = {
            let state = &mut *self.lock();
            let entries = &state.entries;
            // Without a name, the one the call asked for at its start, if it did.
            let reserved = state.tasks.reserved_for(&entry.id);
            let name = name.or(reserved.as_deref());
            state
                .tasks
                .allocate(name, &entry.default_name(), &entry.id, |name| {
                    entries.iter().any(|entry| entry.id == name)
                })?
        };
        let core = self.clone();
        let reason = reason.to_owned();
        // Run to the end even if the caller stops waiting: a process handed over must be adopted.
        let adopted = tokio::spawn(async move {
            let detached = core
                .inner
                .registry
                .detach_for(&entry.id, task_id.clone(), reason, cause)
                .await;
            if let Some(detached) = detached {
                core.adopt(&entry, &task_id, &name, detached.process);
                Ok(entry.info())
            } else {
                core.lock().tasks.release(&name);
                Err(CoreError::NotRunning(entry.id.clone()))
            }
        })
        .await;
        adopted.unwrap_or_else(|_| Err(CoreError::NotRunning(key.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_like_ids_are_refused() {
        for id_like in ["t3", "c70", "run-42", "run-42-2", "mcp42-7", "mcp1-a"] {
            assert!(
                matches!(validate_name(id_like), Err(TaskError::InvalidName { .. })),
                "{id_like}"
            );
        }
        for fine in [
            "t3x",
            "web",
            "run-tests",
            "run-",
            "mcp",
            "c",
            "trunk-1",
            "v1.2",
            "é",
        ] {
            assert_eq!(validate_name(fine), Ok(()), "{fine}");
        }
        for refused in [".", "..", "...", "t٣", "c٧", "web٣", "t³"] {
            assert!(
                matches!(validate_name(refused), Err(TaskError::InvalidName { .. })),
                "{refused}"
            );
        }
        assert_eq!(derive_name("echo ٣ ٤"), "echo");
        assert_eq!(derive_name("t٣"), "t");
    }

    #[test]
    fn a_titled_call_is_named_by_its_title_else_by_its_command() {
        assert_eq!(
            default_name(Some("Watch the sources"), "while true; do :; done"),
            "watch-the-sources"
        );
        assert_eq!(default_name(Some("!!!"), "npm run dev"), "npm-run-dev");
        assert_eq!(default_name(None, "npm run dev"), "npm-run-dev");
    }

    #[test]
    fn names_come_from_descriptions() {
        assert_eq!(
            name_from_words("Start the Vite dev server").as_deref(),
            Some("start-the-vite-dev-server")
        );
        assert_eq!(
            name_from_words("  Run tests (unit, fast) & report them now please").as_deref(),
            Some("run-tests-unit-fast-report")
        );
        assert_eq!(
            name_from_words("Écrire un café").as_deref(),
            Some("écrire-un-café")
        );
        assert_eq!(name_from_words("t3"), None);
        assert_eq!(name_from_words("!!!"), None);
    }

    #[test]
    fn names_derive_from_commands() {
        assert_eq!(derive_name("npm run dev"), "npm-run-dev");
        assert_eq!(derive_name("  ./scripts/serve.sh --port 80"), "serve.sh");
        assert_eq!(derive_name("FOO=1 cargo watch -x test"), "cargo-watch-test");
        assert_eq!(derive_name("!!!"), "task");
        assert_eq!(derive_name("t1"), "task-t1");
        assert_eq!(
            derive_name("echo ticking; while true; do date; done"),
            "echo-ticking"
        );
        assert_eq!(derive_name("cargo build 2>&1 | tee log"), "cargo-build");
    }

    #[test]
    fn ids_are_short_and_names_unique() {
        let mut book = TaskBook::default();
        assert_eq!(
            book.allocate(None, &derive_name("npm run dev"), "c1", |_| false),
            Ok(("t1".into(), "npm-run-dev".into()))
        );
        assert_eq!(
            book.allocate(None, &derive_name("npm run dev"), "c1", |_| false),
            Ok(("t2".into(), "npm-run-dev-2".into()))
        );
        assert_eq!(
            book.allocate(Some("npm-run-dev"), "x", "c1", |_| false),
            Err(TaskError::DuplicateName("npm-run-dev".into()))
        );
        assert!(matches!(
            book.allocate(Some("t9"), "x", "c1", |_| false),
            Err(TaskError::InvalidName { .. })
        ));
        assert!(matches!(
            book.allocate(Some("has space"), "x", "c1", |_| false),
            Err(TaskError::InvalidName { .. })
        ));
        book.release("npm-run-dev");
        assert_eq!(
            book.allocate(Some("npm-run-dev"), "x", "c1", |_| false),
            Ok(("t3".into(), "npm-run-dev".into()))
        );
        // A name kept for a call is that call's alone, until it lets go.
        book.reserve("web", "c5").expect("free");
        assert!(book.reserve("web", "c6").is_err());
        assert!(book.allocate(Some("web"), "x", "c6", |_| false).is_err());
        assert_eq!(book.allocate_derived("web", |_| false).1, "web-2");
        book.unreserve("c5");
        book.reserve("web", "c6").expect("free again");
        assert!(book.allocate(Some("web"), "x", "c6", |_| false).is_ok());
    }
}
