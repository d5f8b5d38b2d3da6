//! `gate-check baseline REF`: a gate is worth what it can tell apart. Each
//! selected approved runnable gate's check runs on a pristine checkout of
//! REF and on the work tree as it is now, and the gate is judged
//! `discriminates` (fails on REF, passes now), `vacuous` (passes on both),
//! `failing` (fails now) or `unknown` (REF's checkout cannot run it). A
//! gate without approval is reported as such and nothing of it runs.
//!
//! `record` holds the results and their renderings (pure), `run` the run
//! on the checker's machinery; the checkout is `crate::checkout`.

pub mod record;
pub mod run;

use crate::checkout::CheckoutError;
use crate::runner::SandboxError;

/// Why a baseline cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
    /// The runs on REF must be confined, and this machine cannot.
    #[error(
        "runs on {short} are confined, and cannot be here: {source}; pass --unconfined to run that code with your \
         full authority"
    )]
    Unconfinable { short: String, source: SandboxError },
    /// Nothing selected has a CHECK that could run.
    #[error("baseline has no gate to judge: no selected gate has a CHECK (abandoned and manual gates never run)")]
    NothingToJudge,
}
