//! The mailbox that outlives instances: a bounded channel of actix envelopes
//! owned by the child spec, lent to each running instance in turn.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll};

use actix::dev::{Envelope, EnvelopeProxy};
use actix::{Actor, ActorContext, ActorFuture, ActorState, AsyncContext, Context};
use tokio::sync::{OwnedMutexGuard, mpsc};

/// A queued message for `A`, with its reply channel (if any).
pub(crate) type Env<A> = Envelope<A>;
pub(crate) type SharedReceiver<A> = Arc<tokio::sync::Mutex<mpsc::Receiver<Env<A>>>>;

/// Envelopes handled per poll before yielding to the actor's other work.
const BATCH: usize = 16;

/// The channel behind a child's [`ChildRef`](super::ChildRef)s. Closed means
/// no instance will ever serve it again (until a restart reopens a new one):
/// sends fail, and whatever was queued is dropped (waiting senders get an error).
pub(crate) struct Mailbox<A: Actor> {
    capacity: usize,
    chan: Mutex<Chan<A>>,
}

struct Chan<A: Actor> {
    tx: Option<mpsc::Sender<Env<A>>>,
    rx: Option<SharedReceiver<A>>,
    closes: Option<CloseCount>,
}

/// How many times the mailboxes it was given to
/// ([`ChildSpec::count_closes`](super::ChildSpec::count_closes)) were closed:
/// their child retired, or lost with its supervisor. A reader that saw a
/// count sees those mailboxes closed; one that finds it unchanged knows
/// none closed since, and can skip a walk over their
/// [`ChildRef`](super::ChildRef)s.
///
/// ```
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*;
/// # actlet::testing::run_paused(async {
/// let closes = CloseCount::default();
/// let spec = ChildSpec::new("counter", || Counter(0)).count_closes(closes.clone());
/// let root = SupervisorSpec::new("root").child(spec).start_root();
/// assert_eq!(closes.get(), 0);
/// root.stop_child("counter").await.unwrap();
/// assert_eq!(closes.get(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct CloseCount(Arc<AtomicU64>);

impl CloseCount {
    /// Closes counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

impl<A: Actor> Mailbox<A> {
    /// An open mailbox holding up to `capacity` messages.
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        assert!(capacity > 0, "a mailbox needs a capacity of at least 1");
        let mailbox = Self {
            capacity,
            chan: Mutex::new(Chan {
                tx: None,
                rx: None,
                closes: None,
            }),
        };
        mailbox.open();
        Arc::new(mailbox)
    }

    fn lock(&self) -> MutexGuard<'_, Chan<A>> {
        self.chan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The capacity given at creation.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Messages waiting to be handled (0 when closed).
    pub(crate) fn queued(&self) -> usize {
        self.lock()
            .tx
            .as_ref()
            .map_or(0, |tx| tx.max_capacity() - tx.capacity())
    }

    /// Whether the mailbox accepts messages.
    pub(crate) fn is_open(&self) -> bool {
        self.lock().tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Runs `f` on the sender while holding the lock (`None` when closed).
    pub(crate) fn with_sender<R>(&self, f: impl FnOnce(Option<&mpsc::Sender<Env<A>>>) -> R) -> R {
        f(self.lock().tx.as_ref())
    }

    /// A clone of the sender, for sends that wait for capacity.
    pub(crate) fn sender(&self) -> Option<mpsc::Sender<Env<A>>> {
        self.lock().tx.clone()
    }

    /// Opens a fresh channel if closed; returns the receiver to drain.
    pub(crate) fn open(&self) -> SharedReceiver<A> {
        let mut chan = self.lock();
        if let (Some(_), Some(rx)) = (&chan.tx, &chan.rx) {
            return rx.clone();
        }
        let (tx, rx) = mpsc::channel(self.capacity);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        chan.tx = Some(tx);
        chan.rx = Some(rx.clone());
        rx
    }

    /// Closes the mailbox: later sends fail; queued envelopes are dropped as
    /// soon as no instance holds the receiver.
    pub(crate) fn close(&self) {
        let mut chan = self.lock();
        let was_open = chan.tx.take().is_some();
        chan.rx = None;
        if was_open && let Some(closes) = &chan.closes {
            closes.0.fetch_add(1, Ordering::Release);
        }
    }

    /// Counts this mailbox's closes in `closes` from now on.
    pub(crate) fn count_closes(&self, closes: CloseCount) {
        self.lock().closes = Some(closes);
    }

    /// Where this mailbox's closes are counted, if anywhere.
    pub(crate) fn counted_closes(&self) -> Option<CloseCount> {
        self.lock().closes.clone()
    }
}

/// The live depth of a mailbox, readable without knowing its actor type
/// (the supervision tree keeps one per child for `/metrics` and
/// `/debug/actors`).
pub(crate) trait MailboxGauge: Send + Sync {
    /// Messages waiting to be handled.
    fn queued(&self) -> usize;
    /// The mailbox's capacity.
    fn capacity(&self) -> usize;
}

impl<A: Actor> MailboxGauge for Mailbox<A> {
    fn queued(&self) -> usize {
        Mailbox::queued(self)
    }

    fn capacity(&self) -> usize {
        Mailbox::capacity(self)
    }
}

/// Actor future, spawned into every instance's context, that feeds it the
/// mailbox's envelopes. It first waits for the receiver (a dying previous
/// instance may still hold it), then handles envelopes like actix's own
/// mailbox: not while the context waits, not once it is stopping.
pub(crate) struct MailboxDrain<A: Actor> {
    state: DrainState<A>,
}

type LockFuture<A> = Pin<Box<dyn Future<Output = OwnedMutexGuard<mpsc::Receiver<Env<A>>>>>>;

enum DrainState<A: Actor> {
    Locking(LockFuture<A>),
    Draining(OwnedMutexGuard<mpsc::Receiver<Env<A>>>),
    Done,
}

impl<A: Actor> MailboxDrain<A> {
    /// Drains `rx` once it can be locked.
    pub(crate) fn new(rx: SharedReceiver<A>) -> Self {
        Self {
            state: DrainState::Locking(Box::pin(rx.lock_owned())),
        }
    }
}

impl<A> ActorFuture<A> for MailboxDrain<A>
where
    A: Actor<Context = Context<A>>,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, act: &mut A, ctx: &mut Context<A>, task: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let DrainState::Locking(lock) = &mut this.state {
            match lock.as_mut().poll(task) {
                Poll::Ready(guard) => this.state = DrainState::Draining(guard),
                Poll::Pending => return Poll::Pending,
            }
        }
        let DrainState::Draining(rx) = &mut this.state else {
            return Poll::Ready(());
        };
        for _ in 0..BATCH {
            // The context re-polls its items after a wait ends or a stop is refused.
            if ctx.waiting() || matches!(ctx.state(), ActorState::Stopping | ActorState::Stopped) {
                return Poll::Pending;
            }
            match rx.poll_recv(task) {
                Poll::Ready(Some(mut envelope)) => envelope.handle(act, ctx),
                Poll::Ready(None) => {
                    this.state = DrainState::Done;
                    return Poll::Ready(());
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        task.waker().wake_by_ref();
        Poll::Pending
    }
}
