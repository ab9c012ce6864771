//! NVTX bookkeeping, pure: domains and registered strings by handle, push/pop stacks per
//! (thread, domain), start/end ranges by id, and the list of closed range occurrences.
//!
//! Handles given to the program are small integers (1, 2, ...) disguised as pointers: NVTX treats
//! domain and string handles as opaque, and the injection that creates them is the only one that
//! reads them, so nothing is ever dereferenced. Domain handle 0 (NULL) is NVTX's default domain.

use std::collections::HashMap;

use serde::Serialize;

/// One closed NVTX range occurrence, in the clock of [`crate::now_ns`] (CUPTI's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeOcc {
    /// Unique per process, in order of opening (1, 2, ...).
    pub id: u64,
    /// The enclosing push/pop range of the same thread and domain, if any.
    pub parent: Option<u64>,
    /// OS thread id that opened the range.
    pub thread: u32,
    /// Domain name ("" for NVTX's default domain).
    pub domain: String,
    /// The range's message.
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The launch-order numbers at opening and closing ([`Stamp::correlation_id`]; 0: none).
    pub start_correlation_id: u32,
    pub end_correlation_id: u32,
    /// Push/pop (thread range) or start/end (process range).
    pub push_pop: bool,
}

/// When a range opened or closed: CUPTI's clock and, with `attribution="order"`, CUPTI's
/// correlation id of a call made then (launches numbered between a range's two ids were made
/// while it was open; 0: none taken).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    pub ns: u64,
    pub correlation_id: u32,
}

impl From<u64> for Stamp {
    /// A stamp with a time only.
    fn from(ns: u64) -> Stamp {
        Stamp { ns, correlation_id: 0 }
    }
}

#[derive(Debug, Clone)]
struct Open {
    id: u64,
    parent: Option<u64>,
    thread: u32,
    domain: u64,
    name: String,
    start_ns: u64,
    start_correlation_id: u32,
    push_pop: bool,
}

/// Counters of things that did not pair up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Anomalies {
    /// Pops with an empty stack.
    pub unmatched_pops: u64,
    /// RangeEnd with an unknown id.
    pub unmatched_ends: u64,
    /// Ranges still open when results were taken (dropped).
    pub left_open: u64,
}

/// All NVTX state of one process.
#[derive(Debug, Default)]
pub struct Book {
    next_id: u64,
    domains: Vec<String>,
    strings: Vec<String>,
    stacks: HashMap<(u32, u64), Vec<Open>>,
    started: HashMap<u64, Open>,
    /// Closed ranges, in order of closing.
    pub done: Vec<RangeOcc>,
    pub anomalies: Anomalies,
    /// Calls received, for the self-test and the status file.
    pub calls: u64,
}

impl Book {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a domain and returns its handle (>= 1). The same name returns the same handle.
    pub fn create_domain(&mut self, name: &str) -> u64 {
        if let Some(i) = self.domains.iter().position(|d| d == name) {
            return i as u64 + 1;
        }
        self.domains.push(name.to_string());
        self.domains.len() as u64
    }

    /// The name of a domain handle ("" for the default domain 0 or an unknown handle).
    pub fn domain_name(&self, handle: u64) -> &str {
        if handle == 0 {
            return "";
        }
        self.domains.get(handle as usize - 1).map(String::as_str).unwrap_or("")
    }

    /// Registers a string and returns its handle (>= 1).
    pub fn register_string(&mut self, s: &str) -> u64 {
        if let Some(i) = self.strings.iter().position(|x| x == s) {
            return i as u64 + 1;
        }
        self.strings.push(s.to_string());
        self.strings.len() as u64
    }

    /// The text of a registered-string handle.
    pub fn string(&self, handle: u64) -> Option<&str> {
        if handle == 0 {
            return None;
        }
        self.strings.get(handle as usize - 1).map(String::as_str)
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// nvtxRangePush / nvtxDomainRangePushEx: returns the 0-based level of the pushed range.
    pub fn push(&mut self, thread: u32, domain: u64, name: &str, t: impl Into<Stamp>) -> i32 {
        let t = t.into();
        self.calls += 1;
        let id = self.new_id();
        let stack = self.stacks.entry((thread, domain)).or_default();
        let parent = stack.last().map(|o| o.id);
        stack.push(Open {
            id,
            parent,
            thread,
            domain,
            name: name.to_string(),
            start_ns: t.ns,
            start_correlation_id: t.correlation_id,
            push_pop: true,
        });
        stack.len() as i32 - 1
    }

    /// nvtxRangePop / nvtxDomainRangePop: returns the level of the popped range, or -1 when the
    /// stack of (thread, domain) was empty.
    pub fn pop(&mut self, thread: u32, domain: u64, t: impl Into<Stamp>) -> i32 {
        let t = t.into();
        self.calls += 1;
        let Some(stack) = self.stacks.get_mut(&(thread, domain)) else {
            self.anomalies.unmatched_pops += 1;
            return -1;
        };
        let Some(open) = stack.pop() else {
            self.anomalies.unmatched_pops += 1;
            return -1;
        };
        let level = stack.len() as i32;
        self.close(open, t);
        level
    }

    /// nvtxRangeStart / nvtxDomainRangeStartEx: returns the range id (>= 1).
    pub fn start(&mut self, thread: u32, domain: u64, name: &str, t: impl Into<Stamp>) -> u64 {
        let t = t.into();
        self.calls += 1;
        let id = self.new_id();
        self.started.insert(
            id,
            Open {
                id,
                parent: None,
                thread,
                domain,
                name: name.to_string(),
                start_ns: t.ns,
                start_correlation_id: t.correlation_id,
                push_pop: false,
            },
        );
        id
    }

    /// nvtxRangeEnd / nvtxDomainRangeEnd.
    pub fn end(&mut self, id: u64, t: impl Into<Stamp>) {
        let t = t.into();
        self.calls += 1;
        match self.started.remove(&id) {
            Some(open) => self.close(open, t),
            None => self.anomalies.unmatched_ends += 1,
        }
    }

    fn close(&mut self, open: Open, t: Stamp) {
        let domain = self.domain_name(open.domain).to_string();
        self.done.push(RangeOcc {
            id: open.id,
            parent: open.parent,
            thread: open.thread,
            domain,
            name: open.name,
            start_ns: open.start_ns,
            end_ns: t.ns.max(open.start_ns),
            start_correlation_id: open.start_correlation_id,
            end_correlation_id: t.correlation_id,
            push_pop: open.push_pop,
        });
    }

    /// Ranges still open (counted in [`Anomalies::left_open`] by [`Book::take_closed`]).
    pub fn open_count(&self) -> usize {
        self.stacks.values().map(Vec::len).sum::<usize>() + self.started.len()
    }

    /// The closed ranges sorted by start (then id); open ones are counted as left open.
    pub fn take_closed(&mut self) -> Vec<RangeOcc> {
        self.anomalies.left_open += self.open_count() as u64;
        let mut v = std::mem::take(&mut self.done);
        v.sort_by_key(|r| (r.start_ns, r.id));
        v
    }

    /// Removes every closed range named `name` (the self-test's), returning how many there were.
    pub fn remove_named(&mut self, name: &str) -> usize {
        let before = self.done.len();
        self.done.retain(|r| r.name != name);
        before - self.done.len()
    }
}

static BOOK: std::sync::LazyLock<std::sync::Mutex<Book>> =
    std::sync::LazyLock::new(|| std::sync::Mutex::new(Book::new()));

/// Runs `f` on the process's book (the NVTX callbacks' shared state).
pub fn with<T>(f: impl FnOnce(&mut Book) -> T) -> T {
    let mut b = BOOK.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_nest_per_thread_and_domain() {
        let mut b = Book::new();
        let d = b.create_domain("app");
        assert_eq!(b.create_domain("app"), d);
        assert_eq!(b.push(1, 0, "outer", 10), 0);
        assert_eq!(b.push(1, 0, "inner", 20), 1);
        // Another thread and another domain have their own stacks.
        assert_eq!(b.push(2, 0, "t2", 21), 0);
        assert_eq!(b.push(1, d, "dom", 22), 0);
        assert_eq!(b.pop(1, 0, 30), 1); // inner
        assert_eq!(b.pop(2, 0, 31), 0);
        assert_eq!(b.pop(1, d, 32), 0);
        assert_eq!(b.pop(1, 0, 40), 0); // outer
        assert_eq!(b.pop(1, 0, 41), -1);
        assert_eq!(b.anomalies.unmatched_pops, 1);
        let r = b.take_closed();
        let names: Vec<_> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["outer", "inner", "t2", "dom"]);
        let outer = &r[0];
        let inner = &r[1];
        assert_eq!((outer.start_ns, outer.end_ns), (10, 40));
        assert_eq!(inner.parent, Some(outer.id));
        assert_eq!(r[2].parent, None);
        assert_eq!(r[3].domain, "app");
        assert_eq!(r[3].parent, None);
        assert_eq!(b.anomalies.left_open, 0);
    }

    #[test]
    fn start_end_pair_by_id_across_threads() {
        let mut b = Book::new();
        let a = b.start(1, 0, "a", 5);
        let c = b.start(1, 0, "c", 6);
        assert_ne!(a, c);
        b.end(c, 9); // ended out of order, on any thread
        b.end(a, 12);
        b.end(999, 13);
        assert_eq!(b.anomalies.unmatched_ends, 1);
        let r = b.take_closed();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].name.as_str(), r[0].start_ns, r[0].end_ns), ("a", 5, 12));
        assert!(!r[0].push_pop);
    }

    #[test]
    fn open_ranges_are_counted_and_dropped() {
        let mut b = Book::new();
        b.push(1, 0, "never_popped", 1);
        b.start(1, 0, "never_ended", 2);
        assert!(b.take_closed().is_empty());
        assert_eq!(b.anomalies.left_open, 2);
    }

    #[test]
    fn registered_strings_and_unknown_handles() {
        let mut b = Book::new();
        let s = b.register_string("matmul");
        assert_eq!(b.string(s), Some("matmul"));
        assert_eq!(b.register_string("matmul"), s);
        assert_eq!(b.string(0), None);
        assert_eq!(b.string(77), None);
        assert_eq!(b.domain_name(0), "");
        assert_eq!(b.domain_name(42), "");
    }
}
