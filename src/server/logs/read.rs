//! Reading a container's CRI log file for `/containerLogs`: the selected
//! lines of what is there, then, with `follow`, new lines as they are
//! written — across a rotation (the old file is drained, then the new one
//! at the same path is read from its start) — until the container is no
//! longer running and everything was sent, `limitBytes` is spent, or the
//! client goes away.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use super::parse::{ByteBudget, LineJoiner, LogLine, LogOptions, render, select};

/// How often a followed file is checked for new data.
pub const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Whether the container is still running (it may write more).
pub type StillRunning = Arc<dyn Fn() -> bool + Send + Sync>;

/// What the response body receives.
pub type Chunks = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// The log file cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("failed to read log file {path}: {source}")]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

/// An open log file and what was read of it.
pub struct LogReader {
    path: PathBuf,
    file: tokio::fs::File,
    /// Bytes after the last newline read (a file line being written).
    pending: Vec<u8>,
    joiner: LineJoiner,
    opts: LogOptions,
    budget: ByteBudget,
}

impl LogReader {
    /// Opens `path`; fails (before any byte is sent) when it cannot be read.
    pub async fn open(path: &Path, opts: LogOptions) -> Result<Self, ReadError> {
        let file = tokio::fs::File::open(path).await.map_err(|source| ReadError {
            path: path.into(),
            source,
        })?;
        Ok(Self {
            path: path.into(),
            file,
            pending: vec![],
            joiner: LineJoiner::default(),
            budget: ByteBudget::new(opts.limit_bytes),
            opts,
        })
    }

    /// Reads what the current file has left; returns the completed lines.
    async fn read_more(&mut self) -> std::io::Result<Vec<LogLine>> {
        let mut buf = vec![];
        self.file.read_to_end(&mut buf).await?;
        if buf.is_empty() {
            return Ok(vec![]);
        }
        self.pending.extend_from_slice(&buf);
        let Some(last_nl) = self.pending.iter().rposition(|b| *b == b'\n') else {
            return Ok(vec![]);
        };
        let rest = self.pending.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.pending, rest);
        Ok(complete
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| self.joiner.push(l))
            .collect())
    }

    /// Sends `lines`; `false` when the client is gone or the budget is spent.
    async fn send(&mut self, lines: Vec<LogLine>, out: &Chunks) -> bool {
        for line in lines {
            if self.opts.since.is_some_and(|since| line.timestamp < since) {
                continue;
            }
            let Some(chunk) = self.budget.take(render(&line, self.opts.timestamps)) else {
                return false;
            };
            if out.send(Ok(Bytes::from(chunk))).await.is_err() {
                return false;
            }
        }
        !self.budget.spent()
    }

    /// The path now names another file than the one open (rotated).
    async fn rotated(&self) -> bool {
        let (Ok(open), Ok(now)) = (self.file.metadata().await, tokio::fs::metadata(&self.path).await) else {
            return false;
        };
        open.ino() != now.ino() || open.dev() != now.dev()
    }

    /// Streams the selection, then (with `follow`) new lines, into `out`.
    pub async fn run(mut self, out: Chunks, still_running: StillRunning) {
        let first = match self.read_more().await {
            Ok(lines) => lines,
            Err(e) => {
                let _ = out.send(Err(e)).await;
                return;
            }
        };
        let mut first = first;
        if !self.opts.follow {
            // the end of the file as it is: unfinished lines count too
            let rest = std::mem::take(&mut self.pending);
            if !rest.is_empty() {
                first.extend(self.joiner.push(&rest));
            }
            first.extend(self.joiner.take_open());
        }
        let selected = select(first, &self.opts);
        if !self.send(selected, &out).await || !self.opts.follow {
            return;
        }
        loop {
            tokio::select! {
                _ = tokio::time::sleep(FOLLOW_POLL) => {}
                _ = out.closed() => return,
            }
            let lines = match self.read_more().await {
                Ok(l) => l,
                Err(e) => {
                    let _ = out.send(Err(e)).await;
                    return;
                }
            };
            let got_any = !lines.is_empty();
            if !self.send(lines, &out).await {
                return;
            }
            if got_any {
                continue;
            }
            if self.rotated().await {
                match tokio::fs::File::open(&self.path).await {
                    Ok(f) => {
                        tracing::debug!(path = %self.path.display(), "log file rotated; following the new one");
                        self.file = f;
                        self.pending.clear();
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // not recreated yet
                    Err(e) => {
                        let _ = out.send(Err(e)).await;
                        return;
                    }
                }
            }
            if !still_running() {
                // one last look: the container may have written before exiting
                if let Ok(lines) = self.read_more().await {
                    let mut lines = lines;
                    lines.extend(self.joiner.take_open());
                    self.send(lines, &out).await;
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn collect(mut rx: mpsc::Receiver<Result<Bytes, std::io::Error>>) -> tokio::task::JoinHandle<String> {
        tokio::spawn(async move {
            let mut s = String::new();
            while let Some(Ok(b)) = rx.recv().await {
                s.push_str(&String::from_utf8_lossy(&b));
            }
            s
        })
    }

    #[tokio::test]
    async fn limit_bytes_cuts_mid_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        std::fs::write(
            &path,
            "2024-01-01T00:00:00Z stdout F hello\n2024-01-01T00:00:01Z stdout F world\n",
        )
        .unwrap();
        let opts = LogOptions {
            limit_bytes: Some(8),
            ..Default::default()
        };
        let (tx, rx) = mpsc::channel(16);
        let reader = LogReader::open(&path, opts).await.unwrap();
        reader.run(tx, Arc::new(|| false)).await;
        assert_eq!(collect(rx).await.unwrap(), "hello\nwo");
    }

    #[tokio::test]
    async fn follow_streams_new_lines_across_rotation_until_exit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        std::fs::write(&path, "2024-01-01T00:00:00Z stdout F old\n").unwrap();
        let running = Arc::new(AtomicBool::new(true));
        let r = running.clone();
        let opts = LogOptions {
            follow: true,
            tail_lines: Some(1),
            ..Default::default()
        };
        let (tx, rx) = mpsc::channel(16);
        let reader = LogReader::open(&path, opts).await.unwrap();
        let task = tokio::spawn(reader.run(tx, Arc::new(move || r.load(Ordering::SeqCst))));
        let out = collect(rx);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        write!(f, "2024-01-01T00:00:01Z stdout P par").unwrap();
        f.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        writeln!(f, "\n2024-01-01T00:00:02Z stdout F tial").unwrap();
        // rotate: rename, and the runtime reopens a fresh file at the path
        writeln!(f, "2024-01-01T00:00:03Z stdout F last-in-old").unwrap();
        std::fs::rename(&path, dir.path().join("0.log.20240101")).unwrap();
        std::fs::write(&path, "2024-01-01T00:00:04Z stderr F new-file\n").unwrap();
        tokio::time::sleep(Duration::from_millis(900)).await;
        running.store(false, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out.await.unwrap(), "old\npartial\nlast-in-old\nnew-file\n");
    }

    #[tokio::test]
    async fn missing_file_is_an_error_before_streaming() {
        let e = match LogReader::open(Path::new("/nonexistent/0.log"), LogOptions::default()).await {
            Err(e) => e,
            Ok(_) => panic!("opened a missing file"),
        };
        assert!(e.to_string().contains("/nonexistent/0.log"), "{e}");
    }
}
