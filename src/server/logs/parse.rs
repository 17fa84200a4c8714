//! The CRI container log format and the selection `/containerLogs` applies
//! to it (upstream `pkg/kubelet/kuberuntime/logs`).
//!
//! A file line is `TIMESTAMP STREAM TAG CONTENT`: an RFC 3339 timestamp,
//! `stdout` or `stderr`, `P` for a partial line (the runtime split a long
//! line; the next entry continues it) or `F` for the end of a line.

use jiff::Timestamp;

/// Which stream an entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

/// One file line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// When the runtime wrote it.
    pub timestamp: Timestamp,
    /// Its stream.
    pub stream: LogStream,
    /// `P`: the line goes on in the next entry of the same stream.
    pub partial: bool,
    /// The text, without a newline.
    pub content: Vec<u8>,
}

/// A file line that is not in the CRI format.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid CRI log line: {0}")]
pub struct ParseError(pub String);

/// Parses one file line (without its trailing newline).
pub fn parse_line(line: &[u8]) -> Result<LogEntry, ParseError> {
    let bad = |why: &str| {
        ParseError(format!(
            "{why} in {:?}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        ))
    };
    let mut fields = line.splitn(4, |b| *b == b' ');
    let ts = fields.next().ok_or_else(|| bad("no timestamp"))?;
    let ts = std::str::from_utf8(ts)
        .ok()
        .and_then(|s| s.parse::<Timestamp>().ok())
        .ok_or_else(|| bad("bad timestamp"))?;
    let stream = match fields.next() {
        Some(b"stdout") => LogStream::Stdout,
        Some(b"stderr") => LogStream::Stderr,
        _ => return Err(bad("bad stream")),
    };
    // Older runtimes wrote no tag: the rest is the content of a full line.
    let rest = fields.next().ok_or_else(|| bad("no tag"))?;
    let (partial, content) = match (rest, fields.next()) {
        (b"P", content) => (true, content.unwrap_or_default().to_vec()),
        (b"F", content) => (false, content.unwrap_or_default().to_vec()),
        (first, more) => {
            let mut content = first.to_vec();
            if let Some(more) = more {
                content.push(b' ');
                content.extend_from_slice(more);
            }
            (false, content)
        }
    };
    Ok(LogEntry {
        timestamp: ts,
        stream,
        partial,
        content,
    })
}

/// A logical line: entries joined until an `F`, stamped with its first entry's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The first entry's timestamp.
    pub timestamp: Timestamp,
    /// Its stream.
    pub stream: LogStream,
    /// Joined content, with a trailing newline unless the file ended mid-line.
    pub content: Vec<u8>,
    /// The line's last entry was partial (the file ends inside it).
    pub unfinished: bool,
}

/// Joins parsed entries into lines, per stream. Malformed file lines are
/// skipped (upstream logs and skips them too).
#[derive(Debug, Default)]
pub struct LineJoiner {
    open: Vec<LogLine>,
}

impl LineJoiner {
    /// Feeds one file line; returns the logical line it completes, if any.
    pub fn push(&mut self, raw: &[u8]) -> Option<LogLine> {
        let entry = match parse_line(raw) {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "skipping a log line");
                return None;
            }
        };
        let pos = self.open.iter().position(|l| l.stream == entry.stream);
        let mut line = match pos {
            Some(i) => self.open.remove(i),
            None => LogLine {
                timestamp: entry.timestamp,
                stream: entry.stream,
                content: vec![],
                unfinished: true,
            },
        };
        line.content.extend_from_slice(&entry.content);
        if entry.partial {
            self.open.push(line);
            None
        } else {
            line.content.push(b'\n');
            line.unfinished = false;
            Some(line)
        }
    }

    /// The lines still open (the file ended inside them), oldest first.
    pub fn take_open(&mut self) -> Vec<LogLine> {
        std::mem::take(&mut self.open)
    }
}

/// Every logical line of a whole file's bytes (the last, unfinished ones included).
pub fn parse_all(data: &[u8]) -> Vec<LogLine> {
    let mut joiner = LineJoiner::default();
    let mut lines: Vec<LogLine> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| joiner.push(l))
        .collect();
    lines.extend(joiner.take_open());
    lines
}

/// What to return (`PodLogOptions` as the kubelet reads them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// `tailLines`: only the last N lines.
    pub tail_lines: Option<u64>,
    /// `sinceTime`/`sinceSeconds`, resolved: only lines at or after it.
    pub since: Option<Timestamp>,
    /// `limitBytes`: stop after this many bytes.
    pub limit_bytes: Option<u64>,
    /// `timestamps`: prefix each line with its time.
    pub timestamps: bool,
    /// `follow`: keep streaming new lines.
    pub follow: bool,
    /// `previous`: the previous instance of the container.
    pub previous: bool,
}

/// The lines of `lines` that `opts` selects (since, then tail).
pub fn select(lines: Vec<LogLine>, opts: &LogOptions) -> Vec<LogLine> {
    let mut lines: Vec<LogLine> = match opts.since {
        Some(since) => lines.into_iter().filter(|l| l.timestamp >= since).collect(),
        None => lines,
    };
    if let Some(n) = opts.tail_lines {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let skip = lines.len().saturating_sub(n);
        lines.drain(..skip);
    }
    lines
}

/// Upstream's output time format (RFC 3339 with 9 fraction digits, UTC).
pub fn format_timestamp(ts: Timestamp) -> String {
    format!("{}.{:09}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"), ts.subsec_nanosecond())
}

/// Renders a line as the response carries it.
pub fn render(line: &LogLine, timestamps: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.content.len() + 32);
    if timestamps {
        out.extend_from_slice(format_timestamp(line.timestamp).as_bytes());
        out.push(b' ');
    }
    out.extend_from_slice(&line.content);
    out
}

/// Counts bytes against `limitBytes`.
#[derive(Debug)]
pub struct ByteBudget(Option<u64>);

impl ByteBudget {
    /// A budget of `limit` bytes (`None`: unlimited).
    pub fn new(limit: Option<u64>) -> Self {
        Self(limit)
    }

    /// Cuts `chunk` to what is left; `None` once the budget is spent.
    pub fn take(&mut self, mut chunk: Vec<u8>) -> Option<Vec<u8>> {
        match &mut self.0 {
            None => Some(chunk),
            Some(0) => None,
            Some(left) => {
                let n = (*left).min(chunk.len() as u64);
                chunk.truncate(n as usize);
                *left -= n;
                Some(chunk)
            }
        }
    }

    /// Nothing more may be written.
    pub fn spent(&self) -> bool {
        self.0 == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "2024-05-01T10:00:00.000000001Z stdout F one\n\
2024-05-01T10:00:01Z stderr F two\n\
2024-05-01T10:00:02.5Z stdout P thr\n\
2024-05-01T10:00:02.6Z stderr F four\n\
2024-05-01T10:00:03Z stdout F ee\n\
garbage line\n\
2024-05-01T10:00:04+02:00 stdout F five\n\
2024-05-01T10:00:05Z stdout P six-unfinished";

    fn texts(lines: &[LogLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| String::from_utf8_lossy(&l.content).into_owned())
            .collect()
    }

    #[test]
    fn parses_entries_with_tags_and_without() {
        let e = parse_line(b"2016-10-06T00:17:09.669794202Z stdout P part of it").unwrap();
        assert_eq!(
            (e.stream, e.partial, e.content.as_slice()),
            (LogStream::Stdout, true, b"part of it".as_slice())
        );
        let e = parse_line(b"2016-10-06T00:17:09Z stderr F ").unwrap();
        assert_eq!((e.stream, e.content.len()), (LogStream::Stderr, 0));
        assert!(parse_line(b"yesterday stdout F x").is_err());
        assert!(parse_line(b"2016-10-06T00:17:09Z stdin F x").is_err());
    }

    #[test]
    fn partial_entries_join_per_stream_and_garbage_is_skipped() {
        let lines = parse_all(FILE.as_bytes());
        assert_eq!(
            texts(&lines),
            ["one\n", "two\n", "four\n", "three\n", "five\n", "six-unfinished"]
        );
        assert!(lines[5].unfinished);
        // a joined line keeps its first entry's time
        assert_eq!(
            lines[3].timestamp,
            "2024-05-01T10:00:02.5Z".parse::<Timestamp>().unwrap()
        );
        // the +02:00 offset is honoured: 08:00 UTC
        assert_eq!(lines[4].timestamp, "2024-05-01T08:00:04Z".parse::<Timestamp>().unwrap());
    }

    #[test]
    fn tail_and_since_select_lines() {
        let all = parse_all(FILE.as_bytes());
        let opts = LogOptions {
            tail_lines: Some(2),
            ..Default::default()
        };
        assert_eq!(texts(&select(all.clone(), &opts)), ["five\n", "six-unfinished"]);
        let opts = LogOptions {
            tail_lines: Some(0),
            ..Default::default()
        };
        assert!(select(all.clone(), &opts).is_empty());
        let opts = LogOptions {
            since: Some("2024-05-01T10:00:02Z".parse().unwrap()),
            ..Default::default()
        };
        assert_eq!(
            texts(&select(all.clone(), &opts)),
            ["four\n", "three\n", "six-unfinished"]
        );
        let opts = LogOptions {
            since: Some("2024-05-01T10:00:01Z".parse().unwrap()),
            tail_lines: Some(10),
            ..Default::default()
        };
        assert_eq!(select(all, &opts).len(), 4);
    }

    #[test]
    fn timestamps_use_nine_fraction_digits() {
        let line = &parse_all(FILE.as_bytes())[0];
        assert_eq!(render(line, true), b"2024-05-01T10:00:00.000000001Z one\n");
        assert_eq!(render(line, false), b"one\n");
    }

    #[test]
    fn byte_budget_truncates_then_stops() {
        let mut b = ByteBudget::new(Some(5));
        assert_eq!(b.take(b"abc".to_vec()), Some(b"abc".to_vec()));
        assert_eq!(b.take(b"defg".to_vec()), Some(b"de".to_vec()));
        assert!(b.spent());
        assert_eq!(b.take(b"h".to_vec()), None);
        let mut unlimited = ByteBudget::new(None);
        assert_eq!(unlimited.take(vec![1; 100]).map(|v| v.len()), Some(100));
    }
}
