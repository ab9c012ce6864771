//! Lending a `&mut` to code further down the same thread's call stack that cannot take it as an
//! argument: the benchmark's [`Run`](crate::runner::Run) to kprof-py's Python callbacks (a region
//! opened by `annotate` belongs to the run that is calling into Python), and the counter pass's range
//! sink to the regions of the run (they reach it through the backend, a `'static` trait object). Not
//! a binding, but the same kind of code, kept here so that the engine's `unsafe` is all in one layer.
//! A slot is a `thread_local!`; a value is in it only while the closure given to `lend` runs (a guard
//! takes it back however the closure ends), and [`Lent::with`] takes it out while its own closure
//! runs, so a nested `with` gets `None` and there is never a second `&mut`.

use std::cell::Cell;
use std::ptr::NonNull;

/// A thread-local slot through which a `&mut T` is lent ([`Lent::lend`]) and used deeper in the
/// same thread's call stack ([`Lent::with`]).
pub struct Lent<T: ?Sized + 'static> {
    slot: Cell<Option<NonNull<T>>>,
}

/// Puts the slot's previous value back when dropped.
struct Restore<'s, T: ?Sized + 'static> {
    slot: &'s Cell<Option<NonNull<T>>>,
    previous: Option<NonNull<T>>,
}

impl<T: ?Sized + 'static> Drop for Restore<'_, T> {
    fn drop(&mut self) {
        self.slot.set(self.previous);
    }
}

impl<T: ?Sized + 'static> Lent<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        Lent { slot: Cell::new(None) }
    }

    /// Lends `value` to [`Lent::with`] calls on this thread while `f` runs.
    pub fn lend<R>(&self, value: &mut T, f: impl FnOnce() -> R) -> R {
        self.lend_ptr(NonNull::from(value), f)
    }

    fn lend_ptr<R>(&self, value: NonNull<T>, f: impl FnOnce() -> R) -> R {
        let _restore = Restore {
            slot: &self.slot,
            previous: self.slot.replace(Some(value)),
        };
        f()
    }

    /// Calls `f` with the value lent further up this thread's stack; `None` (and `f` not called)
    /// when nothing is lent, or when it is already in use by an enclosing `with`.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let p = self.slot.take()?;
        let _restore = Restore {
            slot: &self.slot,
            previous: Some(p),
        };
        // SAFETY: `p` comes from a `lend` call that is still running further up this thread's
        // stack (the slot is reset when it returns), whose caller cannot use the value meanwhile
        // (it is mutably borrowed by that call); and the slot is empty while `f` runs, so this is
        // the only reference made from it.
        Some(f(unsafe { &mut *p.as_ptr() }))
    }
}

impl<T: ?Sized + 'static> Default for Lent<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Opens and closes named ranges (user replay): what the regions of a counter pass call, on the
/// GPU the Range Profiler's `UserRanges`. It borrows the profiler's session, so it is not
/// `'static`; [`Lent::lend_sink`] lends it all the same.
pub(crate) trait RangeSink {
    /// The sink's error.
    type Error;
    /// Opens a range named `name`.
    fn push(&mut self, name: &str) -> Result<(), Self::Error>;
    /// Closes the innermost range.
    fn pop(&mut self) -> Result<(), Self::Error>;
}

impl<E: 'static> Lent<dyn RangeSink<Error = E>> {
    /// Lends a range sink of any lifetime to [`Lent::with`] calls on this thread while `f` runs.
    pub(crate) fn lend_sink<R>(&self, sink: &mut (dyn RangeSink<Error = E> + '_), f: impl FnOnce() -> R) -> R {
        let p: NonNull<dyn RangeSink<Error = E> + '_> = NonNull::from(sink);
        // SAFETY: only the trait object's lifetime bound changes (same pointer, same vtable). The
        // sink is reachable through the slot only while `f` runs, while `sink` stays mutably
        // borrowed by this call (see `with`); and `RangeSink` has no lifetime parameter, so no
        // method can make use of the longer bound.
        let p: NonNull<dyn RangeSink<Error = E> + 'static> = unsafe { std::mem::transmute(p) };
        self.lend_ptr(p, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static SLOT: Lent<Vec<u32>> = const { Lent::new() };
    }

    #[test]
    fn lent_while_the_closure_runs_and_never_twice() {
        assert_eq!(SLOT.with(|s| s.with(|v| v.len())), None);
        let mut v = vec![1, 2];
        let n = SLOT.with(|s| {
            s.lend(&mut v, || {
                SLOT.with(|s| {
                    s.with(|v| {
                        v.push(3);
                        // Nested: the value is in use.
                        assert_eq!(SLOT.with(|s| s.with(|_| ())), None);
                        v.len()
                    })
                })
            })
        });
        assert_eq!(n, Some(3));
        assert_eq!(v, vec![1, 2, 3]);
        assert_eq!(SLOT.with(|s| s.with(|v| v.len())), None, "taken back after lend");
    }
}
