//! Container log files in the CRI format, written the way containerd writes them.
//!
//! Each line of the file is `<RFC3339Nano time> <stream> <tag> <content>\n`
//! where `stream` is `stdout` or `stderr` and `tag` is `F` for a full line or
//! `P` for a partial one (output that ended without a newline, flushed when
//! the process exited). containerd prints the time with Go's `RFC3339Nano`,
//! which drops trailing zeros of the fraction: `2026-11-21T12:15:27.3012003Z`.
//! Observed on containerd 1.6.20 for `printf 'a\nb'; exit 0`:
//!
//! ```text
//! 2026-11-21T12:15:27.301152118Z stdout F a
//! 2026-11-21T12:15:27.3012003Z stdout P b
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use super::clock::Clock;

/// Which output stream of a container a log line came from.
///
/// ```
/// use actlet::cri::mock::{LogStream, parse_cri_log_line};
/// let line = parse_cri_log_line("2026-11-21T12:15:27.3Z stderr F oops").unwrap();
/// assert_eq!(line.stream, LogStream::Stderr);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl LogStream {
    /// The stream's name in a CRI log line.
    ///
    /// ```
    /// use actlet::cri::mock::LogStream;
    /// assert_eq!((LogStream::Stdout.as_str(), LogStream::Stderr.as_str()), ("stdout", "stderr"));
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// One parsed line of a CRI log file.
///
/// ```
/// use actlet::cri::mock::parse_cri_log_line;
/// let line = parse_cri_log_line("2026-11-21T12:15:27.3012003Z stdout P b").unwrap();
/// assert!(line.partial); // output that did not end with a newline
/// assert_eq!(line.content, "b");
/// assert_eq!(line.time.timestamp_subsec_nanos(), 301_200_300);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriLogLine {
    /// When the runtime read the line.
    pub time: DateTime<Utc>,
    /// The stream it came from.
    pub stream: LogStream,
    /// `true` for a `P` (partial) line.
    pub partial: bool,
    /// The text, without the trailing newline.
    pub content: String,
}

/// Parses one CRI log line (without its trailing newline); `None` if malformed.
///
/// ```
/// use actlet::cri::mock::{LogStream, parse_cri_log_line};
/// let line = parse_cri_log_line("2026-11-21T12:15:27.301152118Z stdout F hello world").unwrap();
/// assert_eq!((line.stream, line.partial, line.content.as_str()), (LogStream::Stdout, false, "hello world"));
/// assert!(parse_cri_log_line("hello world").is_none());
/// ```
pub fn parse_cri_log_line(line: &str) -> Option<CriLogLine> {
    let mut parts = line.splitn(4, ' ');
    let time = DateTime::parse_from_rfc3339(parts.next()?).ok()?.with_timezone(&Utc);
    let stream = match parts.next()? {
        "stdout" => LogStream::Stdout,
        "stderr" => LogStream::Stderr,
        _ => return None,
    };
    let partial = match parts.next()? {
        "F" => false,
        "P" => true,
        _ => return None,
    };
    let content = parts.next().unwrap_or("").to_string();
    Some(CriLogLine {
        time,
        stream,
        partial,
        content,
    })
}

/// Formats `t` like Go's `time.RFC3339Nano` in UTC (trailing zeros dropped).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use actlet::cri::mock::rfc3339_nano;
/// let t = UNIX_EPOCH + Duration::new(1_700_000_000, 300_100_000);
/// assert_eq!(rfc3339_nano(t), "2023-11-14T22:13:20.3001Z"); // trailing zeros dropped, like Go
/// assert_eq!(rfc3339_nano(UNIX_EPOCH), "1970-01-01T00:00:00Z");
/// ```
pub fn rfc3339_nano(t: SystemTime) -> String {
    let t: DateTime<Utc> = t.into();
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos == 0 {
        return format!("{base}Z");
    }
    let frac = format!("{nanos:09}");
    format!("{base}.{}Z", frac.trim_end_matches('0'))
}

/// Writes one container's log file; owned by the container's process task.
pub(crate) struct LogWriter {
    path: PathBuf,
    file: File,
    clock: Clock,
    /// Output of each stream not yet ended by a newline.
    pending: [String; 2],
}

impl LogWriter {
    /// Creates (or appends to) the file at `path`, creating its directories.
    pub(crate) fn open(path: &Path, clock: Clock) -> io::Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            file: open_append(path)?,
            clock,
            pending: Default::default(),
        })
    }

    /// Opens the path again (after the kubelet rotated the file away).
    pub(crate) fn reopen(&mut self) -> io::Result<()> {
        self.file = open_append(&self.path)?;
        Ok(())
    }

    /// Records output the process wrote: every completed line becomes an `F`
    /// line; a trailing fragment waits for the rest of its line.
    pub(crate) fn write(&mut self, stream: LogStream, text: &str) -> io::Result<()> {
        let slot = stream_slot(stream);
        self.pending[slot].push_str(text);
        while let Some(pos) = self.pending[slot].find('\n') {
            let line: String = self.pending[slot].drain(..=pos).collect();
            self.emit(stream, false, &line[..line.len() - 1])?;
        }
        Ok(())
    }

    /// The process exited: unfinished lines are written as `P` lines.
    pub(crate) fn close(&mut self) -> io::Result<()> {
        for stream in [LogStream::Stdout, LogStream::Stderr] {
            let rest = std::mem::take(&mut self.pending[stream_slot(stream)]);
            if !rest.is_empty() {
                self.emit(stream, true, &rest)?;
            }
        }
        self.file.flush()
    }

    fn emit(&mut self, stream: LogStream, partial: bool, content: &str) -> io::Result<()> {
        let tag = if partial { "P" } else { "F" };
        let ts = rfc3339_nano(self.clock.now());
        writeln!(self.file, "{ts} {} {tag} {content}", stream.as_str())
    }
}

fn stream_slot(stream: LogStream) -> usize {
    match stream {
        LogStream::Stdout => 0,
        LogStream::Stderr => 1,
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn rfc3339_nano_drops_trailing_zeros_like_go() {
        let t = UNIX_EPOCH + Duration::new(1_795_263_327, 301_200_300);
        assert_eq!(rfc3339_nano(t), "2026-11-21T12:15:27.3012003Z");
        assert_eq!(
            rfc3339_nano(UNIX_EPOCH + Duration::from_secs(1)),
            "1970-01-01T00:00:01Z"
        );
    }

    #[test]
    fn writer_splits_full_and_partial_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c/0.log");
        let fixed = UNIX_EPOCH + Duration::from_secs(5);
        let mut w = LogWriter::open(&path, Clock::from_fn(move || fixed)).unwrap();
        w.write(LogStream::Stdout, "a\nb").unwrap();
        w.write(LogStream::Stderr, "err\n").unwrap();
        w.write(LogStream::Stdout, "c\nd").unwrap();
        w.close().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text.lines().map(|l| parse_cri_log_line(l).unwrap()).collect();
        let got: Vec<_> = lines
            .iter()
            .map(|l| (l.stream, l.partial, l.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (LogStream::Stdout, false, "a"),
                (LogStream::Stderr, false, "err"),
                (LogStream::Stdout, false, "bc"),
                (LogStream::Stdout, true, "d"),
            ]
        );
    }

    #[test]
    fn parser_rejects_garbage() {
        assert!(parse_cri_log_line("hello").is_none());
        assert!(parse_cri_log_line("2026-11-21T12:15:27Z stdin F x").is_none());
        let l = parse_cri_log_line("2026-11-21T12:15:27Z stdout F ").unwrap();
        assert_eq!(l.content, "");
    }
}
