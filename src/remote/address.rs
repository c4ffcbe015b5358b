//! Where a server is reached: its socket on this machine, or a command whose standard input and
//! output reach `oino proxy` on another machine or in a container (`ssh -T HOST oino proxy`,
//! `docker exec -i dev oino proxy`). Nothing of ours listens on a network: the transport is a
//! program the user already trusts and configures.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;

/// A server's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// The socket of a server on this machine.
    Socket(PathBuf),
    /// A command that carries the protocol to a server elsewhere.
    Through(Transport),
}

/// A command whose standard input and output are a connection to a server elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transport {
    /// What the user calls the far side: the host's name, or the `--via` command.
    pub label: String,
    /// Whether `label` is a host's name (else it is the command).
    pub is_host: bool,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Started without the terminal (a session of its own): nothing it asks can reach a
    /// full-screen interface's terminal (ssh fails instead of prompting for a passphrase).
    pub without_terminal: bool,
    /// How long a link is kept ready after its last use (`link_persist`): a keeper starts the
    /// transport ahead of the next command (see [`crate::remote::ready`]); `None`, never.
    pub persist: Option<std::time::Duration>,
}

impl Address {
    /// `ssh -T HOST oino proxy`, with `ssh` (and options) from `ssh_command` when set; `proxy`
    /// are the arguments the far side's `oino proxy` gets (a session, a socket).
    pub fn ssh(host: &str, ssh_command: Option<&str>, proxy: &[String]) -> anyhow::Result<Self> {
        if host.is_empty() || host.starts_with('-') {
            anyhow::bail!(
                "`{host}` is no host name: give the name ssh would take (`box`, `me@box`, an \
                 alias from ~/.ssh/config)"
            );
        }
        let mut argv = match ssh_command {
            Some(command) => split_words(command, "ssh_command")?,
            None => vec!["ssh".to_owned()],
        };
        argv.extend([
            "-T".to_owned(),
            host.to_owned(),
            "oino".to_owned(),
            "proxy".to_owned(),
        ]);
        // ssh joins the remote command's words for the far side's shell: each is quoted.
        argv.extend(
            proxy
                .iter()
                .map(|word| shell_words::quote(word).into_owned()),
        );
        Ok(Self::Through(Transport {
            label: host.to_owned(),
            is_host: true,
            argv,
            without_terminal: false,
            persist: None,
        }))
    }

    /// `--via COMMAND`: the command, split into words as a shell would, run as it is; it must
    /// end in `oino proxy` on the far side (`docker exec -i dev oino proxy`).
    pub fn via(command: &str) -> anyhow::Result<Self> {
        Ok(Self::Through(Transport {
            label: command.to_owned(),
            is_host: false,
            argv: split_words(command, "--via")?,
            without_terminal: false,
            persist: None,
        }))
    }

    /// The same address, its links kept ready for `persist` after their last use (see
    /// [`Transport::persist`]); zero keeps none.
    #[must_use]
    pub fn kept_ready(mut self, persist: std::time::Duration) -> Self {
        if let Self::Through(transport) = &mut self {
            transport.persist = Some(persist).filter(|persist| !persist.is_zero());
        }
        self
    }

    /// The same address, its transport started without the terminal (see
    /// [`Transport::without_terminal`]).
    #[must_use]
    pub fn without_terminal(mut self) -> Self {
        if let Self::Through(transport) = &mut self {
            transport.without_terminal = true;
        }
        self
    }

    /// The transport, for an address elsewhere.
    #[must_use]
    pub fn transport(&self) -> Option<&Transport> {
        match self {
            Self::Socket(_) => None,
            Self::Through(transport) => Some(transport),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Socket(socket) => write!(f, "{}", socket.display()),
            Self::Through(transport) => write!(f, "{}", transport.label),
        }
    }
}

impl Transport {
    /// The far side as a sentence's subject: `box`, or `the far side of --via`.
    #[must_use]
    pub fn name(&self) -> String {
        if self.is_host {
            crate::inert::escaped(&self.label).into_owned()
        } else {
            format!("the far side of `{}`", crate::inert::escaped(&self.label))
        }
    }

    /// A short name for a list's heading and its ids (`dev:c3`): the host's name; for a
    /// command, the word before `oino` that names where it runs (`docker exec -i dev oino
    /// proxy` is `dev`; options and `VAR=value` are passed over), else its program's name.
    #[must_use]
    pub fn short_name(&self) -> String {
        if self.is_host {
            return self.label.clone();
        }
        let base = |word: &str| {
            std::path::Path::new(word).file_name().map_or_else(
                || word.to_owned(),
                |name| name.to_string_lossy().into_owned(),
            )
        };
        let oino = self.argv.iter().position(|word| base(word) == "oino");
        let before = &self.argv[..oino.unwrap_or(0)];
        before
            .iter()
            .rev()
            .find(|word| !word.starts_with('-') && !word.contains('='))
            .or(self.argv.first())
            .map(|word| base(word))
            .unwrap_or_default()
    }

    /// The flag that reaches it again: `--host box`, or `--via 'COMMAND'`.
    #[must_use]
    pub fn flag(&self) -> String {
        let label = crate::inert::escaped(&self.label);
        if self.is_host {
            format!("--host {label}")
        } else {
            format!("--via '{}'", label.replace('\'', r"'\''"))
        }
    }

    /// Where, and how it is reached: "on box (through `ssh -T box oino proxy`)", or "through
    /// `docker exec -i dev oino proxy`".
    #[must_use]
    pub fn described(&self) -> String {
        let command = crate::inert::escaped(&shell_words::join(&self.argv)).into_owned();
        if self.is_host {
            format!("on {} (through `{command}`)", self.name())
        } else {
            format!("through `{command}`")
        }
    }

    /// Starts the transport: its standard input and output are the connection, its standard
    /// error is kept to say why it failed; it dies with the connection.
    pub(crate) fn spawn(&self) -> anyhow::Result<tokio::process::Child> {
        /// Runs a program in a session of its own (util-linux); it execs it in place.
        const SETSID: &str = "/usr/bin/setsid";
        let (program, args) = self
            .argv
            .split_first()
            .context("the transport command is empty")?;
        let mut command = if self.without_terminal && std::path::Path::new(SETSID).exists() {
            let mut command = tokio::process::Command::new(SETSID);
            command.arg(program);
            command
        } else {
            tokio::process::Command::new(program)
        };
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting `{}` to reach {}", self.argv.join(" "), self.label))
    }
}

/// Words as a shell splits them (quotes, backslashes), without running a shell.
fn split_words(command: &str, what: &str) -> anyhow::Result<Vec<String>> {
    let words = shell_words::split(command)
        .with_context(|| format!("{what} `{command}`: a quote is not closed"))?;
    if words.is_empty() {
        anyhow::bail!("{what} is empty: name a command, as `ssh -p 2222`");
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_side_is_named_by_its_host_or_where_its_command_runs_oino() {
        let name = |command: &str| match Address::via(command).unwrap() {
            Address::Through(via) => via.short_name(),
            Address::Socket(_) => unreachable!(),
        };
        assert_eq!(name("docker exec -i dev oino proxy"), "dev");
        assert_eq!(name("kubectl exec -i pod-7 -- oino proxy -s work"), "pod-7");
        assert_eq!(name("env OINO_SOCKET=/x/s.sock /opt/bin/oino proxy"), "env");
        assert_eq!(name("/usr/local/bin/my-door"), "my-door");
        let Address::Through(ssh) = Address::ssh("me@box", None, &[]).unwrap() else {
            unreachable!()
        };
        assert_eq!(ssh.short_name(), "me@box");
    }

    #[tokio::test]
    async fn a_transport_without_the_terminal_runs_in_a_session_of_its_own() {
        let session_of = |address: Address| async move {
            let Address::Through(transport) = address else {
                unreachable!()
            };
            let child = transport.spawn().expect("spawn");
            let out = child.wait_with_output().await.expect("output");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        // The sixth field of /proc/PID/stat is its session.
        let via = || Address::via("sh -c 'cut -d\" \" -f6 /proc/$$/stat'").unwrap();
        let ours = nix::unistd::getsid(None).expect("getsid").to_string();
        assert_eq!(session_of(via()).await, ours);
        let apart = session_of(via().without_terminal()).await;
        assert!(!apart.is_empty() && apart != ours, "{apart} vs {ours}");
    }

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let Address::Through(via) =
            Address::via(r#"docker exec -i 'my box' "a \"b\"" c\ d"#).expect("address")
        else {
            panic!("a transport");
        };
        assert_eq!(
            via.argv,
            ["docker", "exec", "-i", "my box", "a \"b\"", "c d"].map(String::from)
        );
        assert!(Address::via("ssh 'open").is_err());
    }

    #[test]
    fn ssh_runs_the_proxy_with_the_far_sides_arguments() {
        let address = Address::ssh("box", Some("ssh -p 2222"), &["-s".into(), "a b;c".into()])
            .expect("address");
        let transport = address.transport().expect("transport");
        assert_eq!(
            transport.argv,
            [
                "ssh", "-p", "2222", "-T", "box", "oino", "proxy", "-s", "'a b;c'"
            ]
            .map(String::from)
        );
        assert_eq!(address.to_string(), "box");
        assert!(Address::ssh("-oProxyCommand=x", None, &[]).is_err());
        assert!(Address::via("  ").is_err());
    }
}
