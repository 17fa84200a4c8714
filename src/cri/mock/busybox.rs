//! A tiny busybox `sh` subset: how the mock runs a container's command (and
//! an `ExecSync` command) when no script says otherwise.
//!
//! The subset is documented in the [mock's module docs](super#the-tiny-busybox-sh-subset).

use std::time::Duration;

use super::logs::LogStream;
use super::script::{Behaviour, OnTerm, Step};

/// Busybox applets the image provides but this subset does not model.
const OTHER_APPLETS: &[&str] = &[
    "[", "awk", "cat", "cp", "date", "env", "grep", "head", "hostname", "httpd", "id", "kill", "ln", "ls", "mkdir",
    "mv", "nc", "nslookup", "ping", "printf", "ps", "rm", "sed", "seq", "tail", "tee", "test", "top", "touch", "tr",
    "uname", "watch", "wc", "wget", "whoami", "yes",
];

/// One parsed statement.
#[derive(Debug, Clone, PartialEq)]
enum Stmt {
    Echo { text: String, stream: LogStream },
    Sleep(Option<Duration>),
    Exit(Option<i32>),
    Status(i32),
    Trap(Option<OnTerm>),
    Applet,
    NotFound(String),
}

/// How a command line reads: a shell script, or one program.
enum Program {
    Shell(Vec<Stmt>),
    Single(Stmt),
    Missing(String),
}

/// The behaviour of a container running `argv` on a busybox-like image
/// (`strict`) or another image, as PID 1 of its namespace or not.
pub(crate) fn process_behaviour(argv: &[String], pid1: bool, strict: bool, stdin: bool) -> Behaviour {
    let default_term = if pid1 { OnTerm::Ignore } else { OnTerm::Exit(143) };
    let program = match parse_argv(argv) {
        None => return Behaviour::run_forever(),
        Some(Program::Missing(_)) if !strict => return Behaviour::run_forever(),
        Some(Program::Missing(name)) => return Behaviour::fail_start(start_error_message(&name)),
        Some(p) => p,
    };
    let (stmts, shell) = match program {
        Program::Shell(s) if s.is_empty() && stdin => return Behaviour::run_forever().on_sigterm(default_term),
        Program::Shell(s) => (s, true),
        Program::Single(s) => (vec![s], false),
        Program::Missing(_) => unreachable!("handled above"),
    };
    let mut steps = Vec::new();
    let mut on_term = default_term;
    let mut status = 0;
    for stmt in stmts {
        match stmt {
            Stmt::Echo { text, stream } => {
                steps.push(Step::Output(stream, text));
                status = 0;
            }
            Stmt::Sleep(Some(d)) => {
                steps.push(Step::Sleep(d));
                status = 0;
            }
            Stmt::Sleep(None) | Stmt::Applet => {
                steps.push(Step::Block);
                break;
            }
            Stmt::Exit(code) => {
                status = code.unwrap_or(status);
                break;
            }
            Stmt::Status(s) => status = s,
            Stmt::Trap(t) => on_term = t.unwrap_or(default_term),
            Stmt::NotFound(name) if shell => {
                steps.push(Step::Output(LogStream::Stderr, format!("sh: {name}: not found\n")));
                status = 127;
            }
            Stmt::NotFound(name) => return Behaviour::fail_start(start_error_message(&name)),
        }
    }
    if steps.last() != Some(&Step::Block) {
        steps.push(Step::Exit(status));
    }
    Behaviour::from_steps(steps).on_sigterm(on_term)
}

/// The result of `ExecSync` of `argv` in a busybox container: `Err` with
/// runc's message when the program does not exist.
pub(crate) fn exec(argv: &[String]) -> Result<super::exec::ExecResult, String> {
    let stmts = match parse_argv(argv) {
        None => return Err("OCI runtime exec failed: exec failed: args must not be empty: unknown".into()),
        Some(Program::Missing(name)) => {
            let cause = start_cause(&name);
            return Err(format!(
                "OCI runtime exec failed: exec failed: unable to start container process: {cause}"
            ));
        }
        Some(Program::Shell(s)) => s,
        Some(Program::Single(s)) => vec![s],
    };
    let mut out = super::exec::ExecResult::exit(0);
    let mut delay = Some(Duration::ZERO);
    for stmt in stmts {
        match stmt {
            Stmt::Echo {
                text,
                stream: LogStream::Stdout,
            } => out.stdout.extend_from_slice(text.as_bytes()),
            Stmt::Echo {
                text,
                stream: LogStream::Stderr,
            } => out.stderr.extend_from_slice(text.as_bytes()),
            Stmt::Sleep(d) => delay = delay.zip(d).map(|(a, b)| a + b),
            Stmt::Exit(code) => {
                out.exit_code = code.unwrap_or(out.exit_code);
                break;
            }
            Stmt::Status(s) => out.exit_code = s,
            Stmt::Trap(_) | Stmt::Applet => out.exit_code = 0,
            Stmt::NotFound(name) => {
                out.stderr
                    .extend_from_slice(format!("sh: {name}: not found\n").as_bytes());
                out.exit_code = 127;
            }
        }
    }
    out.delay = delay;
    Ok(out)
}

/// runc's start error for a program that is not in the image.
pub(crate) fn start_error_message(name: &str) -> String {
    format!(
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: \
         runc create failed: unable to start container process: {}",
        start_cause(name)
    )
}

fn start_cause(name: &str) -> String {
    if name.contains('/') {
        format!("exec: \"{name}\": stat {name}: no such file or directory: unknown")
    } else {
        format!("exec: \"{name}\": executable file not found in $PATH: unknown")
    }
}

fn parse_argv(argv: &[String]) -> Option<Program> {
    let prog = argv.first()?;
    let name = applet_name(prog);
    match name {
        Some("sh" | "ash") => {
            let script = match argv.get(1).map(String::as_str) {
                Some("-c") => argv.get(2).cloned().unwrap_or_default(),
                _ => String::new(),
            };
            Some(Program::Shell(parse_script(&script)))
        }
        Some(_) => Some(Program::Single(statement(argv.to_vec()))),
        None => Some(Program::Missing(prog.clone())),
    }
}

/// The applet a program path names (`/bin/sleep` → `sleep`), if busybox has it.
fn applet_name(prog: &str) -> Option<&str> {
    let (dir, base) = prog.rsplit_once('/').unwrap_or(("", prog));
    let dir_ok = matches!(dir, "" | "/bin" | "/sbin" | "/usr/bin" | "/usr/sbin");
    let known = matches!(base, "sh" | "ash" | "echo" | "sleep" | "true" | "false") || OTHER_APPLETS.contains(&base);
    (dir_ok && known).then_some(base)
}

fn parse_script(script: &str) -> Vec<Stmt> {
    split_statements(script).into_iter().map(statement).collect()
}

fn statement(mut words: Vec<String>) -> Stmt {
    let mut stream = LogStream::Stdout;
    if words.last().is_some_and(|last| matches!(last.as_str(), ">&2" | "1>&2")) {
        stream = LogStream::Stderr;
        words.pop();
    }
    let Some(cmd) = words.first().cloned() else {
        return Stmt::Status(0);
    };
    let args = &words[1..];
    let builtin = matches!(cmd.as_str(), "exit" | "trap" | ":" | "true" | "false" | "echo");
    match if builtin { Some(cmd.as_str()) } else { applet_name(&cmd) }.unwrap_or("") {
        "echo" => {
            let (newline, rest) = match args.first().map(String::as_str) {
                Some("-n") => (false, &args[1..]),
                _ => (true, args),
            };
            let mut text = rest.join(" ");
            if newline {
                text.push('\n');
            }
            Stmt::Echo { text, stream }
        }
        "sleep" => match args.first().map(String::as_str) {
            Some("infinity") => Stmt::Sleep(None),
            Some(n) => Stmt::Sleep(Some(
                n.parse::<f64>().ok().map_or(Duration::ZERO, Duration::from_secs_f64),
            )),
            None => Stmt::Status(1),
        },
        "exit" => Stmt::Exit(args.first().map(|n| n.parse::<i32>().map_or(2, |c| c & 0xff))),
        "true" | ":" => Stmt::Status(0),
        "false" => Stmt::Status(1),
        "trap" => trap(args),
        "" => Stmt::NotFound(cmd),
        _ => Stmt::Applet,
    }
}

fn trap(args: &[String]) -> Stmt {
    let Some((action, signals)) = args.split_first() else {
        return Stmt::Status(0);
    };
    if !signals.iter().any(|s| matches!(s.as_str(), "TERM" | "SIGTERM" | "15")) {
        return Stmt::Status(0);
    }
    let words: Vec<&str> = action.split_whitespace().collect();
    Stmt::Trap(match words.as_slice() {
        [] => Some(OnTerm::Ignore),
        ["-"] => None,
        ["exit"] => Some(OnTerm::ExitAfterCurrentStep(143)),
        ["exit", n] => Some(OnTerm::ExitAfterCurrentStep(n.parse().unwrap_or(2))),
        _ => Some(OnTerm::ExitAfterCurrentStep(0)),
    })
}

/// Splits a script into statements of words, honouring quotes.
fn split_statements(script: &str) -> Vec<Vec<String>> {
    let mut stmts = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '&' if in_word && word.ends_with('>') => word.push('&'),
            ';' | '\n' | '&' => {
                if c == '&' && chars.peek() == Some(&'&') {
                    chars.next();
                }
                end_word(&mut words, &mut word, &mut in_word);
                if !words.is_empty() {
                    stmts.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        stmts.push(words);
    }
    stmts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_quoted_statements() {
        let s = split_statements("trap \"\" TERM; echo 'a b' c\\ d && sleep 1\nexit 3");
        assert_eq!(
            s,
            vec![
                argv(&["trap", "", "TERM"]),
                argv(&["echo", "a b", "c d"]),
                argv(&["sleep", "1"]),
                argv(&["exit", "3"])
            ]
        );
    }

    #[test]
    fn echo_then_sleep_forever_as_pid1_ignores_sigterm() {
        let b = process_behaviour(&argv(&["sh", "-c", "echo hi; sleep 3600"]), true, true, false);
        assert_eq!(
            b.steps,
            vec![
                Step::Output(LogStream::Stdout, "hi\n".into()),
                Step::Sleep(Duration::from_secs(3600)),
                Step::Exit(0)
            ]
        );
        assert_eq!(b.on_term, OnTerm::Ignore);
        let shared = process_behaviour(&argv(&["sleep", "5"]), false, true, false);
        assert_eq!(shared.on_term, OnTerm::Exit(143));
    }

    #[test]
    fn traps_and_exit_codes() {
        let b = process_behaviour(
            &argv(&["sh", "-c", "trap 'exit 0' TERM; nosuch; exit"]),
            false,
            true,
            false,
        );
        assert_eq!(b.on_term, OnTerm::ExitAfterCurrentStep(0));
        assert_eq!(b.steps.last(), Some(&Step::Exit(127)));
        let missing = process_behaviour(&argv(&["/nonexistent"]), true, true, false);
        assert!(missing.start_error.as_deref().unwrap().contains("stat /nonexistent"));
        let lenient = process_behaviour(&argv(&["nginx"]), true, false, false);
        assert_eq!(lenient.steps, vec![Step::Block]);
    }

    #[test]
    fn exec_subset() {
        let r = exec(&argv(&["echo", "hi"])).unwrap();
        assert_eq!((r.exit_code, r.stdout.as_slice()), (0, &b"hi\n"[..]));
        let r = exec(&argv(&["sh", "-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert_eq!(
            (r.exit_code, r.stdout.as_slice(), r.stderr.as_slice()),
            (3, &b"out\n"[..], &b"err\n"[..])
        );
        let r = exec(&argv(&["sh", "-c", "nosuchcmd"])).unwrap();
        assert_eq!(
            (r.exit_code, r.stderr.as_slice()),
            (127, &b"sh: nosuchcmd: not found\n"[..])
        );
        assert_eq!(
            exec(&argv(&["sleep", "10"])).unwrap().delay,
            Some(Duration::from_secs(10))
        );
        assert!(
            exec(&argv(&["nosuchcmd"]))
                .unwrap_err()
                .contains("executable file not found")
        );
        assert!(exec(&[]).unwrap_err().contains("args must not be empty"));
    }
}
