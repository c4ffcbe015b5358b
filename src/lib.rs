//! oino: a terminal process manager. Every shell command ("call") runs in its own PTY; a running
//! call can be detached into a named background task that keeps running, while whoever waited for
//! the call gets the output so far and the detach marker at once.
//!
//! Layers, bottom up: [`time`] and [`paths`] (private folders, files never opened through a
//! link), [`pty`], [`screen`], [`output`], [`registry`], [`call`], [`core`]; then
//! [`remote`] (the server, its protocol and client) and [`link`] (the core here or on a server);
//! and the front ends: the [`interface`], the agent bridge ([`mcp`]) and the command line
//! ([`cli`]).

#![warn(missing_docs)]

pub mod call;
pub mod cli;
pub mod core;
pub mod inert;
pub mod interface;
pub mod link;
pub mod mcp;
pub mod output;
pub mod paths;
pub mod pty;
pub mod registry;
pub mod remote;
pub mod screen;
mod spelling;
pub mod time;
