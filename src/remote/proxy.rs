//! `oino proxy`: this user's server on standard input and output, for a transport (ssh, `docker
//! exec -i`) to carry the protocol to a client on another machine. Once the far side asks
//! something, it connects as any client does (the server started when none runs, refused
//! unless it is this user's own), then carries bytes both ways, unread, until either side
//! closes.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Bytes carried at a time.
const CARRY_BYTES: usize = 64 * 1024;

/// Carries standard input to the server at `socket` and its answers to standard output, until
/// either closes.
pub async fn carry(socket: &Path) -> anyhow::Result<()> {
    let mut stdin = BufReader::with_capacity(CARRY_BYTES, tokio::io::stdin());
    let gone = far_side_gone();
    tokio::pin!(gone);
    // Nothing is asked of the server before the far side asks something: a link kept ready
    // (`link_persist`) neither keeps the server from stopping when idle nor starts again one
    // that `oino kill-server` stopped.
    tokio::select! {
        asked = stdin.fill_buf() => {
            if asked?.is_empty() {
                return Ok(());
            }
        }
        () = &mut gone => return Ok(()),
    }
    let (mut from_server, mut to_server) = crate::remote::client::relay(socket).await?;
    let mut stdout = tokio::io::stdout();
    // The near side never closes only its writing half: the end of the input is the end of
    // the link (a transport whose output stays open, as `docker exec` may, included).
    let up = tokio::io::copy_buf(&mut stdin, &mut to_server);
    let down = async {
        tokio::io::copy_buf(&mut from_server, &mut stdout).await?;
        stdout.flush().await
    };
    tokio::pin!(up, down);
    // Whichever ends first ends the connection; the server then sees its client gone (and
    // keeps a call it waited for as a task).
    tokio::select! {
        // The server closed: nothing more can come.
        done = &mut down => done?,
        // Nobody reads what would come: the link dropped (ssh's connection died and sshd closed
        // its end).
        () = &mut gone => {}
        up_done = &mut up => {
            up_done?;
        }
    }
    Ok(())
}

/// Resolves once standard output has no reader left. Watched by a thread of its own, left
/// blocked in `poll` until the process ends (a runtime's blocking pool would wait for it).
async fn far_side_gone() {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let (gone, told) = tokio::sync::oneshot::channel::<()>();
    let watch = std::thread::Builder::new()
        .name("stdout-watch".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            // No events asked for: `poll` reports only a hang-up or an error.
            let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
            loop {
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) if fds[0].any().unwrap_or(true) => break,
                    Err(nix::errno::Errno::EINTR) | Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = gone.send(());
        });
    if watch.is_err() || told.await.is_err() {
        std::future::pending::<()>().await;
    }
}
