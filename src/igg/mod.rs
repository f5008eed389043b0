//! Pure gateway logic: how an IGG distributes external requests over its clusters
//! (`dispatch`). Peering (contracts, cost functions, negotiation) grows here.

pub mod broker;
pub mod dispatch;
pub mod peering;
pub mod protocol;
pub mod slots;

pub use dispatch::{Dispatcher, Loads};
