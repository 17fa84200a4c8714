//! The error every CRI call returns.

use tonic::Code;

/// A failed CRI call: which call, the gRPC status code and the runtime's message.
///
/// Both the tonic client and the mock return this type, so callers can match on
/// [`CriError::code`] the same way for either. Retryability: `Unavailable` and
/// `DeadlineExceeded` mean the runtime may come back or the call may succeed
/// later; `NotFound` means the object is gone; everything else is reported as is.
///
/// ```
/// use actlet::cri::CriError;
/// use tonic::Code;
/// let err = CriError::new("RemoveContainer", Code::NotFound, "container \"c1\" not found");
/// assert!(err.is_not_found());
/// assert_eq!(err.to_string(), "CRI RemoveContainer failed (NotFound): container \"c1\" not found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CRI {method} failed ({code:?}): {message}")]
pub struct CriError {
    /// The CRI method, e.g. `"RunPodSandbox"`.
    pub method: &'static str,
    /// The gRPC status code.
    pub code: Code,
    /// The runtime's message, unchanged.
    pub message: String,
}

impl CriError {
    /// Builds an error for `method` with `code` and `message`.
    ///
    /// ```
    /// let err = actlet::cri::CriError::new("Version", tonic::Code::Unavailable, "connection refused");
    /// assert_eq!((err.method, err.code), ("Version", tonic::Code::Unavailable));
    /// ```
    pub fn new(method: &'static str, code: Code, message: impl Into<String>) -> Self {
        Self {
            method,
            code,
            message: message.into(),
        }
    }

    /// Converts a tonic status returned by `method`.
    ///
    /// tonic's own client timer (the call's deadline passing before the
    /// runtime answered) reports `CANCELLED "Timeout expired"`; that is the
    /// same event as the runtime's `DEADLINE_EXCEEDED`, so it is mapped to it.
    /// A connection that broke under a call (the runtime died) comes back as
    /// `UNKNOWN "transport error"`; that is the runtime being unavailable.
    ///
    /// ```
    /// use actlet::cri::CriError;
    /// // tonic's own timer firing is the call's deadline passing
    /// let err = CriError::from_status("StopContainer", tonic::Status::cancelled("Timeout expired"));
    /// assert!(err.is_deadline_exceeded());
    /// ```
    pub fn from_status(method: &'static str, status: tonic::Status) -> Self {
        let code = match status.code() {
            Code::Cancelled if status.message().contains("Timeout expired") => Code::DeadlineExceeded,
            Code::Unknown if status.message().starts_with("transport error") => Code::Unavailable,
            c => c,
        };
        Self::new(method, code, status.message())
    }

    /// The gRPC status this error is served as (mock runtime over gRPC).
    ///
    /// ```
    /// let err = actlet::cri::CriError::new("PullImage", tonic::Code::NotFound, "no such image");
    /// let status = err.to_status();
    /// assert_eq!((status.code(), status.message()), (tonic::Code::NotFound, "no such image"));
    /// ```
    pub fn to_status(&self) -> tonic::Status {
        tonic::Status::new(self.code, self.message.clone())
    }

    /// The object named in the request does not exist.
    ///
    /// ```
    /// assert!(actlet::cri::CriError::new("ContainerStatus", tonic::Code::NotFound, "gone").is_not_found());
    /// ```
    pub fn is_not_found(&self) -> bool {
        self.code == Code::NotFound
    }

    /// The runtime could not be reached (socket gone, connection refused).
    ///
    /// ```
    /// use actlet::cri::CriError;
    /// // a connection that broke under the call
    /// assert!(CriError::from_status("Version", tonic::Status::unknown("transport error")).is_unavailable());
    /// ```
    pub fn is_unavailable(&self) -> bool {
        self.code == Code::Unavailable
    }

    /// The call's deadline passed before the runtime answered.
    ///
    /// ```
    /// use actlet::cri::CriError;
    /// assert!(CriError::new("ExecSync", tonic::Code::DeadlineExceeded, "timeout").is_deadline_exceeded());
    /// ```
    pub fn is_deadline_exceeded(&self) -> bool {
        self.code == Code::DeadlineExceeded
    }
}

/// Result of a CRI call.
///
/// ```
/// use actlet::cri::{CriError, CriResult};
/// fn remove(id: &str) -> CriResult<()> {
///     Err(CriError::new("RemoveContainer", tonic::Code::NotFound, format!("container {id:?} not found")))
/// }
/// assert!(remove("c1").is_err_and(|e| e.is_not_found()));
/// ```
pub type CriResult<T> = Result<T, CriError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_timer_expiry_is_deadline_exceeded() {
        let e = CriError::from_status("StopContainer", tonic::Status::cancelled("Timeout expired"));
        assert!(e.is_deadline_exceeded());
        let e = CriError::from_status("StopContainer", tonic::Status::cancelled("client went away"));
        assert_eq!(e.code, Code::Cancelled);
    }

    #[test]
    fn broken_connection_is_unavailable() {
        let e = CriError::from_status("Version", tonic::Status::unknown("transport error"));
        assert!(e.is_unavailable());
        let e = CriError::from_status(
            "RunPodSandbox",
            tonic::Status::unknown("failed to reserve sandbox name"),
        );
        assert_eq!(e.code, Code::Unknown);
    }
}
