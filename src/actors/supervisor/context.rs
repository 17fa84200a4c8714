//! [`ChildContext`]: what a child's factory knows about the instance it
//! is building (its path, name, generation and the live tree).

use super::tree::SupervisionTree;

/// What a factory knows about the instance it is building.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// // The factory sees where (and how many times) it is building the child.
/// let (tx, rx) = std::sync::mpsc::channel();
/// let spec = ChildSpec::with_context("counter", move |cx: &ChildContext| {
///     tx.send(format!("{} #{}", cx.path(), cx.generation())).unwrap();
///     Counter(0)
/// });
/// let counter_ref = spec.child_ref();
/// let _root = SupervisorSpec::new("root").child(spec).start_root();
/// counter_ref.do_send(Crash).unwrap();
/// assert_eq!(counter_ref.send(Add(0)).await, Ok(0)); // served by the second instance
/// assert_eq!(rx.try_iter().collect::<Vec<_>>(), ["root/counter #1", "root/counter #2"]);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ChildContext {
    pub(crate) path: String,
    pub(crate) name: String,
    pub(crate) generation: u64,
    pub(crate) tree: SupervisionTree,
}

impl ChildContext {
    /// Path of the child in the tree, e.g. `root/pod-workers/pod-1234`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # use std::sync::{Arc, Mutex};
    /// # actlet::testing::run_paused(async {
    /// # let seen = Arc::new(Mutex::new(None));
    /// # let sink = seen.clone();
    /// # let spec = ChildSpec::with_context("counter", move |cx: &ChildContext| {
    /// #     *sink.lock().unwrap() = Some(cx.clone());
    /// #     Counter(0)
    /// # });
    /// # let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// # tokio::time::sleep(Duration::from_millis(10)).await;
    /// # let cx: ChildContext = seen.lock().unwrap().clone().unwrap();
    /// assert_eq!(cx.path(), "root/counter");
    /// # });
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
    /// Name of the child.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # use std::sync::{Arc, Mutex};
    /// # actlet::testing::run_paused(async {
    /// # let seen = Arc::new(Mutex::new(None));
    /// # let sink = seen.clone();
    /// # let spec = ChildSpec::with_context("counter", move |cx: &ChildContext| {
    /// #     *sink.lock().unwrap() = Some(cx.clone());
    /// #     Counter(0)
    /// # });
    /// # let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// # tokio::time::sleep(Duration::from_millis(10)).await;
    /// # let cx: ChildContext = seen.lock().unwrap().clone().unwrap();
    /// assert_eq!(cx.name(), "counter");
    /// # });
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
    /// 1 for the first instance, +1 for every restart (per supervisor instance).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let spec = ChildSpec::with_context("counter", |cx: &ChildContext| Counter(100 * cx.generation() as u32));
    /// let counter_ref = spec.child_ref();
    /// let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(100));
    /// counter_ref.do_send(Crash).unwrap();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok(200), "built by the second factory call");
    /// # });
    /// ```
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// The live tree this child belongs to.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # use std::sync::{Arc, Mutex};
    /// # actlet::testing::run_paused(async {
    /// # let seen = Arc::new(Mutex::new(None));
    /// # let sink = seen.clone();
    /// # let spec = ChildSpec::with_context("counter", move |cx: &ChildContext| {
    /// #     *sink.lock().unwrap() = Some(cx.clone());
    /// #     Counter(0)
    /// # });
    /// # let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// # tokio::time::sleep(Duration::from_millis(10)).await;
    /// # let cx: ChildContext = seen.lock().unwrap().clone().unwrap();
    /// assert_eq!(cx.tree().get("root").unwrap().kind, "Supervisor");
    /// # });
    /// ```
    pub fn tree(&self) -> &SupervisionTree {
        &self.tree
    }
}
