//! One interface, several machines: this one's server and a far one's (reached through
//! `--via`, as `--host` runs ssh), each listed under its heading, every key reaching the
//! selected entry's own server, and a far link that fails or drops told and linked again.

use std::process::Stdio;

use crate::hosts::{Sides, text};
use crate::support::{output_within, wait_until_blocking};

/// Plays `script` in `headless` (an `oino headless` command) without colours: its output once
/// it ended (a script waits on deadlines of its own, so the run has two).
pub(crate) fn play(headless: &mut std::process::Command, script: &str) -> std::process::Output {
    let file = crate::support::temp_dir("fleet-script").join("script.oino");
    std::fs::write(&file, script).expect("the script");
    crate::support::output_before(
        "oino headless",
        headless.arg("--script").arg(&file).env("NO_COLOR", "1"),
        crate::support::DEADLINE * 2,
    )
}

/// `oino headless --server` on the near side with the far side through `via`, on `script`.
fn headless(sides: &Sides, via: &str, script: &str) -> std::process::Output {
    play(
        sides
            .near
            .oino(&["headless", "--server", "--size", "110x24", "--via", via])
            .env("XDG_CONFIG_HOME", crate::support::temp_dir("fleet-config"))
            .env_remove("OINO_CONFIG"),
        script,
    )
}

fn entry_of<'a>(entries: &'a [serde_json::Value], command: &str) -> &'a serde_json::Value {
    entries
        .iter()
        .find(|entry| entry["command"] == command)
        .unwrap_or_else(|| panic!("no entry runs `{command}`: {entries:?}"))
}

#[test]
fn one_interface_lists_both_machines_and_its_keys_act_on_the_far_entrys_server() {
    let sides = Sides::new("fleet-keys");
    // A call on the far side whose waiter is a client there.
    let waiter = sides
        .far
        .oino(&["run", "--", "echo far-job-started; sleep 600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("a far call");
    wait_until_blocking("the far call runs", || {
        sides
            .far_entries()
            .iter()
            .any(|entry| entry["state"] == "running")
    });
    let script = "\
        run --title near-job sleep 600\n\
        wait-for near-job\n\
        wait-for far-job-started --timeout 20\n\
        snapshot\n\
        # The far call is the last entry: detach it by the name prompt.
        key G\n\
        key d\n\
        wait-for task name:\n\
        key ctrl-u\n\
        type far-web\n\
        key enter\n\
        wait-for detached `far-web` as task t1\n\
        # A new call goes to the selected entry's machine.
        key n\n\
        wait-for run on env:\n\
        type echo ok-$((40+2)); sleep 600\n\
        key enter\n\
        # Its output, which only its pane shows: it is selected.
        wait-for ok-42\n\
        key x\n\
        wait-for and all its processes?\n\
        key y\n\
        wait-for killed `echo ok-$((40+2)); sleep 600`\n\
        snapshot\n";
    let out = headless(&sides, &sides.via(), script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    // Both machines under their headings, each call under its own.
    let first = stdout.split("snapshot").nth(1).expect("a snapshot");
    let (here, far) = first.split_once("■ env").expect("the far host's heading");
    assert!(
        here.contains("■ this machine") && here.contains("near-job"),
        "{first}"
    );
    assert!(far.contains("far-job-started"), "{first}");
    assert!(!far.contains("near-job"), "{first}");

    // The far call's waiter got its output so far and the marker, and it lives on as a task.
    let released = waiter.wait_with_output().expect("the far waiter");
    let released = text(&released.stdout);
    assert!(
        released.contains("far-job-started") && released.contains("Detached to background task"),
        "{released}"
    );
    let far = sides.far_entries();
    let task = entry_of(&far, "echo far-job-started; sleep 600");
    assert_eq!(task["name"], "far-web", "{task}");
    assert_eq!(task["state"], "running", "{task}");
    let typed = entry_of(&far, "echo ok-$((40+2)); sleep 600");
    assert_ne!(typed["state"], "running", "killed there: {typed}");
    // Nothing of the far side's reached this machine's server, and nothing of its the far one.
    let listed = output_within("near ls", &mut sides.near.oino(&["ls", "--json"]));
    let near: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(near.len(), 1, "{near:?}");
    assert_eq!(near[0]["title"], "near-job");
    assert!(
        far.iter().all(|entry| entry["title"] != "near-job"),
        "{far:?}"
    );
}

#[test]
fn a_far_host_out_of_reach_is_listed_with_its_transports_words_and_the_rest_goes_on() {
    let sides = Sides::new("fleet-unreachable");
    let via = "sh -c 'echo \"ssh: no route to gpu\" >&2; exit 255'";
    let script = "\
        run --title near-job echo near-done\n\
        wait-for near-done\n\
        wait-for unreachable --timeout 20\n\
        wait-for ssh: no route to gpu\n\
        snapshot\n";
    let out = headless(&sides, via, script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    assert!(stdout.contains("■ sh · unreachable"), "{stdout}");
    assert!(stdout.contains("retried after"), "{stdout}");
}

#[test]
fn a_far_link_that_drops_is_told_and_linked_again_and_its_calls_go_on() {
    let sides = Sides::new("fleet-drop");
    // The proxy named by its socket, so that this test kills its own link alone.
    let via = format!(
        "env XDG_STATE_HOME={} {} proxy --socket {}",
        sides.far.state.display(),
        env!("CARGO_BIN_EXE_oino"),
        sides.far.socket.display()
    );
    sides.far.task("far-sleeper", "sleep 600");
    // Anchored at the program: neither the interface (its --via holds the words) nor the shell
    // that runs pkill matches.
    let socket = sides.far.socket.display().to_string();
    let script = format!(
        "wait-for far-sleeper --timeout 20\n\
         run --id cut pkill -f '^[^ ]*oino proxy --socket {socket}'\n\
         wait-exit cut\n\
         wait-for env is linked again --timeout 20\n\
         wait-for far-sleeper\n\
         snapshot\n"
    );
    let out = headless(&sides, &via, &script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    let far = sides.far_entries();
    let sleeper = entry_of(&far, "sleep 600");
    assert_eq!(sleeper["state"], "running", "{sleeper}");
}

#[test]
fn a_far_server_that_stops_answering_holds_a_frame_once_and_is_linked_again_when_it_answers() {
    let sides = Sides::new("fleet-stopped");
    sides.far.task("far-sleeper", "seq 1 500; sleep 600");
    let server = crate::support::server_pid(&sides.far.socket).expect("the far server's pid");
    // Stopped, the far server takes connections and answers none; going back a page in the
    // far task's history asks it for one.
    let script = format!(
        "wait-for far-sleeper --timeout 20\n\
         key G\n\
         wait-for 500\n\
         run --id stop kill -STOP {server}\n\
         wait-exit stop\n\
         key pgup\n\
         wait-for no answer within 3 s --timeout 20\n\
         run --title near-alive echo here\n\
         wait-for near-alive\n\
         run --id cont kill -CONT {server}\n\
         wait-exit cont\n\
         wait-for env is linked again --timeout 40\n"
    );
    let out = headless(&sides, &sides.via(), &script);
    // Whatever the script came to, the far server answers again.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server),
        nix::sys::signal::Signal::SIGCONT,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    let far = sides.far_entries();
    assert_eq!(entry_of(&far, "seq 1 500; sleep 600")["state"], "running");
}

#[test]
fn actions_on_far_entries_go_over_the_links_they_have_not_a_transport_each() {
    let sides = Sides::new("fleet-reuse");
    for name in ["one", "two", "three"] {
        sides.far.task(name, &format!("echo {name}-up; sleep 600"));
    }
    // Each start of the transport (an ssh connection, where `--host` is given) leaves a line;
    // the proxy is named by its socket, so that the test can end one of its own.
    let starts = crate::support::temp_dir("fleet-reuse-starts").join("starts");
    let far_socket = sides.far.socket.display();
    let via = format!(
        "sh -c 'echo start >> {}; exec env XDG_STATE_HOME={} {} proxy --socket {far_socket}'",
        starts.display(),
        sides.far.state.display(),
        env!("CARGO_BIN_EXE_oino"),
    );
    let kill = |name: &str| {
        format!("key x\nwait-for and all its processes?\nkey y\nwait-for killed `{name}`\nkey k\n")
    };
    // Between the first two kills, the link dies (the one transport, which carries the
    // events, the questions and the actions alike): once it is made again, the second kill
    // goes over the new one. `G` then `k` select `two` again (`three`, ended, is last).
    let script = format!(
        "wait-for three --timeout 20\nkey G\nwait-for three-up\n{}\
         run --id cut pkill -n -f '^[^ ]*oino proxy --socket {far_socket}'\nwait-exit cut\n\
         wait-for linked again --timeout 20\nkey G\nkey k\nwait-for two-up\n{}{}",
        kill("three"),
        kill("two"),
        kill("one")
    );
    let out = headless(&sides, &via, &script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    let far = sides.far_entries();
    assert!(
        far.iter().all(|entry| entry["state"] != "running"),
        "all three killed there: {far:?}"
    );
    // The one link, made again once: three kills start two ssh, not three.
    let started = std::fs::read_to_string(&starts).expect("the starts file");
    assert!(
        started.lines().count() <= 4,
        "{} transports started for three kills",
        started.lines().count()
    );
}
