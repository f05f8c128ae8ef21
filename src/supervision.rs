//! Supervision of long-lived actors (the registries): an actor is reached through a
//! [`Supervised`] handle that starts a fresh one when the one it had has died (a panic in a handler ends an actor's
//! task and closes its mailbox). Every message after that goes to the new actor, so one bug
//! costs one request its answer instead of turning every later call into 503 "Mailbox has
//! closed". Caches are rebuilt from storage as they fill again. `/health` pings each registry
//! ([`Probe`]), and answers 503 when one does not answer, so a load balancer takes the node out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix::dev::ToEnvelope;
use actix::prelude::*;
use futures_util::future::BoxFuture;

/// A long-lived actor's address, restarted when its actor has died.
pub struct Supervised<A: Actor<Context = Context<A>>> {
    inner: Arc<Inner<A>>,
}

struct Inner<A: Actor<Context = Context<A>>> {
    name: &'static str,
    make: Box<dyn Fn() -> A + Send + Sync>,
    arbiter: actix::ArbiterHandle,
    addr: RwLock<Addr<A>>,
    restarts: AtomicU64,
}

impl<A: Actor<Context = Context<A>>> Clone for Supervised<A> {
    fn clone(&self) -> Self {
        Supervised {
            inner: self.inner.clone(),
        }
    }
}

impl<A: Actor<Context = Context<A>>> std::fmt::Debug for Supervised<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervised")
            .field("name", &self.inner.name)
            .field("restarts", &self.restarts())
            .finish()
    }
}

impl<A: Actor<Context = Context<A>>> Supervised<A> {
    /// Starts the registry `make` builds on the current arbiter, under `name` (as `/health`
    /// and the metrics show it).
    pub fn start(name: &'static str, make: impl Fn() -> A + Send + Sync + 'static) -> Self {
        let arbiter = actix::Arbiter::current();
        let addr = make().start();
        Supervised {
            inner: Arc::new(Inner {
                name,
                make: Box::new(make),
                arbiter,
                addr: RwLock::new(addr),
                restarts: AtomicU64::new(0),
            }),
        }
    }

    /// The live actor's address: a new actor when the last one has died.
    pub fn addr(&self) -> Addr<A> {
        let current = self
            .inner
            .addr
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if current.connected() {
            return current;
        }
        let mut slot = self.inner.addr.write().unwrap_or_else(|e| e.into_inner());
        if !slot.connected() {
            let inner = self.inner.clone();
            *slot = A::start_in_arbiter(&self.inner.arbiter, move |_| (inner.make)());
            self.inner.restarts.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                registry = self.inner.name,
                "a registry died; it was restarted"
            );
        }
        slot.clone()
    }

    /// Sends a message and waits for its answer (see [`Addr::send`]).
    pub fn send<M>(&self, msg: M) -> actix::dev::Request<A, M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        self.addr().send(msg)
    }

    /// Sends a message without waiting (see [`Addr::do_send`]).
    pub fn do_send<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        self.addr().do_send(msg)
    }

    /// A sender of one kind of message that follows restarts (where an [`Addr::recipient`]
    /// would keep the dead actor's mailbox).
    pub fn notifier<M>(&self) -> Notifier<M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        let this = self.clone();
        Notifier(Arc::new(move |msg| this.do_send(msg)))
    }

    /// How often the actor was restarted since the process started.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }
}

/// Delivers one kind of message to a supervised registry, whichever actor is live.
pub struct Notifier<M>(Arc<dyn Fn(M) + Send + Sync>);

impl<M> Clone for Notifier<M> {
    fn clone(&self) -> Self {
        Notifier(self.0.clone())
    }
}

impl<M> std::fmt::Debug for Notifier<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

impl<M> Notifier<M> {
    /// Sends without waiting.
    pub fn do_send(&self, msg: M) {
        (self.0)(msg)
    }
}

/// Asks a registry to answer at once: it is alive and its mailbox moves.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Ping;

/// A registry `/health` can ping.
pub trait Probe: Send + Sync {
    fn name(&self) -> &'static str;
    /// How often the actor was restarted since the process started.
    fn restarts(&self) -> u64;
    /// Answers when the registry answered a [`Ping`] within `within`, or why not.
    fn ping(&self, within: Duration) -> BoxFuture<'static, Result<(), String>>;
}

impl<A> Probe for Supervised<A>
where
    A: Actor<Context = Context<A>> + Handler<Ping>,
{
    fn name(&self) -> &'static str {
        self.inner.name
    }

    fn restarts(&self) -> u64 {
        Supervised::restarts(self)
    }

    fn ping(&self, within: Duration) -> BoxFuture<'static, Result<(), String>> {
        let request = self.send(Ping);
        Box::pin(async move {
            match tokio::time::timeout(within, request).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {} ms", within.as_millis())),
            }
        })
    }
}

/// Makes each actor type answer [`Ping`] at once.
#[macro_export]
macro_rules! answers_ping {
    ($($actor:ty),* $(,)?) => {$(
        impl actix::Handler<$crate::supervision::Ping> for $actor {
            type Result = ();
            fn handle(&mut self, _: $crate::supervision::Ping, _: &mut actix::Context<Self>) {}
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fragile {
        generation: u64,
    }

    impl Actor for Fragile {
        type Context = Context<Self>;
    }

    #[derive(Message)]
    #[rtype(result = "u64")]
    struct Generation;

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Crash;

    impl Handler<Generation> for Fragile {
        type Result = u64;
        fn handle(&mut self, _: Generation, _: &mut Context<Self>) -> u64 {
            self.generation
        }
    }

    impl Handler<Crash> for Fragile {
        type Result = ();
        fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
            panic!("a bug in a handler");
        }
    }

    impl Handler<Ping> for Fragile {
        type Result = ();
        fn handle(&mut self, _: Ping, _: &mut Context<Self>) {}
    }

    #[actix::test]
    async fn a_registry_that_panicked_is_restarted_and_answers_again() {
        let generation = Arc::new(AtomicU64::new(0));
        let made = generation.clone();
        let registry = Supervised::start("fragile", move || Fragile {
            generation: made.fetch_add(1, Ordering::SeqCst),
        });
        assert_eq!(registry.send(Generation).await.ok(), Some(0));
        // The panic ends the actor's task: this request gets no answer...
        assert!(registry.send(Crash).await.is_err());
        // ...and the next one reaches a fresh actor.
        assert_eq!(registry.send(Generation).await.ok(), Some(1));
        assert_eq!(registry.restarts(), 1);
        assert!(registry.ping(Duration::from_secs(1)).await.is_ok());
        // A notifier made before the restart reaches the live actor.
        let notifier = registry.notifier::<Crash>();
        notifier.do_send(Crash);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(registry.send(Generation).await.ok(), Some(2));
    }

    #[actix::test]
    async fn a_registry_that_does_not_answer_fails_its_probe() {
        struct Stuck;
        impl Actor for Stuck {
            type Context = Context<Self>;
        }
        impl Handler<Ping> for Stuck {
            type Result = ResponseActFuture<Self, ()>;
            fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
                // Answers only after a minute: as a registry whose mailbox is stuck.
                Box::pin(tokio::time::sleep(Duration::from_secs(60)).into_actor(self))
            }
        }
        let registry = Supervised::start("stuck", || Stuck);
        let answer = registry.ping(Duration::from_millis(100)).await;
        assert!(answer.is_err_and(|e| e.contains("no answer")));
    }
}
