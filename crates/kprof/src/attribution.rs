//! Attributing kernel records to user regions (pure; no GPU).
//!
//! Rules, in order, for each kernel record of a batch:
//! - **(A) external correlation.** If the kernel's correlation id has an external-correlation
//!   record of kind CUSTOM0, the kernel belongs to the region whose id is that external id. This is
//!   exact for kernels launched by the thread that opened the region (the CUPTI id stack is per
//!   thread).
//! - **(B) launch timestamps.** Otherwise, the kernel's launch API record (same correlation id)
//!   gives the CPU time of the launch. If that time lies inside one or more region spans
//!   (`start_ns <= t <= end_ns`, any thread: PyTorch runs backward on worker threads), the kernel
//!   belongs to the innermost one: the containing span that started last (ties: the one with the
//!   larger id).
//! - Otherwise the kernel is unattributed.
//! - **(C) nesting is inclusive.** A kernel attributed to a region is also listed under each of
//!   its ancestors (following `parent`), so an outer region's total includes its inner regions.
//!
//! CUDA graphs: every kernel node of one `cuGraphLaunch` carries the launch's correlation id, so
//! all of them follow the graph launch's region under (A) and (B).
//!
//! Kernels of a region are listed in launch order: by the launch's CPU start, then the kernel's
//! GPU start (kernels without a launch record sort by their GPU start).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::cupti::ffi::EXTERNAL_CORRELATION_KIND_CUSTOM0;
use crate::cupti::records::{ActivityBatch, KernelRecord};
use crate::error::EngineError;

/// One open-then-closed region, in CUPTI timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionSpan {
    /// The external correlation id pushed for this region (an encoded region key).
    pub id: u64,
    /// The id of the enclosing region on the same thread, if nested.
    pub parent: Option<u64>,
    /// OS thread id (gettid) of the thread that opened the region.
    pub thread_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// How a kernel was attributed (for diagnostics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    ExternalCorrelation,
    LaunchTimestamp,
}

/// Kernels per region, plus the ones that belong to no region.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// Region id → its kernels (including those of nested regions), in launch order.
    pub by_region: HashMap<u64, Vec<KernelRecord>>,
    /// Kernels that matched no region, in launch order.
    pub unattributed: Vec<KernelRecord>,
    /// Region id → how many of its *direct* kernels came through each rule.
    pub direct_via: HashMap<u64, (usize, usize)>,
}

impl Attribution {
    /// Total GPU time of a region's kernels (0 if none).
    pub fn total_ns(&self, region: u64) -> u64 {
        self.by_region
            .get(&region)
            .map(|ks| ks.iter().map(|k| k.duration_ns()).sum())
            .unwrap_or(0)
    }
}

/// Attributes every kernel of `batch` to `regions` by the rules in the module documentation.
pub fn attribute(batch: &ActivityBatch, regions: &[RegionSpan]) -> Attribution {
    let mut ext_of_corr: HashMap<u32, u64> = HashMap::new();
    for e in &batch.external {
        if e.external_kind == EXTERNAL_CORRELATION_KIND_CUSTOM0 {
            ext_of_corr.insert(e.correlation_id, e.external_id);
        }
    }
    let mut launch_start: HashMap<u32, u64> = HashMap::new();
    for a in &batch.launches {
        launch_start
            .entry(a.correlation_id)
            .and_modify(|t| *t = (*t).min(a.start_ns))
            .or_insert(a.start_ns);
    }
    let parent_of: HashMap<u64, Option<u64>> = regions.iter().map(|r| (r.id, r.parent)).collect();

    // Sort kernels into launch order once.
    let mut order: Vec<(u64, u64, usize)> = batch
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let t = launch_start.get(&k.correlation_id).copied().unwrap_or(k.start_ns);
            (t, k.start_ns, i)
        })
        .collect();
    order.sort();

    let mut out = Attribution::default();
    for (launch_t, _, i) in order {
        let k = &batch.kernels[i];
        let (region, via) = if let Some(&id) = ext_of_corr.get(&k.correlation_id) {
            (Some(id), Via::ExternalCorrelation)
        } else if launch_start.contains_key(&k.correlation_id) {
            (innermost_containing(regions, launch_t), Via::LaunchTimestamp)
        } else {
            (None, Via::LaunchTimestamp)
        };
        let Some(region) = region else {
            out.unattributed.push(k.clone());
            continue;
        };
        let counts = out.direct_via.entry(region).or_insert((0, 0));
        match via {
            Via::ExternalCorrelation => counts.0 += 1,
            Via::LaunchTimestamp => counts.1 += 1,
        }
        // The region itself and every ancestor (guarding against a malformed parent cycle).
        let mut cur = Some(region);
        let mut hops = 0;
        while let Some(id) = cur {
            out.by_region.entry(id).or_default().push(k.clone());
            cur = parent_of.get(&id).copied().flatten();
            hops += 1;
            if hops > regions.len() + 1 {
                break;
            }
        }
    }
    out
}

fn innermost_containing(regions: &[RegionSpan], t: u64) -> Option<u64> {
    regions
        .iter()
        .filter(|r| r.start_ns <= t && t <= r.end_ns)
        .max_by_key(|r| (r.start_ns, r.id))
        .map(|r| r.id)
}

/// Bit widths of the packed region key: call 12, config 20, run 20, region 12 (= 64).
pub const KEY_BITS: [(&str, u32); 4] = [("call", 12), ("config", 20), ("run", 20), ("region", 12)];

/// The fields of a region key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionKey {
    pub call: u32,
    pub config: u32,
    pub run: u32,
    pub region: u32,
}

/// Packs (call, config, run, region) into one external-correlation id:
/// `call << 52 | config << 32 | run << 12 | region`. Errors name the field that overflowed.
pub fn encode_region_key(call: u32, config: u32, run: u32, region: u32) -> Result<u64, EngineError> {
    let vals = [call, config, run, region];
    let mut key = 0u64;
    for ((field, bits), v) in KEY_BITS.iter().zip(vals) {
        if (v as u64) >> bits != 0 {
            return Err(EngineError::KeyOverflow {
                field,
                value: v as u64,
                bits: *bits,
            });
        }
        key = (key << bits) | v as u64;
    }
    Ok(key)
}

/// Inverse of [`encode_region_key`].
pub fn decode_region_key(key: u64) -> RegionKey {
    let region = (key & 0xfff) as u32;
    let run = ((key >> 12) & 0xf_ffff) as u32;
    let config = ((key >> 32) & 0xf_ffff) as u32;
    let call = (key >> 52) as u32;
    RegionKey {
        call,
        config,
        run,
        region,
    }
}
