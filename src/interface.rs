//! The full-screen interface: [`app`] state, [`ui`] drawing, [`tui`] the terminal and its event
//! loop, [`headless`] the same loop driven by a script.

pub mod app;
pub mod headless;
pub mod tui;
pub mod ui;
