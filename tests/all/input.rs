//! Calls that wait for someone to type: seen from /proc (real bash, real PTYs, real prompts),
//! with no false alarm for processes that are quiet for other reasons.

use oino::call::InputPolicy;
use oino::core::{CallRequest, Core, EntryState};

use crate::support::{request, temp_dir, test_core, unique_id, wait_until};

fn program_call(id: &str, command: &str, on_input: InputPolicy) -> CallRequest {
    let mut call = request(id, command);
    call.options.on_input = on_input;
    call
}

fn prompt_of(core: &Core, id: &str) -> Option<String> {
    core.entry(id)
        .ok()
        .and_then(|entry| entry.waiting_for_input)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_seen_and_quiet_processes_are_not_taken_for_them() {
    let core = test_core("input-seen");
    let keys = temp_dir("input-keys").join("key");
    let quiet = [
        "sleep 30",
        // A server blocked in accept, and one in select on its socket.
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); \
         print('listening', flush=True); s.accept()\"",
        "python3 -c \"import socket, select; s = socket.socket(); s.bind(('127.0.0.1', 0)); \
         s.listen(); print('polling', flush=True); select.select([s], [], [])\"",
        // A silent loop that keeps a core busy.
        "while :; do :; done",
        // A relay: it waits on the terminal and on another one's master side, passing keys on.
        "script -qc 'sleep 30' /dev/null",
    ];
    let mut quiet_ids = Vec::new();
    for command in quiet {
        let id = unique_id("quiet");
        let handle = core
            .start(program_call(&id, command, InputPolicy::Wait))
            .expect("start");
        drop(handle);
        quiet_ids.push(id);
    }
    let prompts = [
        ("read -p 'Continue? [y/N] ' answer", "Continue? [y/N]"),
        ("python3 -c 'input(\"name: \")'", "name:"),
        (
            &*format!("ssh-keygen -q -t ed25519 -f {}", keys.display()),
            "Enter passphrase (empty for no passphrase):",
        ),
    ];
    for (command, prompt) in prompts {
        let id = unique_id("prompt");
        let handle = core
            .start(program_call(&id, command, InputPolicy::Wait))
            .expect("start");
        drop(handle);
        wait_until(&format!("`{command}` to be seen waiting"), || {
            prompt_of(&core, &id).is_some()
        })
        .await;
        assert_eq!(prompt_of(&core, &id).as_deref(), Some(prompt), "{command}");
        // Answered, it goes on and is no longer marked.
        core.write(&id, b"\r".to_vec()).await.expect("type");
        if command.starts_with("ssh-keygen") {
            wait_until("the second question", || {
                prompt_of(&core, &id).as_deref() == Some("Enter same passphrase again:")
            })
            .await;
            core.write(&id, b"\r".to_vec()).await.expect("type");
        }
        wait_until("it to end", || {
            core.entry(&id)
                .is_ok_and(|entry| !entry.state.is_running() && entry.waiting_for_input.is_none())
        })
        .await;
    }
    // The quiet ones were started before the prompts and looked at as long.
    for (id, command) in quiet_ids.iter().zip(quiet) {
        let entry = core.entry(id).expect("entry");
        assert_eq!(entry.state, EntryState::Running, "{command}");
        assert_eq!(
            entry.waiting_for_input, None,
            "a false alarm for `{command}`"
        );
    }
    core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_programs_call_that_asks_is_detached_with_its_prompt_or_killed() {
    let core = test_core("input-policy");
    let id = unique_id("ask");
    let handle = core
        .start(program_call(
            &id,
            "echo preparing; read -p 'Continue? [y/N] ' answer; echo \"answer=$answer\"",
            InputPolicy::Detach,
        ))
        .expect("start");
    let result = handle.result().await;
    let detached = result.detached.expect("detached");
    assert_eq!(detached.reason, "waiting for input: Continue? [y/N]");
    assert_eq!(
        result.text,
        format!(
            "preparing\nContinue? [y/N] \n\n[Detached to background task {}: waiting for input: \
             Continue? [y/N]]",
            detached.task_id
        )
    );
    core.write(&detached.task_id, b"y\r".to_vec())
        .await
        .expect("answer");
    wait_until("the task to end", || {
        core.entry(&id).is_ok_and(|entry| !entry.state.is_running())
    })
    .await;
    let output = core.output(&id, Some(0), 10_000).expect("output").text;
    assert!(output.ends_with("answer=y\n"), "{output:?}");

    let killed = unique_id("ask-kill");
    let handle = core
        .start(program_call(&killed, "cat", InputPolicy::Kill))
        .expect("start");
    let result = handle.result().await;
    assert!(result.is_error && result.detached.is_none(), "{result:?}");
    assert!(matches!(
        core.entry(&killed).expect("entry").state,
        EntryState::Killed { .. }
    ));
    core.shutdown().await;
}

/// A full-screen program is named by the process reading the terminal, not by its group's
/// leader: vim that a shell forks stays in the shell's group, led by bash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_screen_program_is_detached_by_the_name_of_the_one_reading_keys() {
    let core = test_core("input-full-screen");
    let dir = temp_dir("input-full-screen-files");
    for command in [
        format!("vim -u NONE -i NONE -N -n {}/alone", dir.display()),
        // Not the shell's last command: bash forks it rather than run it in its own place.
        format!(
            "cd {} && vim -u NONE -i NONE -N -n in-a-list; echo closed",
            dir.display()
        ),
    ] {
        let id = unique_id("vim");
        let handle = core
            .start(program_call(&id, &command, InputPolicy::Detach))
            .expect("start");
        let result = handle.result().await;
        let detached = result.detached.expect("detached");
        assert_eq!(
            detached.reason, "vim (full screen) waits for keys",
            "{command}"
        );
        let screen = core.snapshot(&id, None, 0).expect("screen").view();
        assert!(screen.alternate_screen, "{command}");
        let marker = format!(
            "\n\n[Detached to background task {}: {}]",
            detached.task_id, detached.reason
        );
        assert_eq!(
            result.text.strip_suffix(&marker),
            Some(&*screen.shown_text()),
            "{command}"
        );
        core.kill(&id).await.expect("kill");
    }
    core.shutdown().await;
}

/// A prompt the program prints again each second (`read -t 1` in a loop), and one under a
/// spinner that never stops writing, are prompts: output that goes on does not hide them.
/// A job that does its work and looks at the keyboard every half second in between is not
/// waiting for anyone; one that only looks at it (a watch mode) is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_under_output_are_seen_and_a_working_poller_is_not_taken_for_one() {
    let core = test_core("input-under-output");
    let progress = temp_dir("input-poller").join("rounds");
    // Half a second of work, then half a second of waiting for a key, over and over, silent.
    let worker = format!(
        "python3 -c \"import select, sys, time\n\
         rounds = 0\n\
         while True:\n\
         \x20   end = time.time() + 0.5\n\
         \x20   while time.time() < end: pass\n\
         \x20   select.select([sys.stdin], [], [], 0.5)\n\
         \x20   rounds += 1\n\
         \x20   open('{}', 'w').write(str(rounds))\"",
        progress.display()
    );
    let worker_id = unique_id("poller");
    drop(
        core.start(program_call(&worker_id, &worker, InputPolicy::Wait))
            .expect("start"),
    );
    let prompts = [
        (
            "while ! read -t 1 -p 'Continue? ' answer; do :; done",
            "Continue?",
        ),
        (
            "(while :; do for c in '|' / - '\\\\'; do printf '\\r%s Password: ' \"$c\"; sleep 0.1; \
             done; done) & read -s pw; kill %1",
            "Password:",
        ),
        (
            "python3 -c \"import select, sys\nwhile not select.select([sys.stdin], [], [], 0.5)[0]: pass\"",
            "",
        ),
    ];
    for (command, prompt) in prompts {
        let id = unique_id("prompt-under-output");
        drop(
            core.start(program_call(&id, command, InputPolicy::Wait))
                .expect("start"),
        );
        wait_until(&format!("`{command}` to be seen waiting"), || {
            prompt_of(&core, &id).is_some()
        })
        .await;
        let seen = prompt_of(&core, &id).unwrap_or_default();
        assert!(seen.ends_with(prompt), "{command}: {seen:?}");
        core.kill(&id).await.expect("kill");
    }
    // The worker ran its rounds, looked at each second, never marked.
    let rounds = || {
        std::fs::read_to_string(&progress)
            .ok()
            .and_then(|text| text.parse::<u32>().ok())
            .unwrap_or(0)
    };
    wait_until("the worker's eighth round", || {
        assert_eq!(
            prompt_of(&core, &worker_id),
            None,
            "the worker was taken for a prompt"
        );
        rounds() >= 8
    })
    .await;
    core.kill(&worker_id).await.expect("kill");
}
