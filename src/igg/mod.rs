//! Pure gateway logic: the IGG's decisions (`gateway`), how it distributes external requests
//! over its clusters (`dispatch`), peering (cost functions and contracts in `peering`, the
//! negotiation state in `broker`, the messages in `protocol`) and published slots (`slots`).

pub mod broker;
pub mod dispatch;
pub mod gateway;
pub mod peering;
pub mod protocol;
pub mod slots;

pub use dispatch::{Dispatcher, Loads};
