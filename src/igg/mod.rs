//! Pure gateway logic: the IGG's decisions (`gateway`), how it distributes external requests
//! over its clusters (`dispatch`), peering (cost functions and contracts in `peering`, the
//! negotiation state in `broker`, the messages in `protocol`, the promises a Grid can keep in
//! `promise`) and published slots (`slots`).

pub(crate) mod backoff;
pub(crate) mod broker;
pub mod dispatch;
pub(crate) mod gateway;
pub mod negotiation;
pub(crate) mod peering;
pub(crate) mod promise;
pub(crate) mod protocol;
pub(crate) mod slots;

pub use broker::Outcomes;
pub use dispatch::{
    pap_rates, ClusterModel, Dispatch, DispatchAsk, DispatchName, DispatchSetup, Loads,
};
pub use gateway::{DveNote, Effect, Gateway, GatewaySettings, Input, Observation, Timer};
pub use peering::{Answer, Contract, ContractKind, CostModel, NegotiationId, PriceRange};
pub use protocol::{Item, PeerMsg};
pub use slots::Published;
