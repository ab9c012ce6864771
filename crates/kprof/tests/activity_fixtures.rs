//! Re-parses every activity fixture under tests/fixtures/activity/ (JSON lines written by the
//! collector with KPROF_RECORD_ACTIVITY on a GPU machine, plus one hand-built synthetic file) and
//! checks parser and attribution invariants on them; the synthetic file also has exact answers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use kprof::attribution::{attribute, decode_region_key, encode_region_key};
use kprof::cupti::ffi::cbid;
use kprof::cupti::RecordedBuffer;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/activity");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_fixture_parses_and_attributes_consistently() {
    let files = fixtures();
    assert!(!files.is_empty());
    for f in files {
        let rb = RecordedBuffer::read_jsonl(&f).unwrap_or_else(|e| panic!("{e}"));
        let mut kernels = 0;
        for fl in &rb.flushes {
            let b = &fl.batch;
            kernels += b.kernels.len();
            let launch_of: HashMap<u32, u64> = b
                .launches
                .iter()
                .map(|a| (a.correlation_id, a.start_ns))
                .collect();
            for k in &b.kernels {
                assert!(k.end_ns >= k.start_ns, "{}: {k:?}", f.display());
                assert!(
                    !k.name.is_empty(),
                    "{}: kernel without a name {k:?}",
                    f.display()
                );
                if let Some(&t) = launch_of.get(&k.correlation_id) {
                    // API and kernel records share one clock: a kernel starts after its launch.
                    assert!(
                        t <= k.start_ns,
                        "{}: launch after kernel {k:?}",
                        f.display()
                    );
                }
            }
            let a = attribute(b, &fl.regions);
            let ext: HashMap<u32, u64> = b
                .external
                .iter()
                .map(|e| (e.correlation_id, e.external_id))
                .collect();
            // Every kernel with an external id lands in that region.
            for k in &b.kernels {
                if let Some(id) = ext.get(&k.correlation_id) {
                    assert!(
                        a.by_region.get(id).is_some_and(|v| v.contains(k)),
                        "{}: {k:?} not in region {id:#x}",
                        f.display()
                    );
                }
            }
            // No kernel launched inside a recorded span is left unattributed.
            for k in &a.unattributed {
                if let Some(&t) = launch_of.get(&k.correlation_id) {
                    assert!(
                        !fl.regions.iter().any(|r| r.start_ns <= t && t <= r.end_ns),
                        "{}: {k:?} launched inside a region but unattributed",
                        f.display()
                    );
                }
            }
            // Graph launches: all nodes share the launch's correlation id.
            let graph_corrs: HashSet<u32> = b
                .launches
                .iter()
                .filter(|l| cbid::is_graph_launch(l.kind, l.cbid))
                .map(|l| l.correlation_id)
                .collect();
            for k in &b.kernels {
                if k.graph_id != 0 && launch_of.contains_key(&k.correlation_id) {
                    assert!(
                        graph_corrs.contains(&k.correlation_id),
                        "{}: {k:?}",
                        f.display()
                    );
                }
            }
        }
        eprintln!(
            "{}: {} flushes, {kernels} kernels",
            f.display(),
            rb.flushes.len()
        );
    }
}

#[test]
fn synthetic_fixture_exact_answers() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/activity/synthetic-cuda13.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap();
    assert_eq!(rb.flushes.len(), 2);

    let f0 = &rb.flushes[0];
    let a_id = encode_region_key(0, 0, 0, 1).unwrap();
    let a = attribute(&f0.batch, &f0.regions);
    let names: Vec<&str> = a.by_region[&a_id].iter().map(|k| k.name.as_str()).collect();
    // 3 kernels by external correlation + one from a worker thread by launch timestamp.
    assert_eq!(
        names,
        ["_Z4gemmv", "_Z6reducev", "_Z8backwardv", "_Z5scalev"]
    );
    assert_eq!(a.direct_via[&a_id], (3, 1));
    assert_eq!(a.total_ns(a_id), 50_000 + 8_000 + 12_000 + 3_000);
    assert_eq!(a.unattributed.len(), 1);
    assert_eq!(a.unattributed[0].name, "_Z7outsidev");

    let f1 = &rb.flushes[1];
    assert_eq!(f1.unparsed, 1, "the marker record is not parsed");
    let b_id = encode_region_key(0, 0, 1, 1).unwrap();
    assert_eq!(decode_region_key(b_id).run, 1);
    let a = attribute(&f1.batch, &f1.regions);
    assert_eq!(a.by_region[&b_id].len(), 3);
    assert!(a.by_region[&b_id].iter().all(|k| k.graph_id == 5));
    assert_eq!(a.total_ns(b_id), 12_000);
}

#[test]
fn h200_fixture_exact_answers() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/activity/h200-cuda13-region-threads.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap();
    let fl = rb.flushes.iter().find(|f| f.flush == 1).expect("flush 1");
    assert_eq!(fl.batch.kernels.len(), 6);
    assert_eq!(fl.batch.external.len(), 3);
    assert!(fl.batch.launches.iter().filter(|l| l.cbid == 307).count() >= 6);
    let id = encode_region_key(0, 0, 0, 1).unwrap();
    let a = attribute(&fl.batch, &fl.regions);
    assert_eq!(a.by_region[&id].len(), 5);
    assert_eq!(a.direct_via[&id], (3, 2));
    assert_eq!(a.unattributed.len(), 1);
    for k in &a.by_region[&id] {
        assert_eq!(k.name, "fill");
        // 64 MiB written at ~1.66 TB/s on the H200.
        assert!((30_000..60_000).contains(&k.duration_ns()), "{k:?}");
    }
}
