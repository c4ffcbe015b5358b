//! `oino proxy`: this user's server on standard input and output, for a transport (ssh, `docker
//! exec -i`) to carry the protocol to a client on another machine. It connects as any client
//! does (the server started when none runs, refused unless it is this user's own), then carries
//! bytes both ways, unread, until either side closes.

use std::path::Path;

use tokio::io::{AsyncWriteExt, BufReader};

use crate::remote::address::Address;
use crate::remote::client::Client;
use crate::remote::protocol::{PROTOCOL_VERSION, requests};

/// Bytes carried at a time.
const CARRY_BYTES: usize = 64 * 1024;

/// Carries standard input to the server at `socket` and its answers to standard output, until
/// either closes.
pub async fn carry(socket: &Path) -> anyhow::Result<()> {
    let mut client = Client::connect_or_start(&Address::Socket(socket.to_owned())).await?;
    client
        .ask(requests::Hello {
            version: PROTOCOL_VERSION,
            relayed: true,
        })
        .await?;
    let (mut from_server, mut to_server) = client.into_parts();
    let mut stdout = tokio::io::stdout();
    let mut stdin = BufReader::with_capacity(CARRY_BYTES, tokio::io::stdin());
    let up = async {
        tokio::io::copy_buf(&mut stdin, &mut to_server).await?;
        // The client is done: the server sees the end, answers what it was asked, and closes.
        to_server.shutdown().await
    };
    let down = async {
        tokio::io::copy_buf(&mut from_server, &mut stdout).await?;
        stdout.flush().await
    };
    tokio::pin!(up, down);
    tokio::select! {
        // The server closed: nothing more can come.
        done = &mut down => done?,
        up_done = &mut up => {
            up_done?;
            down.await?;
        }
    }
    Ok(())
}
