use super::*;

#[test]
fn errors_of_the_pty_library_read_as_words() {
    let raw = format!(
        "failed to openpty: {:?}",
        std::io::Error::from_raw_os_error(libc::EMFILE)
    );
    assert_eq!(
        in_words(&raw),
        "failed to openpty: too many open files: too many files are open (raise `ulimit -n`, \
             or end some processes)"
    );
    assert_eq!(in_words(&"plain"), "plain");
}

#[tokio::test]
async fn a_process_found_by_a_search_is_checked_again_before_its_signal() {
    let process = spawn(&SpawnSpec {
        call_id: "identity".into(),
        command: "sleep 30".into(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        size: TermSize::DEFAULT,
        waiter: Waiter::Program,
        owner: None,
    })
    .expect("spawn");
    let control = process.control.clone();
    let tree = control.inner.tree.on_pty().expect("a PTY tree");
    let mut stranger = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let stranger_stat = proc_scan::stat(i32::try_from(stranger.id()).expect("pid")).expect("stat");
    // Found with a start time that is no longer the pid's: another process has it now.
    let stale = proc_scan::ProcessStat {
        started: stranger_stat.started + 1,
        ..stranger_stat
    };
    tree.signal_member(stale, Signal::SIGKILL);
    // The same process, but neither in the tree's group or session nor carrying its key.
    tree.signal_member(stranger_stat, Signal::SIGKILL);
    // A member is signalled.
    let shell = proc_scan::stat(i32::try_from(control.pid()).expect("pid")).expect("stat");
    tree.signal_member(shell, Signal::SIGKILL);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while control.exit().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the shell was not killed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The kill above came after the stranger's checks: had they signalled it, it would be
    // dead by now.
    assert!(stranger.try_wait().expect("wait").is_none());
    let _ = stranger.kill();
    let _ = stranger.wait();
}

#[tokio::test]
async fn once_released_the_shell_is_reaped_and_nothing_is_signalled() {
    let process = spawn(&SpawnSpec {
        call_id: "released".into(),
        command: "true".into(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        size: TermSize::DEFAULT,
        waiter: Waiter::Program,
        owner: None,
    })
    .expect("spawn");
    let control = process.control.clone();
    let exit = *control
        .exit_watch()
        .wait_for(Option::is_some)
        .await
        .expect("the exit");
    assert_eq!(exit, Some(ProcessExit::Code(0)));
    // Exited, not reaped: the pid is still the zombie's.
    assert!(!control.is_reaped());
    assert!(std::path::Path::new(&format!("/proc/{}", control.pid())).exists());
    control.release();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !control.is_reaped() {
        assert!(tokio::time::Instant::now() < deadline, "never reaped");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!control.tree_alive());
}

/// Output still in the terminal when the shell exits is all read, however short the grace
/// and however late the reader delivers: the grace is only for a terminal someone still holds.
#[tokio::test]
async fn all_output_written_before_the_exit_arrives_however_slow_the_reader() {
    let mut process = spawn(&SpawnSpec {
        call_id: "drained".into(),
        command: "head -c 100000 /dev/zero | tr '\\0' x; printf END".into(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        size: TermSize::DEFAULT,
        waiter: Waiter::Program,
        owner: None,
    })
    .expect("spawn");
    // A reader starved by a loaded machine: every chunk comes late, long after the exit.
    let (slow_tx, slow_rx) = mpsc::channel(1);
    let mut output = std::mem::replace(&mut process.output, slow_rx);
    tokio::spawn(async move {
        while let Some(chunk) = output.recv().await {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if slow_tx.send(chunk).await.is_err() {
                break;
            }
        }
    });
    let mut stream = ProcessStream::new(process, Duration::ZERO);
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the stream never ended");
        match event {
            StreamEvent::Output(chunk) => received.extend_from_slice(&chunk),
            StreamEvent::Ended(exit) => {
                assert_eq!(exit, ProcessExit::Code(0));
                break;
            }
        }
    }
    let mut expected = vec![b'x'; 100_000];
    expected.extend_from_slice(b"END");
    assert!(
        received == expected,
        "output was lost: {} bytes of {}",
        received.len(),
        expected.len()
    );
    stream.control().release();
}

#[test]
fn start_times_and_now_are_on_one_clock() {
    let before = proc_scan::now_ticks().expect("uptime");
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .expect("sleep");
    let pid = i32::try_from(child.id()).expect("pid");
    let started = proc_scan::stat(pid).expect("the child's stat").started;
    let after = proc_scan::now_ticks().expect("uptime");
    let _ = child.kill();
    let _ = child.wait();
    // Uptime has hundredths of a second; a tick of rounding either way.
    assert!(
        started + 1 >= before && started <= after + 1,
        "{before} <= {started} <= {after}"
    );
    let me = proc_scan::stat(i32::try_from(std::process::id()).expect("pid"))
        .expect("this process's stat");
    assert!(me.started <= started);
}

#[test]
fn a_scan_names_each_process_by_its_spawn_key_and_a_later_ask_sees_a_newer_process() {
    let spawn = |key: Option<&str>| {
        let mut command = std::process::Command::new("sleep");
        command.arg("30").env_remove(TREE_KEY_ENV);
        if let Some(key) = key {
            command.env(TREE_KEY_ENV, key);
        }
        command.spawn().expect("sleep")
    };
    let before = std::time::Instant::now();
    let _ = proc_scan::keyed_processes(before);
    let (mut keyed, mut plain) = (spawn(Some("k-1234")), spawn(None));
    // Asked after they started: a scan begun before cannot answer.
    let fresh = proc_scan::keyed_processes(std::time::Instant::now());
    let key_of = |child: &std::process::Child| {
        let pid = i32::try_from(child.id()).expect("pid");
        fresh
            .iter()
            .find(|process| process.stat.pid == pid)
            .map(|process| process.key.clone())
    };
    assert_eq!(key_of(&keyed), Some(Some("k-1234".into())));
    assert_eq!(key_of(&plain), Some(None));
    for child in [&mut keyed, &mut plain] {
        let _ = child.kill();
        let _ = child.wait();
    }
}
