//! A toy actor for the supervision API's doc examples (hidden from the docs):
//! `Counter` adds what it is sent, fails on [`Crash`] and stops on [`Quit`].

use actix::{Actor, ActorContext, Context, Handler, Message};

use crate::actors::supervisor::fail;

/// Adds numbers; its state is the running total.
#[derive(Debug)]
pub struct Counter(pub u32);

impl Actor for Counter {
    type Context = Context<Self>;
}

/// Add `n`; answers the new total.
#[derive(Debug, Message)]
#[rtype(result = "u32")]
pub struct Add(pub u32);

/// Fail the instance (the supervisor restarts it per its policy).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Crash;

/// Stop normally.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Quit;

impl Handler<Add> for Counter {
    type Result = u32;

    fn handle(&mut self, Add(n): Add, _: &mut Context<Self>) -> u32 {
        self.0 += n;
        self.0
    }
}

impl Handler<Crash> for Counter {
    type Result = ();

    fn handle(&mut self, _: Crash, ctx: &mut Context<Self>) {
        fail(ctx, "crashed on purpose")
    }
}

impl Handler<Quit> for Counter {
    type Result = ();

    fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
        ctx.stop()
    }
}
