//! Probes: a command (ready or alive at exit 0) or an `http://` address (at a 2xx or 3xx answer),
//! tried from outside the process. A command runs in the process's folder and environment, in a
//! process group of its own that is ended whole after each try, at a timeout and at a stop
//! (`pty::group`); nothing of it is shown as a project's row. Addresses are local servers: plain
//! HTTP, no TLS.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::Probe;

/// Why `url` cannot be probed, if it cannot: it must be `http://HOST[:PORT]/…`.
pub(crate) fn check_address(url: &str) -> Result<(), String> {
    split_address(url).map(|_| ())
}

/// The host (with its port, if given) and the path (`/` when none) of `url`, an
/// `http://HOST[:PORT]/…` address; else why it is none.
fn split_address(url: &str) -> Result<(&str, String), String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!(
            "{url} is no http:// address: probes ask servers on this machine, in plain HTTP \
             (write http://127.0.0.1:PORT/PATH)"
        ));
    };
    let (host, path) = rest
        .find(['/', '?'])
        .map_or((rest, ""), |at| rest.split_at(at));
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!(
            "{url} names no host: write http://127.0.0.1:PORT/PATH"
        ));
    }
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok((host, path))
}

/// Tries `probe` once, for at most `timeout`: `Ok` when it passed, else what it got.
pub(crate) async fn once(
    probe: &Probe,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<(), String> {
    match probe {
        Probe::Cmd(cmd) => command(cmd, cwd, env, timeout).await,
        Probe::Http(url) => http(url.clone(), timeout).await,
    }
}

/// How much of a probe command's output is kept to say why it failed.
const KEPT_OUTPUT: usize = 4096;

async fn command(
    cmd: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<(), String> {
    let mut command = std::process::Command::new("bash");
    command
        .arg("-c")
        .arg(cmd)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name, value)));
    // Dropped (a timeout, a stop), it ends its group; waited for, it ends what the shell left.
    let (mut child, outputs) = crate::pty::group::GroupChild::spawn(command)
        .map_err(|err| format!("`{cmd}` could not start: {err}"))?;
    let (mut stdout, mut stderr) = (outputs.stdout, outputs.stderr);
    let run = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let (status, (), ()) = tokio::join!(
            child.wait(),
            read_some(stdout.as_mut(), &mut out),
            read_some(stderr.as_mut(), &mut err),
        );
        (status, if err.is_empty() { out } else { err })
    };
    let Ok((status, said)) = tokio::time::timeout(timeout, run).await else {
        return Err(format!(
            "`{cmd}` gave no answer in {} ms",
            timeout.as_millis()
        ));
    };
    let status = status.map_err(|err| format!("`{cmd}`: {err}"))?;
    if status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&said);
    let last = said.lines().rev().find(|line| !line.trim().is_empty());
    let how = status
        .code()
        .map_or_else(|| "was killed".to_owned(), |code| format!("exited {code}"));
    Err(match last {
        Some(line) => format!("`{cmd}` {how}: {}", line.trim()),
        None => format!("`{cmd}` {how}"),
    })
}

/// Reads what `from` writes, keeping the first [`KEPT_OUTPUT`] bytes, until its end.
async fn read_some(from: Option<&mut (impl tokio::io::AsyncRead + Unpin)>, into: &mut Vec<u8>) {
    let Some(from) = from else {
        return;
    };
    let mut buffer = [0_u8; 1024];
    while let Ok(count) = from.read(&mut buffer).await {
        if count == 0 {
            return;
        }
        let room = KEPT_OUTPUT.saturating_sub(into.len()).min(count);
        into.extend_from_slice(&buffer[..room]);
    }
}

/// An `http://HOST[:PORT]/PATH` GET: its status line is all that is read. Plain HTTP/1.1 on
/// the runtime's own sockets (no thread per probe, no TLS): a probe every 2 s of 50 processes
/// stays under half a percent of a core (`scripts/bench-project`).
async fn http(url: String, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, status_of(&url)).await {
        Err(_) => Err(format!(
            "{url} gave no answer in {} ms",
            timeout.as_millis()
        )),
        Ok(Err(err)) => Err(format!("{url}: {err}")),
        Ok(Ok((code, _))) if (200..400).contains(&code) => Ok(()),
        Ok(Ok((code, reason))) => Err(format!("{url} answered {code} {reason}")),
    }
}

/// The status code and reason `url` answers a GET with.
async fn status_of(url: &str) -> Result<(u16, String), String> {
    use tokio::io::AsyncWriteExt;
    let (host, path) = split_address(url)?;
    // `[::1]` has colons but no port: a port is what parses after the last one.
    let address = if host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    let mut stream = tokio::net::TcpStream::connect(&address)
        .await
        .map_err(|err| err.to_string())?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: oino-probe\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|err| err.to_string())?;
    let mut head = Vec::with_capacity(256);
    let mut buffer = [0_u8; 256];
    while !head.contains(&b'\n') && head.len() < 4096 {
        let count = stream
            .read(&mut buffer)
            .await
            .map_err(|err| err.to_string())?;
        if count == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..count]);
    }
    let line = String::from_utf8_lossy(&head);
    let line = line.lines().next().unwrap_or_default();
    let mut words = line.splitn(3, ' ');
    let (Some(version), Some(code)) = (words.next(), words.next()) else {
        return Err("no HTTP answer".into());
    };
    let code = code
        .parse::<u16>()
        .ok()
        .filter(|_| version.starts_with("HTTP/"))
        .ok_or_else(|| format!("not an HTTP answer: {line}"))?;
    Ok((code, words.next().unwrap_or_default().trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_addresses_with_a_host_are_probed() {
        assert_eq!(check_address("http://127.0.0.1:3000/health"), Ok(()));
        assert_eq!(check_address("http://localhost"), Ok(()));
        for url in [
            "https://localhost/",
            "localhost:3000",
            "http:///x",
            "http://a b/",
        ] {
            assert!(check_address(url).is_err(), "{url}");
        }
    }

    #[tokio::test]
    async fn a_command_probe_passes_at_exit_0_and_says_why_it_failed() {
        let dir = std::env::temp_dir();
        let env = [("WHO".to_owned(), "db".to_owned())];
        let second = Duration::from_secs(5);
        assert_eq!(
            once(&Probe::Cmd("test \"$WHO\" = db".into()), &dir, &env, second).await,
            Ok(())
        );
        let failed = once(
            &Probe::Cmd("echo no answer >&2; exit 2".into()),
            &dir,
            &env,
            second,
        )
        .await
        .unwrap_err();
        assert_eq!(failed, "`echo no answer >&2; exit 2` exited 2: no answer");
        // A probe that hangs is ended, its children with it.
        let marker = dir.join(format!("oino-probe-{}", std::process::id()));
        let hang = format!("(sleep 30; touch {}) & sleep 30", marker.display());
        let slow = once(&Probe::Cmd(hang), &dir, &env, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(slow.contains("gave no answer in 200 ms"), "{slow}");
        let pattern = format!("touch {}", marker.display());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::process::Command::new("pgrep")
            .args(["-f", &pattern])
            .status()
            .expect("pgrep runs")
            .success()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the probe's children outlived it"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn an_http_probe_passes_at_2xx_and_3xx_and_says_what_it_got() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            for (stream, status) in listener.incoming().zip(["200 OK", "302 Found", "503 Busy"]) {
                let mut stream = stream.unwrap();
                let mut request = [0_u8; 1024];
                let _ = stream.read(&mut request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        });
        let url = format!("http://127.0.0.1:{port}/health");
        let probe = Probe::Http(url.clone());
        let dir = std::env::temp_dir();
        let second = Duration::from_secs(5);
        assert_eq!(once(&probe, &dir, &[], second).await, Ok(()));
        assert_eq!(once(&probe, &dir, &[], second).await, Ok(()));
        assert_eq!(
            once(&probe, &dir, &[], second).await,
            Err(format!("{url} answered 503 Busy"))
        );
        let refused = once(&probe, &dir, &[], second).await.unwrap_err();
        assert!(refused.starts_with(&url), "{refused}");
    }
}
