//! Integration tests: real bash in real PTYs, and the real `oino` binary.

// Expected outputs read best as one format per line.
#![allow(clippy::format_collect)]

mod bounds;
mod calls;
mod cli;
mod detach;
mod e2e;
mod fleet;
mod headless;
mod hosts;
mod input;
mod layers;
mod limits;
mod mcp;
mod one_link;
mod panes;
mod project;
mod project_day;
mod readme;
mod ready;
mod server;
mod ssh;
mod support;
mod tasks;
mod trust;
mod users;
mod vttest;
mod words;
