//! [`DeclaredChild`]: a child's address before its spec, so peers that need
//! each other's addresses (a cycle, or an actor that sends to itself
//! through its mailbox) are wired without cells filled in later.

use std::sync::Arc;

use actix::{Actor, Context};

use super::child_ref::ChildRef;
use super::mailbox::Mailbox;
use super::spec::{ChildContext, ChildSpec};

/// The name and mailbox of a child whose spec comes later. Hand out
/// [`child_ref`](Self::child_ref)s first, then turn it into the one spec
/// that serves them with [`spec`](Self::spec) (which consumes it: one spec
/// per address).
///
/// ```
/// # use actix::{Actor, Context, Handler, Message};
/// use actlet::actors::supervisor::{ChildRef, DeclaredChild, SupervisorSpec};
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
///
/// /// Forwards `Add` to its peer.
/// struct Relay(ChildRef<Counter>);
/// impl Actor for Relay {
///     type Context = Context<Self>;
/// }
/// impl Handler<Add> for Relay {
///     type Result = u32;
///     fn handle(&mut self, msg: Add, _: &mut Context<Self>) -> u32 {
///         let _ = self.0.do_send(msg);
///         0
///     }
/// }
///
/// # actlet::testing::run_paused(async {
/// let counter = DeclaredChild::<Counter>::new("counter", 16);
/// let counter_ref = counter.child_ref(); // before the relay's spec
/// let relay = actlet::actors::supervisor::ChildSpec::new("relay", move || Relay(counter_ref.clone()));
/// let relay_ref = relay.child_ref();
/// let counter_ref = counter.child_ref();
/// let _root = SupervisorSpec::new("root")
///     .child(relay)
///     .child(counter.spec(|| Counter(0)))
///     .start_root();
/// relay_ref.send(Add(2)).await.unwrap();
/// assert_eq!(counter_ref.send(Add(0)).await, Ok(2), "the relay reached the declared counter");
/// # });
/// ```
pub struct DeclaredChild<A: Actor<Context = Context<A>>> {
    name: Arc<str>,
    mailbox: Arc<Mailbox<A>>,
}

impl<A: Actor<Context = Context<A>>> std::fmt::Debug for DeclaredChild<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredChild")
            .field("name", &self.name)
            .field("capacity", &self.mailbox.capacity())
            .finish()
    }
}

impl<A: Actor<Context = Context<A>>> DeclaredChild<A> {
    /// A child named `name` with a mailbox of `capacity` messages.
    ///
    /// # Panics
    /// If `name` is empty or contains `/`, or `capacity` is 0.
    ///
    /// ```
    /// # use actlet::actors::supervisor::DeclaredChild;
    /// # use actlet::testing::toy::*;
    /// let declared = DeclaredChild::<Counter>::new("counter", 64);
    /// assert_eq!(declared.child_ref().capacity(), 64);
    /// assert_eq!(declared.child_ref().name(), "counter");
    /// ```
    pub fn new(name: &str, capacity: usize) -> Self {
        assert!(
            !name.is_empty() && !name.contains('/'),
            "child name {name:?} must be non-empty, without '/'"
        );
        Self {
            name: name.into(),
            mailbox: Mailbox::new(capacity),
        }
    }

    /// A stable address of the child (messages queue until it starts).
    ///
    /// ```
    /// # use actlet::actors::supervisor::DeclaredChild;
    /// # use actlet::testing::toy::*;
    /// let declared = DeclaredChild::<Counter>::new("counter", 4);
    /// declared.child_ref().do_send(Add(1)).unwrap(); // queued
    /// assert_eq!(declared.child_ref().queued(), 1, "every ref shares the one mailbox");
    /// ```
    pub fn child_ref(&self) -> ChildRef<A> {
        ChildRef::new(self.name.clone(), self.mailbox.clone())
    }

    /// The spec that serves this address, built by `factory` on every
    /// (re)start. Do not call [`ChildSpec::mailbox_capacity`] on it: that
    /// would replace the mailbox the refs point to.
    ///
    /// ```
    /// # use actlet::actors::supervisor::{DeclaredChild, SupervisorSpec};
    /// # use actlet::testing::toy::*;
    /// # actlet::testing::run_paused(async {
    /// let declared = DeclaredChild::<Counter>::new("counter", 4);
    /// let counter_ref = declared.child_ref();
    /// let _root = SupervisorSpec::new("root").child(declared.spec(|| Counter(5))).start_root();
    /// assert_eq!(counter_ref.send(Add(1)).await, Ok(6));
    /// # });
    /// ```
    pub fn spec(self, factory: impl Fn() -> A + Send + Sync + 'static) -> ChildSpec<A> {
        self.spec_with_context(move |_| factory())
    }

    /// Like [`spec`](Self::spec), the factory also gets the [`ChildContext`].
    ///
    /// ```
    /// # use actlet::actors::supervisor::{ChildContext, DeclaredChild, SupervisorSpec};
    /// # use actlet::testing::toy::*;
    /// # actlet::testing::run_paused(async {
    /// let declared = DeclaredChild::<Counter>::new("counter", 4);
    /// let counter_ref = declared.child_ref();
    /// let spec = declared.spec_with_context(|cx: &ChildContext| Counter(cx.generation() as u32));
    /// let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(1), "the first instance");
    /// # });
    /// ```
    pub fn spec_with_context(self, factory: impl Fn(&ChildContext) -> A + Send + Sync + 'static) -> ChildSpec<A> {
        ChildSpec::with_mailbox(self.name, self.mailbox, factory)
    }
}
