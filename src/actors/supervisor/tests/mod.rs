//! Supervisor unit tests. Every test runs an actix `System` on a paused
//! current-thread tokio runtime: timers (ours and actix's) follow virtual
//! time, and time only advances when every task is idle, so a short sleep
//! means "let everything settle".

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, Running};

use super::{ChildSpec, RestartBackoff, fail};

mod addressing;
mod backoff;
mod lifecycle;
mod shutdown;
mod strategies;

/// Panic messages of deliberate test panics start with this.
const BOOM: &str = "boom";

/// Virtual time after which a test fails instead of hanging (with paused
/// time, an idle runtime jumps straight to it).
const TEST_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Builds a System on a paused runtime and runs `test` on it.
pub(super) fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    paused_system().block_on(async {
        tokio::time::timeout(TEST_TIMEOUT, test())
            .await
            .expect("the test stalled: something it awaited never happened");
    });
}

pub(super) fn paused_system() -> actix_rt::SystemRunner {
    quiet_deliberate_panics();
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("tokio runtime")
    })
}

/// Keeps the output readable: deliberate panics are not printed.
fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            let deliberate = message.is_some_and(|m| m.starts_with(BOOM));
            if !deliberate {
                default(info);
            }
        }));
    });
}

/// Lets every task run until idle (virtual time advances by 10 ms).
pub(super) async fn settle() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// Shared record of lifecycle events: `name+N` started, `name-N` stopped,
/// where N counts the factory calls of that spec (1 = first instance).
#[derive(Clone, Default)]
pub(super) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, event: String) {
        self.0.lock().unwrap().push(event);
    }
    pub(super) fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub(super) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A test actor with a counter (its state) and a lifecycle log.
pub(super) struct Worker {
    name: &'static str,
    instance: u32,
    log: Log,
    count: u32,
    hang: bool,
}

impl Actor for Worker {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.log.push(format!("{}+{}", self.name, self.instance));
    }

    fn stopping(&mut self, _: &mut Context<Self>) -> Running {
        if self.hang { Running::Continue } else { Running::Stop }
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.log.push(format!("{}-{}", self.name, self.instance));
    }
}

macro_rules! message {
    ($name:ident $(($($field:ty),*))? -> $result:ty) => {
        #[derive(Debug, Clone, PartialEq)]
        pub(super) struct $name $(($(pub(super) $field),*))?;
        impl Message for $name {
            type Result = $result;
        }
    };
}

message!(Ping -> u32);
message!(WhoAmI -> u32);
message!(Crash -> ());
message!(FailWith(&'static str) -> ());
message!(Quit -> ());

impl Handler<Ping> for Worker {
    type Result = u32;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> u32 {
        self.count += 1;
        self.count
    }
}

impl Handler<WhoAmI> for Worker {
    type Result = u32;
    fn handle(&mut self, _: WhoAmI, _: &mut Context<Self>) -> u32 {
        self.instance
    }
}

impl Handler<Crash> for Worker {
    type Result = ();
    fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("{BOOM} in {}", self.name);
    }
}

impl Handler<FailWith> for Worker {
    type Result = ();
    fn handle(&mut self, FailWith(reason): FailWith, ctx: &mut Context<Self>) {
        fail(ctx, reason);
    }
}

impl Handler<Quit> for Worker {
    type Result = ();
    fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// A stateless actor: answers `Ping` with 42, panics on `Crash`.
pub(super) struct Plain;

impl Actor for Plain {
    type Context = Context<Self>;
}

impl Handler<Ping> for Plain {
    type Result = u32;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> u32 {
        42
    }
}

impl Handler<Crash> for Plain {
    type Result = ();
    fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("{BOOM} in plain");
    }
}

/// A [`Worker`] spec logging to `log`.
pub(super) fn worker(name: &'static str, log: &Log) -> ChildSpec<Worker> {
    build(name, log, false)
}

/// A [`Worker`] that refuses to stop (its `stopping` returns `Continue`).
pub(super) fn hanging(name: &'static str, log: &Log) -> ChildSpec<Worker> {
    build(name, log, true)
}

fn build(name: &'static str, log: &Log, hang: bool) -> ChildSpec<Worker> {
    let (log, made) = (log.clone(), AtomicU32::new(0));
    ChildSpec::new(name, move || Worker {
        name,
        instance: made.fetch_add(1, Ordering::SeqCst) + 1,
        log: log.clone(),
        count: 0,
        hang,
    })
    // These suites test strategies and intensity; backoff has its own (backoff.rs).
    .backoff(RestartBackoff::NONE)
}

/// `["a+1", "b+1"]` from `ev!["a+1", "b+1"]`.
macro_rules! ev {
    ($($e:expr),* $(,)?) => { vec![$($e.to_string()),*] as Vec<String> };
}
pub(super) use ev;

#[test]
fn paused_time_drives_actix_timers() {
    struct Ticker(Arc<AtomicU32>);
    impl Actor for Ticker {
        type Context = Context<Self>;
        fn started(&mut self, ctx: &mut Context<Self>) {
            ctx.run_interval(Duration::from_secs(1), |act, _| {
                act.0.fetch_add(1, Ordering::SeqCst);
            });
        }
    }
    run(|| async {
        let ticks = Arc::new(AtomicU32::new(0));
        let _addr = Ticker(ticks.clone()).start();
        let wall = std::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(10_500)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 10);
        assert!(wall.elapsed() < Duration::from_secs(5), "virtual time, not real time");
    });
}
