//! [`PodUid`]: the identity every per-pod message is keyed by.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A pod's `metadata.uid`. Cheap to clone (shared string).
///
/// ```
/// use actlet::messages::PodUid;
/// let uid = PodUid::from("3f1c-uid");
/// let copy = uid.clone(); // shares the string
/// assert_eq!(copy, uid);
/// assert_eq!(format!("{uid} {uid:?}"), "3f1c-uid PodUid(3f1c-uid)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PodUid(Arc<str>);

impl PodUid {
    /// Wraps a UID string.
    ///
    /// ```
    /// let uid = actlet::messages::PodUid::new(String::from("u1"));
    /// assert_eq!(uid.to_string(), "u1");
    /// ```
    pub fn new(uid: impl Into<Arc<str>>) -> Self {
        Self(uid.into())
    }

    /// The UID as text.
    ///
    /// ```
    /// let uid = actlet::messages::PodUid::new("u1");
    /// assert_eq!(uid.as_str(), "u1");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PodUid({})", self.0)
    }
}

/// Lets maps keyed by `PodUid` be looked up by `&str` (the hash is the string's).
impl std::borrow::Borrow<str> for PodUid {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for PodUid {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for PodUid {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}
