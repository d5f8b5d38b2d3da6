//! Approval: the exact identity of a runnable oracle (pure) and the
//! owner-private store of records that say a person consented to run it.

pub mod changes;
mod identity;
pub mod store;

pub use identity::{Consent, Oracle, Terms};
