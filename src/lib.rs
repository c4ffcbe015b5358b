//! oino: a terminal process manager. Every shell command ("call") runs in its own PTY; a running
//! call can be detached into a named background task that keeps running, while whoever waited for
//! the call gets the output so far and the detach marker at once.
//!
//! Layers, bottom up: [`pty`], [`screen`], [`output`], [`registry`], [`call`], [`tasks`],
//! [`core`], and the front ends: the interface ([`app`] state, [`ui`] drawing, [`tui`] terminal
//! and event loop, [`headless`] scripts), the [`server`] with its [`protocol`] and [`client`],
//! the agent bridge ([`mcp`]), and the command line ([`cli`]).

pub mod app;
pub mod call;
pub mod cli;
pub mod client;
pub mod core;
pub mod headless;
pub mod link;
pub mod mcp;
pub mod output;
pub mod protocol;
pub mod pty;
pub mod registry;
pub mod screen;
pub mod server;
pub mod tasks;
pub mod tui;
pub mod ui;
