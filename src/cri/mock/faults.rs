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
        ///
        /// ```
        /// use actlet::cri::mock::{CRI_METHODS, Fault, MockRuntime};
        /// let mock = MockRuntime::new();
        /// for method in CRI_METHODS {
        ///     mock.inject(method, Fault::error(tonic::Code::Unavailable, "maintenance")); // every call fails
        /// }
        /// assert!(CRI_METHODS.contains(&"ExecSync") && CRI_METHODS.len() == 29);
        /// ```
        pub const CRI_METHODS: &[&str] = &[$($grpc,)* $($igrpc,)* "GetContainerEvents"];
    };
}
cri_calls!(method_names);

/// Returns the `'static` name of a CRI method, or `None` if it is unknown.
pub fn cri_method(name: &str) -> Option<&'static str> {
    CRI_METHODS.iter().copied().find(|m| *m == name)
}

/// What a fault does to a call.
///
/// ```
/// use std::time::Duration;
/// use actlet::cri::mock::{Fault, FaultKind};
/// assert_eq!(Fault::hang_for(Duration::from_secs(3)).kind, FaultKind::Hang(Some(Duration::from_secs(3))));
/// assert_eq!(Fault::hang().kind, FaultKind::Hang(None));
/// let by_hand = Fault { kind: FaultKind::Latency(Duration::from_millis(200)), remaining: Some(1) };
/// assert_eq!(by_hand, Fault::latency(Duration::from_millis(200)).times(1));
/// ```
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
///
/// ```
/// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
/// # actlet::testing::run_paused(async {
/// let mock = MockRuntime::new();
/// // queued per method: two errors, then normal answers
/// mock.inject("Version", Fault::error(tonic::Code::Unavailable, "restarting").times(2));
/// assert!(mock.version(Default::default()).await.is_err());
/// assert!(mock.version(Default::default()).await.is_err());
/// assert!(mock.version(Default::default()).await.is_ok());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What happens to an affected call.
    pub kind: FaultKind,
    /// How many more calls it affects; `None` means every call.
    pub remaining: Option<u32>,
}

impl Fault {
    /// Every call fails with `code` and `message`.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().fault("ListContainers", Fault::error(tonic::Code::ResourceExhausted, "too many requests")).build();
    /// let err = mock.list_containers(Default::default()).await.unwrap_err();
    /// assert_eq!(err.to_status().code(), tonic::Code::ResourceExhausted);
    /// assert!(mock.list_containers(Default::default()).await.is_err()); // every call, until cleared
    /// # });
    /// ```
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::always(FaultKind::Error {
            code,
            message: message.into(),
        })
    }

    /// Every call is answered `delay` later than it would be.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().fault("Status", Fault::latency(Duration::from_secs(3))).build();
    /// let start = tokio::time::Instant::now();
    /// assert!(mock.status(Default::default()).await.is_ok()); // slow, but answered
    /// assert_eq!(start.elapsed(), Duration::from_secs(3));
    /// # });
    /// ```
    pub fn latency(delay: Duration) -> Self {
        Self::always(FaultKind::Latency(delay))
    }

    /// Every call hangs until the mock's request timeout, then `DEADLINE_EXCEEDED`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().request_timeout(Duration::from_secs(10)).fault("ListPodSandbox", Fault::hang()).build();
    /// let start = tokio::time::Instant::now();
    /// assert!(mock.list_pod_sandbox(Default::default()).await.unwrap_err().is_deadline_exceeded());
    /// assert_eq!(start.elapsed(), Duration::from_secs(10)); // the mock's request timeout
    /// # });
    /// ```
    pub fn hang() -> Self {
        Self::always(FaultKind::Hang(None))
    }

    /// Every call hangs for `deadline`, then `DEADLINE_EXCEEDED`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().fault("Version", Fault::hang_for(Duration::from_secs(2)).times(1)).build();
    /// let start = tokio::time::Instant::now();
    /// assert!(mock.version(Default::default()).await.unwrap_err().is_deadline_exceeded());
    /// assert_eq!(start.elapsed(), Duration::from_secs(2));
    /// # });
    /// ```
    pub fn hang_for(deadline: Duration) -> Self {
        Self::always(FaultKind::Hang(Some(deadline)))
    }

    /// Every call hangs forever.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{CallOutcome, Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().fault("Version", Fault::hang_forever()).build();
    /// let call = tokio::time::timeout(Duration::from_secs(600), mock.version(Default::default()));
    /// assert!(call.await.is_err()); // only the caller's own deadline ends it
    /// assert_eq!(mock.calls_to("Version")[0].outcome, CallOutcome::InFlight);
    /// # });
    /// ```
    pub fn hang_forever() -> Self {
        Self::always(FaultKind::HangForever)
    }

    /// Limits the fault to the next `n` calls.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.inject("Version", Fault::error(tonic::Code::Internal, "boom").times(1));
    /// assert!(mock.version(Default::default()).await.is_err());
    /// assert!(mock.version(Default::default()).await.is_ok());
    /// # });
    /// ```
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
        assert_eq!(CRI_METHODS.len(), 29);
        assert_eq!(cri_method("ListPodSandboxStats"), Some("ListPodSandboxStats"));
        assert_eq!(cri_method("GetContainerEvents"), Some("GetContainerEvents"));
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
