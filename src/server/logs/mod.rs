//! `/containerLogs`: the CRI log format ([`parse`]) and reading a file with
//! the `PodLogOptions` the kubelet accepts ([`read`]).

pub mod parse;
pub mod read;

pub use parse::{LogOptions, LogStream};
pub use read::{LogReader, ReadError, StillRunning};
