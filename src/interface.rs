//! The full-screen interface, bottom up: [`app`] state (keymap, layout, keys), [`ui`] drawing,
//! the [`event_loop`] shared by the [`terminal`] and [`headless`] mode.

pub mod app;
pub mod event_loop;
pub mod headless;
pub(crate) mod picture;
pub mod terminal;
pub mod ui;
