//! External policies: a decision point answered by a child process over the decision
//! protocol (`protocol.rs`, `docs/policies.md`). A topology names one `external:CMD ARGS`;
//! the run starts CMD once (one process per distinct command, serving every site that names
//! it), greets it, and its proxies (`proxy.rs`) ask it each decision. In virtual time the
//! emulation waits for each answer — a deterministic process gives byte-identical outputs.

mod gateway;
mod process;
pub mod protocol;
mod proxy;
#[cfg(test)]
mod tests;

pub use gateway::{ExternalGateway, GatewaySetup};
pub use process::Process;
pub use protocol::Names;
pub(crate) use proxy::{
    ExternalAdmission, ExternalAnswer, ExternalDispatch, ExternalOffer, ExternalPreemption, Proxy,
};
