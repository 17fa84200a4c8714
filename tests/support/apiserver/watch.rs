//! Watch streams: `200`, headers at once, then one `{"type","object"}` JSON line per event in
//! HTTP/1.1 chunks (cut like Go's 2048-byte buffer), BOOKMARKs near the deadline, and a clean
//! end (terminating chunk) at `timeoutSeconds` or when the watch cache drops its watchers.
//!
//! Bookmarks follow v1.24's cacher: a watcher remembers the RV it started from (raised to the
//! last event it was replayed at start, but not by live events); a bookmark carries the RV of
//! the last event of that resource the cache dispatched and is sent only when newer. They go
//! out 2 s and 1 s before the deadline and every `bookmark_interval`.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use super::http::{self, GoBufWriter};
use super::resources::{Rid, bookmark_object};
use super::selectors::Filter;
use super::store::{Change, ChangeType, State};

pub struct WatchPlan {
    pub rid: Rid,
    pub filter: Filter,
    /// Events replayed at start (history after the RV, or synthetic ADDEDs for RV 0).
    pub init: Vec<Value>,
    /// An ERROR event (410): sent alone, then the stream ends at once.
    pub error: Option<Value>,
    pub rx: Option<UnboundedReceiver<Arc<Change>>>,
    pub timeout: Duration,
    pub bookmarks: bool,
    pub bookmark_interval: Duration,
    /// Live events and bookmarks must be newer than this RV.
    pub threshold: u64,
    pub headers: Vec<(String, String)>,
}

pub fn event(kind: &str, object: Value) -> Value {
    json!({"type": kind, "object": object})
}

/// What a watcher with `filter` sees of a change (Go's `convertToWatchEvent`): an object that
/// starts matching is ADDED, one that stops matching DELETED (its previous state with the
/// change's RV).
pub fn convert(change: &Change, filter: &Filter) -> Option<Value> {
    let cur = change.kind != ChangeType::Deleted && filter.matches(&change.object);
    let old = change.prev.as_ref().is_some_and(|p| filter.matches(p));
    match (cur, old) {
        (true, false) => Some(event("ADDED", (*change.object).clone())),
        (true, true) => Some(event("MODIFIED", (*change.object).clone())),
        (false, true) => {
            let mut obj = (**change.prev.as_ref().expect("prev")).clone();
            obj["metadata"]["resourceVersion"] = change.rv.to_string().into();
            Some(event("DELETED", obj))
        }
        (false, false) => None,
    }
}

fn line(ev: &Value) -> Vec<u8> {
    let mut v = serde_json::to_vec(ev).expect("json");
    v.push(b'\n');
    v
}

pub async fn run<R, W>(
    state: &Mutex<State>,
    mut plan: WatchPlan,
    rd: &mut R,
    buf: &mut Vec<u8>,
    wr: &mut W,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let start = Instant::now();
    let deadline = start + plan.timeout;
    let mut headers = plan.headers.clone();
    headers.push(("Transfer-Encoding".into(), "chunked".into()));
    wr.write_all(&http::head(200, &headers)).await?;
    wr.flush().await?;

    let mut w = GoBufWriter::default();
    for ev in &plan.init {
        w.write(&line(ev));
    }
    if let Some(err) = &plan.error {
        w.write(&line(err));
    }
    w.flush();
    wr.write_all(&w.take_wire()).await?;
    let rx = match (plan.error.is_some(), plan.rx.take()) {
        (false, Some(rx)) => Some(rx),
        _ => None,
    };
    let Some(mut rx) = rx else {
        wr.write_all(b"0\r\n\r\n").await?;
        return wr.flush().await;
    };
    wr.flush().await?;

    let mut before_deadline: Vec<Instant> = [2, 1]
        .iter()
        .filter_map(|s| deadline.checked_sub(Duration::from_secs(*s)))
        .filter(|t| *t > start)
        .collect();
    let mut periodic = start + plan.bookmark_interval;
    let mut tmp = [0u8; 4096];
    loop {
        let next_bookmark = before_deadline.first().copied().unwrap_or(periodic).min(periodic);
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => break,
            _ = tokio::time::sleep_until(next_bookmark), if plan.bookmarks => {
                let now = Instant::now();
                before_deadline.retain(|t| *t > now);
                if periodic <= now {
                    periodic = now + plan.bookmark_interval;
                }
                let rv = state.lock().expect("state").processed_rv(plan.rid);
                if rv > plan.threshold {
                    w.write(&line(&event("BOOKMARK", bookmark_object(plan.rid, rv))));
                    w.flush();
                    wr.write_all(&w.take_wire()).await?;
                    wr.flush().await?;
                }
            }
            msg = rx.recv() => {
                let Some(first) = msg else { break };
                let mut send = |c: &Change| {
                    if c.rv > plan.threshold {
                        if let Some(ev) = convert(c, &plan.filter) {
                            w.write(&line(&ev));
                        }
                    }
                };
                send(&first);
                while let Ok(more) = rx.try_recv() {
                    send(&more);
                }
                w.flush();
                wr.write_all(&w.take_wire()).await?;
                wr.flush().await?;
            }
            r = rd.read(&mut tmp) => match r {
                Ok(0) | Err(_) => return Err(io::ErrorKind::ConnectionAborted.into()),
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            },
        }
    }
    wr.write_all(b"0\r\n\r\n").await?;
    wr.flush().await
}
