//! The per-user server that keeps processes alive across windows: the [`protocol`] on its socket,
//! the [`server`] and the [`client`].

pub mod address;
pub mod client;
pub mod dispatch;
pub mod protocol;
pub mod proxy;
pub mod ready;
pub mod server;
pub mod socket;
