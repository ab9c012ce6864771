//! `kprof run --gpus all|0,2`: which GPUs the executions run on, found without CUDA by the Python
//! door's rule (`devices=` in `python/kprof/scaleout.py`): the entries of kprof's own
//! `CUDA_VISIBLE_DEVICES`, else one per entry of [`NVIDIA_GPUS_DIR`] ([`visible_devices`]). Each
//! worker's executions get `CUDA_VISIBLE_DEVICES` set to its entry ([`Gpu::visible`]), and every
//! sample they leave gets that entry as its `Device` ([`set_device`]): inside an execution CUDA sees
//! one GPU, as device 0.
//!
//! The rule with examples: `docs/kprof-run.md` (The executions on several GPUs).

use std::path::Path;

use anyhow::{bail, Result};
use kprof::run_spec::DEVICE_COLUMN;
use kprof_core::{ExtraValue, RawResults};

/// The driver's folder of GPUs: one entry per NVIDIA GPU of the machine.
pub const NVIDIA_GPUS_DIR: &str = "/proc/driver/nvidia/gpus";

/// The fix that ends every `--gpus` error.
const GPUS_FORMS: &str = "give `--gpus all` or distinct CUDA ordinals such as `--gpus 0,2`";

/// One worker's GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// Its ordinal among the GPUs kprof sees (what `--gpus` names).
    pub ordinal: usize,
    /// Its entry of kprof's `CUDA_VISIBLE_DEVICES` (else `ordinal` as text): the value of the
    /// executions' `CUDA_VISIBLE_DEVICES` and of their samples' `Device`.
    pub visible: String,
}

impl Gpu {
    /// The `Device` value of its samples: a number for a numbered GPU, else the entry as text
    /// (a `GPU-...` UUID or `MIG-...` entry of `CUDA_VISIBLE_DEVICES`).
    pub fn device_value(&self) -> ExtraValue {
        match self.visible.parse::<u32>() {
            Ok(n) => ExtraValue::Number(f64::from(n)),
            Err(_) => ExtraValue::Text(self.visible.clone()),
        }
    }
}

/// The GPUs kprof sees, as `CUDA_VISIBLE_DEVICES` entries: those of `cuda_visible` (the
/// variable's value) when set, else `0..n` for the `n` entries of `gpus_dir` (none when it
/// cannot be read: no NVIDIA driver).
pub fn visible_devices(cuda_visible: Option<&str>, gpus_dir: &Path) -> Vec<String> {
    if let Some(env) = cuda_visible {
        return env
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(String::from)
            .collect();
    }
    let count = std::fs::read_dir(gpus_dir).map(|rd| rd.count()).unwrap_or(0);
    (0..count).map(|i| i.to_string()).collect()
}

/// Where the visible GPUs came from, for errors.
fn source(cuda_visible: Option<&str>) -> String {
    match cuda_visible {
        Some(v) => format!("CUDA_VISIBLE_DEVICES={v}"),
        None => format!("CUDA_VISIBLE_DEVICES unset: the entries of {NVIDIA_GPUS_DIR}"),
    }
}

/// Parses `--gpus` (`all`, or distinct comma-separated ordinals) against the GPUs kprof sees
/// (`visible`, from [`visible_devices`]; `cuda_visible` only names their source in errors): one
/// [`Gpu`] per worker, in the order given.
pub fn parse_gpus(spec: &str, visible: &[String], cuda_visible: Option<&str>) -> Result<Vec<Gpu>> {
    let spec = spec.trim();
    if visible.is_empty() {
        bail!(
            "--gpus {spec}: this machine shows no NVIDIA GPU (no {NVIDIA_GPUS_DIR} entries; \
             CUDA_VISIBLE_DEVICES unset or empty); run on a machine with a GPU, or leave --gpus out"
        );
    }
    let ordinals: Vec<usize> = if spec == "all" {
        (0..visible.len()).collect()
    } else {
        parse_ordinals(spec)?
    };
    if let Some(&missing) = ordinals.iter().find(|&&o| o >= visible.len()) {
        bail!(
            "--gpus {spec}: there is no GPU {missing} here; kprof sees {} ({}), ordinals 0 to {}; {GPUS_FORMS}",
            visible.len(),
            source(cuda_visible),
            visible.len() - 1
        );
    }
    Ok(ordinals
        .into_iter()
        .map(|ordinal| Gpu {
            ordinal,
            visible: visible[ordinal].clone(),
        })
        .collect())
}

/// `0,2` as ordinals: each a whole number, none twice, at least one.
fn parse_ordinals(spec: &str) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    for item in spec.split(',').map(str::trim) {
        let Ok(ordinal) = item.parse::<usize>() else {
            bail!("--gpus {spec}: {item:?} is not a GPU ordinal; {GPUS_FORMS}");
        };
        if out.contains(&ordinal) {
            bail!("--gpus {spec}: GPU {ordinal} is listed twice (one worker per GPU); {GPUS_FORMS}");
        }
        out.push(ordinal);
    }
    Ok(out)
}

/// Sets the `Device` of every sample of `raw` to `gpu`'s ([`Gpu::device_value`]), adding the
/// column when the process file had none.
pub fn set_device(raw: &mut RawResults, gpu: &Gpu) {
    let values = vec![gpu.device_value(); raw.samples.len()];
    match raw.extras.iter_mut().find(|c| c.name == DEVICE_COLUMN) {
        Some(column) => column.values = values,
        None => raw.extras.push(kprof_core::ExtraColumn {
            name: DEVICE_COLUMN.to_string(),
            values,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus_dir(n: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..n {
            std::fs::create_dir(dir.path().join(format!("0000:{:02x}:00.0", 0x18 + i))).unwrap();
        }
        dir
    }

    fn err(spec: &str, visible: &[String]) -> String {
        parse_gpus(spec, visible, None).unwrap_err().to_string()
    }

    #[test]
    fn the_visible_gpus_are_the_drivers_unless_cuda_visible_devices_is_set() {
        let dir = gpus_dir(3);
        assert_eq!(visible_devices(None, dir.path()), ["0", "1", "2"]);
        assert_eq!(visible_devices(Some("2, GPU-ab"), dir.path()), ["2", "GPU-ab"]);
        assert!(visible_devices(Some(""), dir.path()).is_empty());
        assert!(visible_devices(None, &dir.path().join("absent")).is_empty());
    }

    #[test]
    fn gpus_name_ordinals_among_the_visible_ones() {
        let visible: Vec<String> = ["2", "3", "GPU-ab"].map(String::from).into();
        let all = parse_gpus("all", &visible, Some("2,3,GPU-ab")).unwrap();
        assert_eq!(all.iter().map(|g| g.ordinal).collect::<Vec<_>>(), [0, 1, 2]);
        let some = parse_gpus(" 2,1 ", &visible, None).unwrap();
        assert_eq!(
            some,
            [
                Gpu {
                    ordinal: 2,
                    visible: "GPU-ab".into()
                },
                Gpu {
                    ordinal: 1,
                    visible: "3".into()
                }
            ]
        );
        assert_eq!(some[1].device_value(), ExtraValue::Number(3.0));
        assert_eq!(some[0].device_value(), ExtraValue::Text("GPU-ab".into()));
    }

    #[test]
    fn bad_gpus_name_the_problem_and_the_fix() {
        let two: Vec<String> = ["0", "1"].map(String::from).into();
        let e = err("0,x", &two);
        assert!(
            e.contains("\"x\" is not a GPU ordinal") && e.contains("--gpus 0,2"),
            "{e}"
        );
        let e = err("0,0", &two);
        assert!(e.contains("GPU 0 is listed twice"), "{e}");
        let e = err("1,2", &two);
        assert!(
            e.contains("no GPU 2 here; kprof sees 2") && e.contains("ordinals 0 to 1"),
            "{e}"
        );
        assert!(e.contains(NVIDIA_GPUS_DIR), "{e}");
        for empty in ["", "0,", "-1"] {
            assert!(err(empty, &two).contains("is not a GPU ordinal"), "{empty:?}");
        }
        let e = err("all", &[]);
        assert!(
            e.contains("shows no NVIDIA GPU") && e.contains("leave --gpus out"),
            "{e}"
        );
    }

    #[test]
    fn the_device_column_says_the_workers_gpu() {
        let mut raw = RawResults::new();
        crate::run_cmd::tests::sample(&mut raw, "matmul", "gpu__time_duration.sum", "ns", 0, 5.0);
        let gpu = Gpu {
            ordinal: 0,
            visible: "3".into(),
        };
        set_device(&mut raw, &gpu);
        let column = raw.extras.iter().find(|c| c.name == DEVICE_COLUMN).unwrap();
        assert_eq!(column.values, [ExtraValue::Number(3.0)]);
        raw.extras[0].values = vec![ExtraValue::Number(0.0)];
        set_device(&mut raw, &gpu);
        assert_eq!(raw.extras.len(), 1);
        assert_eq!(raw.extras[0].values, [ExtraValue::Number(3.0)]);
    }
}
