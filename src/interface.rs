//! The full-screen interface, bottom up: [`app`] state (keymap, layout, keys), [`ui`] drawing,
//! the [`event_loop`] shared by the [`terminal`] and [`headless`] mode, on the servers of a
//! [`fleet`] (this machine's and far hosts'); `fit` cuts text to a width for both; `clipboard`
//! takes what is copied.

pub mod app;
pub(crate) mod clipboard;
pub mod event_loop;
pub(crate) mod fit;
pub mod fleet;
pub mod headless;
pub(crate) mod picture;
pub mod terminal;
pub mod ui;
