//! Where a process and its samples ran: the process's rank, from the launcher's environment
//! ([`detect_rank`], the variables of [`RANK_VARS`] in order), and the device of each sample, from
//! its kernel records ([`sample_columns`]; pure but for [`device_uuids`]).
//!
//! Which launcher sets which variable, and what `Rank` and `Device` mean in the results:
//! `docs/kprof-run.md` (Multi-process and multi-GPU programs).

use std::collections::BTreeMap;

use kprof::cupti::records::KernelRecord;
use kprof::run_spec::{DEVICE_COLUMN, DEVICE_UUID_COLUMN, RANK_COLUMN};
use kprof_core::ExtraValue;
use serde::Serialize;

/// The variables a rank is read from, in order (which launcher sets which: `docs/kprof-run.md`).
pub const RANK_VARS: [&str; 6] = [
    "RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
    "LOCAL_RANK",
];

const WORLD_SIZE_VARS: [&str; 5] = [
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMIX_SIZE",
    "SLURM_NTASKS",
];
const LOCAL_RANK_VARS: [&str; 4] = [
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "SLURM_LOCALID",
];

/// A process's rank as its launcher gave it (the status file's `rank`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rank {
    /// The rank.
    pub rank: u32,
    /// The variable it was read from.
    pub source: &'static str,
    /// The rank on its node, when the launcher says.
    pub local_rank: Option<u32>,
    /// The number of ranks, when the launcher says.
    pub world_size: Option<u32>,
}

fn number(get: &impl Fn(&str) -> Option<String>, var: &str) -> Option<u32> {
    get(var)?.trim().parse().ok()
}

fn first(get: &impl Fn(&str) -> Option<String>, vars: &[&'static str]) -> Option<(u32, &'static str)> {
    vars.iter().find_map(|&v| number(get, v).map(|n| (n, v)))
}

/// The rank of this process from its environment (`get`: the variable's value): the first of
/// [`RANK_VARS`] that holds a non-negative integer (`SLURM_PROCID` only when `SLURM_NTASKS` or
/// `SLURM_NPROCS` is above 1); `None` when no launcher gave one.
pub fn detect_rank(get: impl Fn(&str) -> Option<String>) -> Option<Rank> {
    let slurm_tasks = number(&get, "SLURM_NTASKS").or_else(|| number(&get, "SLURM_NPROCS"));
    let vars: Vec<&'static str> = RANK_VARS
        .iter()
        .copied()
        .filter(|&v| v != "SLURM_PROCID" || slurm_tasks.is_some_and(|n| n > 1))
        .collect();
    let (rank, source) = first(&get, &vars)?;
    Some(Rank {
        rank,
        source,
        local_rank: first(&get, &LOCAL_RANK_VARS).map(|(n, _)| n),
        world_size: first(&get, &WORLD_SIZE_VARS).map(|(n, _)| n),
    })
}

/// The distinct devices of some kernels, ascending.
pub fn devices_of(kernels: &[KernelRecord]) -> Vec<u32> {
    let mut d: Vec<u32> = kernels.iter().map(|k| k.device_id).collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// The placement columns of one sample whose kernels are `kernels`: `Rank` (when the process has
/// one), `Device` and, for a sample of one device whose UUID is known, `DeviceUUID`.
pub fn sample_columns(
    rank: Option<u32>,
    kernels: &[KernelRecord],
    uuids: &BTreeMap<u32, String>,
) -> Vec<(&'static str, ExtraValue)> {
    let mut out = Vec::with_capacity(3);
    if let Some(r) = rank {
        out.push((RANK_COLUMN, ExtraValue::Number(r as f64)));
    }
    match devices_of(kernels)[..] {
        [] => {}
        [d] => {
            out.push((DEVICE_COLUMN, ExtraValue::Number(d as f64)));
            if let Some(u) = uuids.get(&d) {
                out.push((DEVICE_UUID_COLUMN, ExtraValue::Text(u.clone())));
            }
        }
        ref several => {
            let text: Vec<String> = several.iter().map(u32::to_string).collect();
            out.push((DEVICE_COLUMN, ExtraValue::Text(text.join("|"))));
        }
    }
    out
}

/// One device the process's kernels ran on (the status file's `devices`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceSeen {
    /// The CUDA device ordinal in the process.
    pub ordinal: u32,
    /// `GPU-...`, when the driver gave it.
    pub uuid: Option<String>,
    /// The device's name, when the driver gave it.
    pub name: Option<String>,
    /// Kernel records of this device.
    pub kernels: usize,
}

/// The devices of `kernels` with their UUIDs and names from the driver (at exit CUDA is
/// initialised; a device the driver cannot describe has neither).
pub fn device_uuids(kernels: &[KernelRecord]) -> Vec<DeviceSeen> {
    let driver = kprof::Driver::load(&kprof::loader::SearchEnv::from_process()).ok();
    devices_of(kernels)
        .into_iter()
        .map(|ordinal| {
            let props = driver.and_then(|d| d.device_info(ordinal as i32).ok());
            DeviceSeen {
                ordinal,
                uuid: props.as_ref().map(|p| p.uuid.clone()).filter(|u| !u.is_empty()),
                name: props.map(|p| p.name).filter(|n| !n.is_empty()),
                kernels: kernels.iter().filter(|k| k.device_id == ordinal).count(),
            }
        })
        .collect()
}

/// The UUIDs of [`DeviceSeen`]s by ordinal.
pub fn uuid_map(devices: &[DeviceSeen]) -> BTreeMap<u32, String> {
    devices
        .iter()
        .filter_map(|d| d.uuid.clone().map(|u| (d.ordinal, u)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::kernel;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn torchrun_rank_local_rank_and_world_size() {
        let r = detect_rank(env(&[("RANK", "3"), ("LOCAL_RANK", "1"), ("WORLD_SIZE", "4")])).unwrap();
        assert_eq!(
            r,
            Rank {
                rank: 3,
                source: "RANK",
                local_rank: Some(1),
                world_size: Some(4)
            }
        );
    }

    #[test]
    fn launchers_in_order_and_bad_values_skipped() {
        assert_eq!(detect_rank(env(&[])), None);
        let r = detect_rank(env(&[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "8")])).unwrap();
        assert_eq!((r.rank, r.source, r.world_size), (2, "OMPI_COMM_WORLD_RANK", Some(8)));
        let r = detect_rank(env(&[("PMI_RANK", "5"), ("LOCAL_RANK", "1")])).unwrap();
        assert_eq!((r.rank, r.source), (5, "PMI_RANK"));
        // RANK wins over the others; a blank or non-numeric RANK is skipped.
        let r = detect_rank(env(&[("RANK", "1"), ("PMI_RANK", "5")])).unwrap();
        assert_eq!(r.source, "RANK");
        let r = detect_rank(env(&[("RANK", " "), ("PMIX_RANK", "4")])).unwrap();
        assert_eq!((r.rank, r.source), (4, "PMIX_RANK"));
        let r = detect_rank(env(&[("RANK", "-1"), ("LOCAL_RANK", "0")])).unwrap();
        assert_eq!((r.rank, r.source, r.local_rank), (0, "LOCAL_RANK", Some(0)));
    }

    #[test]
    fn slurm_procid_counts_only_in_a_step_of_several_tasks() {
        assert_eq!(detect_rank(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")])), None);
        assert_eq!(detect_rank(env(&[("SLURM_PROCID", "0")])), None);
        let r = detect_rank(env(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "1"),
        ]))
        .unwrap();
        assert_eq!(
            (r.rank, r.source, r.local_rank, r.world_size),
            (3, "SLURM_PROCID", Some(1), Some(4))
        );
        let r = detect_rank(env(&[("SLURM_PROCID", "1"), ("SLURM_NPROCS", "2")])).unwrap();
        assert_eq!(r.rank, 1);
        // torchrun inside an allocation: RANK first.
        let r = detect_rank(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("RANK", "7")])).unwrap();
        assert_eq!(r.rank, 7);
    }

    #[test]
    fn sample_columns_name_the_rank_and_the_device() {
        let mut a = kernel(1, "k", 0, 1);
        a.device_id = 1;
        let uuids: BTreeMap<u32, String> = [(1, "GPU-1".to_string())].into();
        let cols = sample_columns(Some(2), std::slice::from_ref(&a), &uuids);
        assert_eq!(
            cols,
            [
                ("Rank", ExtraValue::Number(2.0)),
                ("Device", ExtraValue::Number(1.0)),
                ("DeviceUUID", ExtraValue::Text("GPU-1".into())),
            ]
        );
        // No rank, a device without a known UUID.
        let b = kernel(2, "k", 5, 1);
        assert_eq!(
            sample_columns(None, std::slice::from_ref(&b), &uuids),
            [("Device", ExtraValue::Number(0.0))]
        );
        // A range over two devices: both ordinals, no UUID.
        assert_eq!(
            sample_columns(None, &[a.clone(), b, a], &uuids),
            [("Device", ExtraValue::Text("0|1".into()))]
        );
    }
}
