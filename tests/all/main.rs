//! Integration tests: real bash in real PTYs, and the real `oino` binary.

mod calls;
mod cli;
mod detach;
mod support;
mod tasks;
