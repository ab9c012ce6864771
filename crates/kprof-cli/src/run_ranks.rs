//! Multi-process and multi-GPU programs under `kprof run` (`torchrun`, `mpirun`, `srun`): before the
//! process files are merged, which of `Rank` and `Device` become key columns (configuration
//! parameters), the files in rank order, and [`rank_lines`], the line per rank printed before the
//! table.
//!
//! The rules, and why `DeviceUUID` is never a column of the merged files: `docs/kprof-run.md`
//! (Multi-process and multi-GPU programs).

use kprof::run_spec::{DEVICE_COLUMN, DEVICE_UUID_COLUMN, RANK_COLUMN};
use kprof_core::model::ModelError;
use kprof_core::{ExtraValue, ParamValue, RawResults};

/// The per-process files of one execution: the sweep value and the samples.
pub type Part = (Option<(String, String)>, RawResults);

/// Which placement columns become keys of the merged results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyPlan {
    /// Some sample has a `Rank`.
    pub rank: bool,
    /// Some sample has a `Rank`, or the samples' `Device` values differ.
    pub device: bool,
}

fn column<'a>(raw: &'a RawResults, name: &str) -> Option<&'a [ExtraValue]> {
    raw.extras.iter().find(|c| c.name == name).map(|c| &c.values[..])
}

impl KeyPlan {
    /// The plan for all samples of a run (its timing and counter launches together, so both
    /// have the same keys).
    pub fn of<'a>(raws: impl IntoIterator<Item = &'a RawResults>) -> KeyPlan {
        let mut plan = KeyPlan::default();
        let mut first_device: Option<&ExtraValue> = None;
        for raw in raws {
            if let Some(r) = column(raw, RANK_COLUMN) {
                plan.rank |= r.iter().any(|v| *v != ExtraValue::Missing);
            }
            for d in column(raw, DEVICE_COLUMN).into_iter().flatten() {
                if *d == ExtraValue::Missing {
                    continue;
                }
                match first_device {
                    None => first_device = Some(d),
                    Some(f) if f != d => plan.device = true,
                    Some(_) => {}
                }
            }
        }
        plan.device |= plan.rank;
        plan
    }

    /// Whether any column becomes a key.
    pub fn any(self) -> bool {
        self.rank || self.device
    }
}

/// A placement value as a parameter: whole numbers as integers, text as it is, missing as -1.
fn param(v: &ExtraValue) -> ParamValue {
    match v {
        ExtraValue::Missing => ParamValue::Int(-1),
        ExtraValue::Number(x) if x.fract() == 0.0 && x.abs() < 1e15 => ParamValue::Int(*x as i64),
        ExtraValue::Number(x) => ParamValue::Float(*x),
        ExtraValue::Text(t) => ParamValue::infer(t),
    }
}

/// `raw` with the columns the plan names moved from the extra columns into the configuration
/// (after its parameters: `Rank`, then `Device`), and without the other placement columns.
pub fn promote(raw: &RawResults, plan: KeyPlan) -> Result<RawResults, ModelError> {
    let placement = [RANK_COLUMN, DEVICE_COLUMN, DEVICE_UUID_COLUMN];
    if !plan.any() && !raw.extras.iter().any(|c| placement.contains(&c.name.as_str())) {
        return Ok(raw.clone());
    }
    let keys: Vec<&str> = [(plan.rank, RANK_COLUMN), (plan.device, DEVICE_COLUMN)]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    let mut out = RawResults::new();
    for (i, s) in raw.samples.iter().enumerate() {
        let series = raw.series_of(s);
        let mut config = raw.config_of(series).clone();
        for k in &keys {
            let v = column(raw, k).map(|c| &c[i]).unwrap_or(&ExtraValue::Missing);
            config.params.push((k.to_string(), param(v)));
        }
        out.push_from(raw, i, &config, s.run, |name| !placement.contains(&name))?;
    }
    Ok(out)
}

/// The lowest rank of a process file's samples (`None`: no rank).
fn rank_of(raw: &RawResults) -> Option<f64> {
    column(raw, RANK_COLUMN)?
        .iter()
        .filter_map(|v| match v {
            ExtraValue::Number(x) => Some(*x),
            _ => None,
        })
        .reduce(f64::min)
}

/// The parts with the plan's keys promoted ([`promote`]); with ranks, in rank order (stable, so
/// repetitions keep their order within a rank; files without a rank last).
pub fn promote_parts(parts: &[Part], plan: KeyPlan) -> Result<Vec<Part>, ModelError> {
    let mut order: Vec<&Part> = parts.iter().collect();
    if plan.rank {
        order.sort_by(|a, b| {
            let key = |p: &Part| rank_of(&p.1).unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        });
    }
    order
        .into_iter()
        .map(|(sweep, raw)| Ok((sweep.clone(), promote(raw, plan)?)))
        .collect()
}

/// One line per process that has a rank, in rank order (then pid), from the status files:
/// `kprof: rank 0 (RANK; local rank 0 of 2): pid 4242, device 0 (NVIDIA H200, GPU-...), 120 kernel(s)`.
/// Empty when no process has a rank.
pub fn rank_lines(statuses: &[serde_json::Value]) -> Vec<String> {
    let mut ranked: Vec<&serde_json::Value> = statuses.iter().filter(|s| s["rank"]["rank"].is_u64()).collect();
    ranked.sort_by_key(|s| (s["rank"]["rank"].as_u64(), s["pid"].as_u64()));
    ranked
        .into_iter()
        .map(|s| {
            let r = &s["rank"];
            let mut how = vec![r["source"].as_str().unwrap_or("?").to_string()];
            match (r["local_rank"].as_u64(), r["world_size"].as_u64()) {
                (Some(l), Some(w)) => how.push(format!("local rank {l}, world size {w}")),
                (Some(l), None) => how.push(format!("local rank {l}")),
                (None, Some(w)) => how.push(format!("world size {w}")),
                (None, None) => {}
            }
            let devices: Vec<String> = s["devices"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| {
                    let about: Vec<&str> = [d["name"].as_str(), d["uuid"].as_str()].into_iter().flatten().collect();
                    let mut t = format!("device {}", d["ordinal"].as_u64().unwrap_or(0));
                    if !about.is_empty() {
                        t.push_str(&format!(" ({})", about.join(", ")));
                    }
                    t.push_str(&format!(", {} kernel(s)", d["kernels"].as_u64().unwrap_or(0)));
                    t
                })
                .collect();
            let devices = if devices.is_empty() {
                "no kernel".to_string()
            } else {
                devices.join("; ")
            };
            format!(
                "kprof: rank {} ({}): pid {}, {devices}",
                r["rank"],
                how.join("; "),
                s["pid"].as_u64().unwrap_or(0)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kprof_core::{Config, DeviceInfo, SampleRecord, DEFAULT_METRIC};

    /// A process file: `annotation` run `values.len()` times, with Rank/Device when given.
    fn part(annotation: &str, values: &[f64], rank: Option<f64>, device: Option<ExtraValue>) -> RawResults {
        let mut raw = RawResults::new();
        let mut extras: Vec<(&str, ExtraValue)> = vec![("CudaVersion", ExtraValue::Text("13.0".into()))];
        if let Some(r) = rank {
            extras.push((RANK_COLUMN, ExtraValue::Number(r)));
        }
        if let Some(d) = &device {
            extras.push((DEVICE_COLUMN, d.clone()));
        }
        for (run, v) in values.iter().enumerate() {
            raw.push(&SampleRecord {
                benchmark: "app",
                annotation,
                config: &Config::new(),
                run: run as u32,
                metric: DEFAULT_METRIC,
                value: *v,
                unit: "ns",
                kernel: "k",
                device: &DeviceInfo::default(),
                extras: &extras,
            })
            .unwrap();
        }
        raw
    }

    /// Both placement keys.
    const RANK_AND_DEVICE: KeyPlan = KeyPlan {
        rank: true,
        device: true,
    };
    /// Neither.
    const NO_KEYS: KeyPlan = KeyPlan {
        rank: false,
        device: false,
    };

    #[test]
    fn plan_keys_rank_when_present_and_device_when_it_varies() {
        let d0 = Some(ExtraValue::Number(0.0));
        let d1 = Some(ExtraValue::Number(1.0));
        let a = part("mm", &[1.0], Some(0.0), d0.clone());
        let b = part("mm", &[1.0], Some(1.0), d0.clone());
        assert_eq!(KeyPlan::of([&a, &b]), RANK_AND_DEVICE);
        let c = part("mm", &[1.0], Some(1.0), d1.clone());
        assert_eq!(KeyPlan::of([&a, &c]), RANK_AND_DEVICE);
        // No rank, one device: today's keys.
        let p = part("mm", &[1.0], None, d0.clone());
        assert!(!KeyPlan::of([&p]).any());
        // Files of an older injection library (no placement columns).
        assert!(!KeyPlan::of([&part("mm", &[1.0], None, None)]).any());
        // A process on two devices, without a rank: Device alone.
        let q = part("mm", &[1.0], None, d1);
        assert_eq!(
            KeyPlan::of([&p, &q]),
            KeyPlan {
                device: true,
                ..NO_KEYS
            }
        );
    }

    #[test]
    fn promote_moves_the_columns_into_the_configuration() {
        let raw = part("mm", &[5.0, 6.0], Some(1.0), Some(ExtraValue::Text("0|1".into())));
        let p = promote(&raw, RANK_AND_DEVICE).unwrap();
        let cfg = p.config_of(p.series_of(&p.samples[0]));
        assert_eq!(cfg.get("Rank"), Some(&ParamValue::Int(1)));
        assert_eq!(cfg.get("Device"), Some(&ParamValue::Str("0|1".into())));
        let names: Vec<&str> = p.extras.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["CudaVersion"]);
        assert_eq!(
            p.samples.iter().map(|s| (s.run, s.value)).collect::<Vec<_>>(),
            [(0, 5.0), (1, 6.0)]
        );
        // A file without a rank gets -1.
        let p = promote(
            &part("mm", &[5.0], None, Some(ExtraValue::Number(0.0))),
            RANK_AND_DEVICE,
        )
        .unwrap();
        let cfg = p.config_of(p.series_of(&p.samples[0]));
        assert_eq!(cfg.get("Rank"), Some(&ParamValue::Int(-1)));
        assert_eq!(cfg.get("Device"), Some(&ParamValue::Int(0)));
        // No keys: today's configuration and columns (the placement columns dropped).
        let mut plain = part("mm", &[5.0, 6.0], None, Some(ExtraValue::Number(0.0)));
        let p = promote(&plain, KeyPlan::default()).unwrap();
        plain.extras.retain(|c| c.name == "CudaVersion");
        assert_eq!(p, plain);
        let old = part("mm", &[5.0], None, None);
        assert_eq!(promote(&old, KeyPlan::default()).unwrap(), old);
    }

    #[test]
    fn parts_are_ordered_by_rank() {
        let d0 = Some(ExtraValue::Number(0.0));
        let parts: Vec<Part> = vec![
            (None, part("mm", &[10.0], Some(1.0), d0.clone())),
            (None, part("mm", &[20.0], None, d0.clone())),
            (None, part("mm", &[30.0], Some(0.0), d0.clone())),
        ];
        let plan = KeyPlan::of(parts.iter().map(|p| &p.1));
        let out = promote_parts(&parts, plan).unwrap();
        let values: Vec<f64> = out.iter().map(|p| p.1.samples[0].value).collect();
        assert_eq!(values, [30.0, 10.0, 20.0]);
        // Without ranks the order is the files' order.
        let out = promote_parts(&[parts[1].clone(), parts[0].clone()], KeyPlan::default()).unwrap();
        let values: Vec<f64> = out.iter().map(|p| p.1.samples[0].value).collect();
        assert_eq!(values, [20.0, 10.0]);
    }

    #[test]
    fn rank_lines_describe_each_rank_in_order() {
        let statuses: Vec<serde_json::Value> = vec![
            serde_json::json!({"pid": 12, "rank": {"rank": 1, "source": "RANK", "local_rank": 1, "world_size": 2},
                "devices": [{"ordinal": 0, "uuid": "GPU-a", "name": "NVIDIA H200", "kernels": 7}]}),
            serde_json::json!({"pid": 10, "rank": null, "devices": []}),
            serde_json::json!({"pid": 11, "rank": {"rank": 0, "source": "OMPI_COMM_WORLD_RANK", "local_rank": null, "world_size": null},
                "devices": []}),
        ];
        assert_eq!(
            rank_lines(&statuses),
            [
                "kprof: rank 0 (OMPI_COMM_WORLD_RANK): pid 11, no kernel",
                "kprof: rank 1 (RANK; local rank 1, world size 2): pid 12, device 0 (NVIDIA H200, GPU-a), 7 kernel(s)",
            ]
        );
        assert!(rank_lines(&statuses[1..2]).is_empty());
    }
}
