//! The tree of NVTX range occurrences (pure): which range encloses which, whatever their domain,
//! their kind (push/pop or start/end) or the thread that opened them, as Nsight Systems projects
//! NVTX ranges and Proton nests its scopes.
//!
//! A range's parent is the innermost other range whose time span holds its own (the one that
//! started last; equal spans: the one opened first is the parent). A range that overlaps another
//! without being inside it (start/end ranges can) is not its child. Each range gets a path, its
//! ancestors' names and its own joined with [`PATH_SEPARATOR`] (`step/sort16m/cub::DeviceRadixSort`),
//! and a depth (0 at the top).

use std::collections::HashMap;

use crate::book::RangeOcc;

/// Between the names of a path.
pub const PATH_SEPARATOR: &str = "/";

/// Where one range occurrence sits in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The enclosing range's id.
    pub parent: Option<u64>,
    /// 0 for a range inside no other.
    pub depth: usize,
    /// The names from the outermost enclosing range down to this one.
    pub path: String,
}

/// The place of every range of `ranges` among them (keyed by range id). One sweep over the
/// ranges sorted by start: O(n log n).
pub fn tree(ranges: &[&RangeOcc]) -> HashMap<u64, Place> {
    let mut order: Vec<&RangeOcc> = ranges.to_vec();
    // Outer before inner: by start, the longer first, then the one opened first.
    order.sort_by_key(|r| (r.start_ns, std::cmp::Reverse(r.end_ns), r.id));
    let mut places: HashMap<u64, Place> = HashMap::with_capacity(order.len());
    // The ranges that may still enclose the next one, outermost first. A range popped because it
    // ends before the next one does cannot enclose any later range that the one after it does
    // not enclose as well, and that one started later (is more inner).
    let mut open: Vec<&RangeOcc> = Vec::new();
    for r in order {
        while open.last().is_some_and(|top| top.end_ns < r.end_ns) {
            open.pop();
        }
        let place = match open.last().and_then(|p| places.get(&p.id).map(|pl| (p.id, pl))) {
            Some((id, pl)) => Place {
                parent: Some(id),
                depth: pl.depth + 1,
                path: format!("{}{PATH_SEPARATOR}{}", pl.path, r.name),
            },
            None => Place {
                parent: None,
                depth: 0,
                path: r.name.clone(),
            },
        };
        places.insert(r.id, place);
        open.push(r);
    }
    places
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::range;

    fn on(mut r: RangeOcc, thread: u32, domain: &str, push_pop: bool) -> RangeOcc {
        r.thread = thread;
        r.domain = domain.into();
        r.push_pop = push_pop;
        r
    }

    #[test]
    fn ranges_of_other_domains_kinds_and_threads_nest_by_their_spans() {
        let ranges = [
            range(1, None, "step", 0, 1000),
            // A library's range in its own domain (no parent in the book: another stack).
            on(range(2, None, "sort16m", 100, 500), 1, "", true),
            on(range(3, None, "cub::DeviceRadixSort", 110, 490), 1, "CCCL", true),
            // A start/end range and a range of another thread, both inside "step".
            on(range(4, None, "cudnn", 600, 700), 1, "cuDNN", false),
            on(range(5, None, "worker", 650, 690), 2, "", true),
            // Overlaps "step" without being inside it.
            range(6, None, "late", 900, 1100),
        ];
        let refs: Vec<&RangeOcc> = ranges.iter().collect();
        let t = tree(&refs);
        let path = |id| t[&id].path.as_str();
        assert_eq!(path(1), "step");
        assert_eq!(path(3), "step/sort16m/cub::DeviceRadixSort");
        assert_eq!((t[&3].depth, t[&3].parent), (2, Some(2)));
        assert_eq!(path(4), "step/cudnn");
        assert_eq!(path(5), "step/cudnn/worker");
        assert_eq!((path(6), t[&6].parent), ("late", None));
    }

    #[test]
    fn equal_spans_nest_in_opening_order_and_siblings_stay_siblings() {
        let ranges = [
            range(7, None, "inner", 10, 20),
            range(3, None, "outer", 10, 20),
            range(8, None, "next", 20, 30),
            range(9, None, "top", 0, 40),
        ];
        let refs: Vec<&RangeOcc> = ranges.iter().collect();
        let t = tree(&refs);
        assert_eq!(t[&7].path, "top/outer/inner");
        assert_eq!(t[&8].path, "top/next");
        assert_eq!(t[&9].depth, 0);
    }
}
