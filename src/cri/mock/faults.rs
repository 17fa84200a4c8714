//! Fault injection per CRI method, and the "runtime down" switch.
//!
//! A [`Fault`] is attached to one CRI method by its gRPC name
//! (`"RunPodSandbox"`, see [`CRI_METHODS`]) and applies to the next N calls
//! of that method or to all of them. Faults of one method are queued: each
//! call consumes the first one that is still active. Faults act before the
//! call does anything, so a failed or hung call has no effect on the state.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tonic::Code;

use crate::cri::runtime::cri_calls;

macro_rules! method_names {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        /// The gRPC name of every CRI method the mock serves.
        pub const CRI_METHODS: &[&str] = &[$($grpc,)* $($igrpc,)*];
    };
}
cri_calls!(method_names);

/// Returns the `'static` name of a CRI method, or `None` if it is unknown.
pub fn cri_method(name: &str) -> Option<&'static str> {
    CRI_METHODS.iter().copied().find(|m| *m == name)
}

/// What a fault does to a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Fail at once with this gRPC code and message.
    Error {
        /// The gRPC status code.
        code: Code,
        /// The message.
        message: String,
    },
    /// Wait this long (tokio time), then handle the call normally.
    Latency(Duration),
    /// Never answer until the deadline (the mock's request timeout when
    /// `None`), then fail with `DEADLINE_EXCEEDED`.
    Hang(Option<Duration>),
    /// Never answer at all; only the caller's own deadline ends the call.
    HangForever,
}

/// A fault for one method: what it does and for how many calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What happens to an affected call.
    pub kind: FaultKind,
    /// How many more calls it affects; `None` means every call.
    pub remaining: Option<u32>,
}

impl Fault {
    /// Every call fails with `code` and `message`.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::always(FaultKind::Error {
            code,
            message: message.into(),
        })
    }

    /// Every call is answered `delay` later than it would be.
    pub fn latency(delay: Duration) -> Self {
        Self::always(FaultKind::Latency(delay))
    }

    /// Every call hangs until the mock's request timeout, then `DEADLINE_EXCEEDED`.
    pub fn hang() -> Self {
        Self::always(FaultKind::Hang(None))
    }

    /// Every call hangs for `deadline`, then `DEADLINE_EXCEEDED`.
    pub fn hang_for(deadline: Duration) -> Self {
        Self::always(FaultKind::Hang(Some(deadline)))
    }

    /// Every call hangs forever.
    pub fn hang_forever() -> Self {
        Self::always(FaultKind::HangForever)
    }

    /// Limits the fault to the next `n` calls.
    pub fn times(mut self, n: u32) -> Self {
        self.remaining = Some(n);
        self
    }

    fn always(kind: FaultKind) -> Self {
        Self { kind, remaining: None }
    }
}

/// The faults in force, per method, plus the global down switch.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    per_method: HashMap<&'static str, VecDeque<Fault>>,
    down: bool,
}

impl Faults {
    pub(crate) fn push(&mut self, method: &'static str, fault: Fault) {
        if fault.remaining != Some(0) {
            self.per_method.entry(method).or_default().push_back(fault);
        }
    }

    pub(crate) fn clear(&mut self, method: Option<&'static str>) {
        match method {
            Some(m) => drop(self.per_method.remove(m)),
            None => self.per_method.clear(),
        }
    }

    pub(crate) fn set_down(&mut self, down: bool) {
        self.down = down;
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down
    }

    /// The fault that applies to this call of `method`, consuming one use.
    pub(crate) fn take(&mut self, method: &'static str) -> Option<FaultKind> {
        let queue = self.per_method.get_mut(method)?;
        let front = queue.front_mut()?;
        let kind = front.kind.clone();
        if let Some(n) = front.remaining.as_mut() {
            *n -= 1;
            if *n == 0 {
                queue.pop_front();
            }
        }
        Some(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_table_is_complete() {
        assert_eq!(CRI_METHODS.len(), 23);
        assert_eq!(cri_method("ExecSync"), Some("ExecSync"));
        assert_eq!(cri_method("execsync"), None);
    }

    #[test]
    fn counted_faults_expire_in_order() {
        let mut f = Faults::default();
        f.push("Version", Fault::error(Code::Internal, "x").times(2));
        f.push("Version", Fault::latency(Duration::from_secs(1)));
        assert!(matches!(f.take("Version"), Some(FaultKind::Error { .. })));
        assert!(matches!(f.take("Version"), Some(FaultKind::Error { .. })));
        assert_eq!(f.take("Version"), Some(FaultKind::Latency(Duration::from_secs(1))));
        assert_eq!(f.take("Version"), Some(FaultKind::Latency(Duration::from_secs(1))));
        assert_eq!(f.take("Status"), None);
    }
}
