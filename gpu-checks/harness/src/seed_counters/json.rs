//! JSON: what `OUT_DIR/seed-counters.json` holds.

use serde_json::{json, Map, Value};

use crate::checks::Check;
use crate::results::LabelResults;

pub(crate) fn results_json(
    labels: &[(String, LabelResults)],
    checks: &[Check],
    device: &str,
    ncu: Option<&str>,
) -> Value {
    let mut values = Map::new();
    let mut kernels = Map::new();
    for (label, data) in labels {
        let regions: Map<String, Value> = data
            .regions
            .iter()
            .map(|(region, metrics)| {
                let metrics: Map<String, Value> = metrics
                    .iter()
                    .map(|(metric, runs)| {
                        let entry = json!({
                            "mean": runs.mean(),
                            "values": runs.values,
                            "unit": runs.unit,
                            "nan": runs.nan_count(),
                        });
                        (metric.clone(), entry)
                    })
                    .collect();
                (region.clone(), Value::Object(metrics))
            })
            .collect();
        values.insert(label.clone(), Value::Object(regions));
        kernels.insert(label.clone(), json!(data.kernels));
    }
    let checks: Vec<Value> = checks
        .iter()
        .map(|c| json!([c.status.as_str(), c.name, c.detail]))
        .collect();
    json!({
        "labels": values,
        "checks": checks,
        "device": device,
        "ncu": ncu,
        "kernels": kernels,
    })
}
