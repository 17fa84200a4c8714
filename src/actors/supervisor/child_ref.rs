//! Stable addresses: [`ChildRef`] and [`SupervisedRecipient`] send through the
//! child's mailbox, which outlives every instance, so they keep working across
//! restarts.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use actix::dev::Envelope;
use actix::{Actor, Context, Handler, Message};
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::mailbox::Mailbox;

/// Why a message could not be delivered (or answered).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// root.stop_child("counter").await.unwrap(); // retired: its mailbox is closed
/// assert_eq!(counter_ref.send(Add(1)).await, Err(SendError::Closed));
/// assert_eq!(counter_ref.do_send(Add(1)), Err(SendError::Closed));
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The mailbox is at capacity (backpressure; only `do_send`/`try_send`).
    #[error("the child's mailbox is full")]
    Full,
    /// The child was retired (stopped for good, or its supervisor is gone):
    /// nothing will ever handle the message.
    #[error("the child is stopped and its mailbox is closed")]
    Closed,
    /// The message was queued but no reply came: the instance died while (or
    /// before) handling it, or the mailbox was closed with it still queued.
    #[error("the message was lost: the child died or was stopped before replying")]
    Lost,
}

/// Why [`ChildRef::try_send`] failed; gives the message back.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// // Not started yet: nothing drains the one-slot mailbox.
/// let counter_ref = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(1).child_ref();
/// counter_ref.try_send(Add(1)).unwrap();
/// match counter_ref.try_send(Add(2)) {
///     Err(TrySendError::Full(Add(n))) => assert_eq!(n, 2), // the message comes back
///     _ => unreachable!("the mailbox is full"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrySendError<M> {
    /// The mailbox is at capacity.
    #[error("the child's mailbox is full")]
    Full(M),
    /// The child was retired.
    #[error("the child is stopped and its mailbox is closed")]
    Closed(M),
}

impl<M> TrySendError<M> {
    /// The message that was not sent.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let counter_ref = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(1).child_ref();
    /// counter_ref.try_send(Add(1)).unwrap();
    /// let Add(n) = counter_ref.try_send(Add(2)).unwrap_err().into_inner();
    /// assert_eq!(n, 2);
    /// ```
    pub fn into_inner(self) -> M {
        match self {
            Self::Full(msg) | Self::Closed(msg) => msg,
        }
    }
}

/// A stable, cloneable, `Send` address of a supervised child of type `A`.
///
/// It refers to the child (its spec), not to an instance: messages queued
/// while an instance dies wait in the mailbox for the next one.
///
/// ```
/// # use std::time::Duration;
/// use actix::{Actor, Context, Handler, Message};
/// use actlet::actors::supervisor::{ChildSpec, SupervisorSpec, fail};
///
/// struct Counter(u32);
/// impl Actor for Counter {
///     type Context = Context<Self>;
/// }
/// struct Add(u32);
/// impl Message for Add {
///     type Result = u32;
/// }
/// impl Handler<Add> for Counter {
///     type Result = u32;
///     fn handle(&mut self, Add(n): Add, ctx: &mut Context<Self>) -> u32 {
///         self.0 += n;
///         if self.0 > 10 {
///             fail(ctx, "too much");
///         }
///         self.0
///     }
/// }
///
/// actlet::testing::run_paused(async {
///     let counter = ChildSpec::new("counter", || Counter(0));
///     let counter_ref = counter.child_ref(); // taken before the start
///     let _root = SupervisorSpec::new("root").child(counter).start_root();
///     assert_eq!(counter_ref.send(Add(11)).await, Ok(11)); // ...and the instance fails
///     assert_eq!(counter_ref.send(Add(2)).await, Ok(2), "the same ref reaches the fresh instance");
/// });
/// ```
pub struct ChildRef<A: Actor> {
    name: Arc<str>,
    mailbox: Arc<Mailbox<A>>,
}

impl<A: Actor> Clone for ChildRef<A> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            mailbox: self.mailbox.clone(),
        }
    }
}

impl<A: Actor> fmt::Debug for ChildRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildRef")
            .field("name", &self.name)
            .field("open", &self.mailbox.is_open())
            .finish()
    }
}

impl<A: Actor<Context = Context<A>>> ChildRef<A> {
    pub(crate) fn new(name: Arc<str>, mailbox: Arc<Mailbox<A>>) -> Self {
        Self { name, mailbox }
    }

    /// The child's name (unique among its siblings).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let counter_ref = ChildSpec::new("counter", || Counter(0)).child_ref();
    /// assert_eq!(counter_ref.name(), "counter");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the mailbox accepts messages (false once the child is retired).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// assert!(counter_ref.is_open(), "open before the start");
    /// let root = SupervisorSpec::new("root").child(counter).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// root.stop_child("counter").await.unwrap();
    /// assert!(!counter_ref.is_open());
    /// # });
    /// ```
    pub fn is_open(&self) -> bool {
        self.mailbox.is_open()
    }

    /// Messages waiting in the mailbox.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// counter_ref.do_send(Add(1)).unwrap();
    /// counter_ref.do_send(Add(2)).unwrap();
    /// assert_eq!(counter_ref.queued(), 2, "waiting for the first instance");
    /// let _root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(3));
    /// assert_eq!(counter_ref.queued(), 0);
    /// # });
    /// ```
    pub fn queued(&self) -> usize {
        self.mailbox.queued()
    }

    /// The mailbox capacity.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let counter_ref = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(16).child_ref();
    /// assert_eq!(counter_ref.capacity(), 16);
    /// ```
    pub fn capacity(&self) -> usize {
        self.mailbox.capacity()
    }

    /// Sends `msg` and waits for the reply. Waits for room when the mailbox is
    /// full (wrap it in `tokio::time::timeout` to bound that).
    ///
    /// # Errors
    /// [`SendError::Closed`] if the child is retired, [`SendError::Lost`] if
    /// the instance died before replying.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let _root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert_eq!(counter_ref.send(Add(2)).await, Ok(2));
    /// let bounded = tokio::time::timeout(Duration::from_secs(1), counter_ref.send(Add(3)));
    /// assert_eq!(bounded.await, Ok(Ok(5)));
    /// # });
    /// ```
    pub fn send<M>(&self, msg: M) -> impl Future<Output = Result<M::Result, SendError>> + Send + 'static
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let mailbox = self.mailbox.clone();
        async move {
            let tx = mailbox.sender().ok_or(SendError::Closed)?;
            drop(mailbox);
            let permit = tx.reserve().await.map_err(|_| SendError::Closed)?;
            let (reply_tx, reply_rx) = oneshot::channel();
            permit.send(Envelope::new(msg, Some(reply_tx)));
            reply_rx.await.map_err(|_| SendError::Lost)
        }
    }

    /// Queues `msg` without waiting for room or for a reply; never blocks.
    ///
    /// # Errors
    /// [`SendError::Full`] (backpressure) or [`SendError::Closed`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let counter_ref = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(1).child_ref();
    /// assert_eq!(counter_ref.do_send(Add(1)), Ok(()));
    /// assert_eq!(counter_ref.do_send(Add(2)), Err(SendError::Full), "nothing drains it yet");
    /// ```
    pub fn do_send<M>(&self, msg: M) -> Result<(), SendError>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        self.try_send(msg).map_err(|err| match err {
            TrySendError::Full(_) => SendError::Full,
            TrySendError::Closed(_) => SendError::Closed,
        })
    }

    /// Like [`do_send`](Self::do_send) but gives the message back on failure.
    ///
    /// # Errors
    /// [`TrySendError::Full`] or [`TrySendError::Closed`], holding `msg`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let root = SupervisorSpec::new("root").child(counter).start_root();
    /// counter_ref.try_send(Add(1)).unwrap();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(1), "delivered");
    /// root.stop_child("counter").await.unwrap();
    /// let Err(TrySendError::Closed(Add(n))) = counter_ref.try_send(Add(2)) else { unreachable!() };
    /// assert_eq!(n, 2);
    /// # });
    /// ```
    pub fn try_send<M>(&self, msg: M) -> Result<(), TrySendError<M>>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        self.mailbox.with_sender(|tx| {
            let Some(tx) = tx else {
                return Err(TrySendError::Closed(msg));
            };
            match tx.try_reserve() {
                Ok(permit) => {
                    permit.send(Envelope::new(msg, None));
                    Ok(())
                }
                Err(mpsc::error::TrySendError::Full(())) => Err(TrySendError::Full(msg)),
                Err(mpsc::error::TrySendError::Closed(())) => Err(TrySendError::Closed(msg)),
            }
        })
    }

    /// A type-erased address for peers that only know the message type.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let adds: SupervisedRecipient<Add> = counter.child_ref().recipient();
    /// let _root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert_eq!(adds.send(Add(3)).await, Ok(3));
    /// # });
    /// ```
    pub fn recipient<M>(&self) -> SupervisedRecipient<M>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        SupervisedRecipient {
            inner: Arc::new(self.clone()),
        }
    }
}

/// Object-safe sending side used by [`SupervisedRecipient`].
trait RecipientTx<M: Message>: Send + Sync {
    fn send(&self, msg: M) -> BoxFuture<'static, Result<M::Result, SendError>>;
    fn try_send(&self, msg: M) -> Result<(), TrySendError<M>>;
    fn name(&self) -> &str;
    fn is_open(&self) -> bool;
}

impl<A, M> RecipientTx<M> for ChildRef<A>
where
    A: Actor<Context = Context<A>> + Handler<M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn send(&self, msg: M) -> BoxFuture<'static, Result<M::Result, SendError>> {
        Box::pin(ChildRef::send(self, msg))
    }
    fn try_send(&self, msg: M) -> Result<(), TrySendError<M>> {
        ChildRef::try_send(self, msg)
    }
    fn name(&self) -> &str {
        ChildRef::name(self)
    }
    fn is_open(&self) -> bool {
        ChildRef::is_open(self)
    }
}

/// A stable address that accepts messages of type `M`, whatever the actor
/// (the supervised counterpart of `actix::Recipient`).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let supervised: SupervisedRecipient<Add> = counter.child_ref().recipient();
/// let _root = SupervisorSpec::new("root").child(counter).start_root();
/// // A plain, unsupervised actix actor behind the same type:
/// let plain: SupervisedRecipient<Add> = Counter(100).start().recipient().into();
/// let mut replies = Vec::new();
/// for peer in [supervised, plain] {
///     replies.push(peer.send(Add(1)).await.unwrap());
/// }
/// assert_eq!(replies, [1, 101]);
/// # });
/// ```
pub struct SupervisedRecipient<M: Message> {
    inner: Arc<dyn RecipientTx<M>>,
}

impl<M: Message> Clone for SupervisedRecipient<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<M: Message> fmt::Debug for SupervisedRecipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisedRecipient")
            .field("name", &self.inner.name())
            .finish()
    }
}

impl<M: Message + Send + 'static> SupervisedRecipient<M>
where
    M::Result: Send,
{
    /// See [`ChildRef::send`].
    ///
    /// # Errors
    /// As [`ChildRef::send`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let adds = counter.child_ref().recipient::<Add>();
    /// let _root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert_eq!(adds.send(Add(4)).await, Ok(4));
    /// # });
    /// ```
    pub fn send(&self, msg: M) -> BoxFuture<'static, Result<M::Result, SendError>> {
        self.inner.send(msg)
    }

    /// See [`ChildRef::do_send`].
    ///
    /// # Errors
    /// As [`ChildRef::do_send`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let (counter_ref, adds) = (counter.child_ref(), counter.child_ref().recipient::<Add>());
    /// let _root = SupervisorSpec::new("root").child(counter).start_root();
    /// adds.do_send(Add(4)).unwrap();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(4), "handled in order");
    /// # });
    /// ```
    pub fn do_send(&self, msg: M) -> Result<(), SendError> {
        self.inner.try_send(msg).map_err(|err| match err {
            TrySendError::Full(_) => SendError::Full,
            TrySendError::Closed(_) => SendError::Closed,
        })
    }

    /// See [`ChildRef::try_send`].
    ///
    /// # Errors
    /// As [`ChildRef::try_send`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let counter = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(1);
    /// let adds = counter.child_ref().recipient::<Add>();
    /// adds.try_send(Add(1)).unwrap();
    /// assert!(matches!(adds.try_send(Add(2)), Err(TrySendError::Full(Add(2)))));
    /// ```
    pub fn try_send(&self, msg: M) -> Result<(), TrySendError<M>> {
        self.inner.try_send(msg)
    }

    /// The child's name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let adds = ChildSpec::new("counter", || Counter(0)).child_ref().recipient::<Add>();
    /// assert_eq!(adds.name(), "counter");
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Whether the child's mailbox accepts messages.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let adds = counter.child_ref().recipient::<Add>();
    /// let root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert!(adds.is_open());
    /// root.shutdown(Duration::from_secs(5)).await.unwrap();
    /// assert!(!adds.is_open(), "retired with the tree");
    /// # });
    /// ```
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}

/// An unsupervised actix `Recipient` behind a [`SupervisedRecipient`]: lets
/// actors that talk through supervised addresses be wired to plain actors
/// (tests, embedders' own actors).
struct ActixTx<M: Message + Send>(actix::Recipient<M>)
where
    M::Result: Send;

impl<M> RecipientTx<M> for ActixTx<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn send(&self, msg: M) -> BoxFuture<'static, Result<M::Result, SendError>> {
        let fut = self.0.send(msg);
        Box::pin(async move {
            fut.await.map_err(|e| match e {
                actix::MailboxError::Closed => SendError::Closed,
                actix::MailboxError::Timeout => SendError::Lost,
            })
        })
    }
    fn try_send(&self, msg: M) -> Result<(), TrySendError<M>> {
        self.0.try_send(msg).map_err(|e| match e {
            actix::prelude::SendError::Full(m) => TrySendError::Full(m),
            actix::prelude::SendError::Closed(m) => TrySendError::Closed(m),
        })
    }
    fn name(&self) -> &str {
        "actix-recipient"
    }
    fn is_open(&self) -> bool {
        self.0.connected()
    }
}

impl<M> From<actix::Recipient<M>> for SupervisedRecipient<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn from(r: actix::Recipient<M>) -> Self {
        Self {
            inner: Arc::new(ActixTx(r)),
        }
    }
}

/// A closure behind a [`SupervisedRecipient`] (observers, tests).
struct FnTx<M, F>(F, std::marker::PhantomData<fn(M)>);

impl<M, F> RecipientTx<M> for FnTx<M, F>
where
    M: Message<Result = ()> + Send + 'static,
    F: Fn(M) + Send + Sync + 'static,
{
    fn send(&self, msg: M) -> BoxFuture<'static, Result<(), SendError>> {
        (self.0)(msg);
        Box::pin(async { Ok(()) })
    }
    fn try_send(&self, msg: M) -> Result<(), TrySendError<M>> {
        (self.0)(msg);
        Ok(())
    }
    fn name(&self) -> &str {
        "fn"
    }
    fn is_open(&self) -> bool {
        true
    }
}

impl<M> SupervisedRecipient<M>
where
    M: Message<Result = ()> + Send + 'static,
{
    /// A recipient that calls `f` with every message, synchronously, on the
    /// sender's thread. `f` must be quick and must not block.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use actix::Message;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    ///
    /// struct PodStarted(&'static str);
    /// impl Message for PodStarted {
    ///     type Result = ();
    /// }
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// let observer = SupervisedRecipient::from_fn(move |PodStarted(name)| sink.lock().unwrap().push(name));
    /// observer.do_send(PodStarted("web-0")).unwrap();
    /// assert_eq!(*seen.lock().unwrap(), ["web-0"]);
    /// ```
    pub fn from_fn(f: impl Fn(M) + Send + Sync + 'static) -> Self {
        Self {
            inner: Arc::new(FnTx(f, std::marker::PhantomData)),
        }
    }
}
