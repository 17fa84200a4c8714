//! Pure: kernel OOM kills from `/dev/kmsg` records (upstream cAdvisor's
//! `oomparser`, which the kubelet's OOM watcher reads).
//!
//! A kill spans several records: `… invoked oom-killer: …` opens it,
//! `oom-kill:constraint=…,oom_memcg=…,task_memcg=…,task=…,pid=…` (or, before
//! Linux 4.19, `Task in <memcg> killed as a result of limit of <memcg>`)
//! names the cgroups, and `Killed process <pid> (<name>)` closes it. The
//! victim container is the cgroup whose limit was hit (`oom_memcg`); it is
//! `/` for a system-wide OOM.

/// One `/dev/kmsg` record: `<prio>,<seq>,<µs since boot>,<flags>;<message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KmsgRecord {
    /// Sequence number (increases by one per record).
    pub seq: u64,
    /// Microseconds since boot.
    pub timestamp_us: u64,
    /// The message text.
    pub message: String,
}

/// Parses one record's first line; `None` for continuation lines
/// (` KEY=value`) and anything malformed.
pub fn parse_record(line: &str) -> Option<KmsgRecord> {
    if line.starts_with(' ') {
        return None;
    }
    let (prefix, message) = line.split_once(';')?;
    let mut fields = prefix.split(',');
    let _prio = fields.next()?;
    let seq = fields.next()?.parse().ok()?;
    let timestamp_us = fields.next()?.parse().ok()?;
    Some(KmsgRecord {
        seq,
        timestamp_us,
        message: message.trim_end_matches('\n').to_string(),
    })
}

/// Every record in `chunk` (one `read` of `/dev/kmsg` returns one record;
/// a file of records returns many).
pub fn parse_chunk(chunk: &str) -> Vec<KmsgRecord> {
    chunk.lines().filter_map(parse_record).collect()
}

/// One OOM kill (cAdvisor `OomInstance`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OomInstance {
    /// The killed process.
    pub pid: u32,
    /// Its name.
    pub process_name: String,
    /// Microseconds since boot of the first record.
    pub timestamp_us: u64,
    /// The killed process's cgroup (`task_memcg`).
    pub container_name: String,
    /// The cgroup whose limit was hit (`oom_memcg`); `/` for a system OOM.
    pub victim_container_name: String,
    /// `CONSTRAINT_MEMCG`, `CONSTRAINT_NONE`, … without the prefix.
    pub constraint: String,
}

impl OomInstance {
    /// A system-wide OOM (no cgroup limit was hit): upstream records a
    /// `SystemOOM` node event for these only.
    pub fn is_system_oom(&self) -> bool {
        self.victim_container_name == "/"
    }
}

/// Splits `a=1,b=2,c=x,y` into pairs; a piece without `=` belongs to the
/// previous value (`mems_allowed=0,2`).
fn key_values(s: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for piece in s.split(',') {
        match piece.split_once('=') {
            Some((k, v)) => out.push((k.trim().to_string(), v.to_string())),
            None => {
                if let Some(last) = out.last_mut() {
                    last.1.push(',');
                    last.1.push_str(piece);
                }
            }
        }
    }
    out
}

/// `Killed process <pid> (<name>)` → (pid, name).
fn killed_process(message: &str) -> Option<(u32, String)> {
    let rest = &message[message.find("Killed process ")? + "Killed process ".len()..];
    let (pid, rest) = rest.split_once(' ')?;
    let name = rest.strip_prefix('(')?;
    let name = &name[..name.find(')')?];
    Some((pid.parse().ok()?, name.to_string()))
}

/// Reassembles OOM kills from records fed in order.
#[derive(Clone, Debug, Default)]
pub struct OomParser {
    current: Option<OomInstance>,
}

impl OomParser {
    fn open(&mut self, at: u64) -> &mut OomInstance {
        self.current.get_or_insert_with(|| OomInstance {
            timestamp_us: at,
            container_name: "/".into(),
            victim_container_name: "/".into(),
            ..OomInstance::default()
        })
    }

    /// Feeds one record; returns the kill it completes.
    pub fn feed(&mut self, rec: &KmsgRecord) -> Option<OomInstance> {
        let m = rec.message.as_str();
        if m.contains("invoked oom-killer:") {
            self.current = None;
            self.open(rec.timestamp_us);
            return None;
        }
        if let Some(i) = m.find("oom-kill:") {
            let inst = self.open(rec.timestamp_us);
            for (k, v) in key_values(&m[i + "oom-kill:".len()..]) {
                match k.as_str() {
                    "constraint" => inst.constraint = v.trim_start_matches("CONSTRAINT_").to_string(),
                    "oom_memcg" => inst.victim_container_name = v,
                    "task_memcg" => inst.container_name = v,
                    "task" => inst.process_name = v,
                    "pid" => inst.pid = v.parse().unwrap_or(0),
                    _ => {}
                }
            }
            return None;
        }
        if let Some(rest) = m.strip_prefix("Task in ")
            && let Some((task, limit)) = rest.split_once(" killed as a result of limit of ")
        {
            let inst = self.open(rec.timestamp_us);
            inst.container_name = task.to_string();
            inst.victim_container_name = limit.to_string();
            return None;
        }
        if m.contains("Killed process ")
            && let Some((pid, name)) = killed_process(m)
        {
            let mut inst = self.current.take()?;
            inst.pid = pid;
            inst.process_name = name;
            return Some(inst);
        }
        None
    }
}

#[cfg(test)]
#[path = "oom_parser_tests.rs"]
mod tests;
