//! The environment fingerprint in `kprof show`: the `<stem>.env.json` sidecar next to a CSV, or
//! the `environment` of a kprof JSON file, rendered as aligned `label  value` lines.

use std::path::Path;

use kprof::conditions::fingerprint::{render, sidecar_path, Fingerprint};

/// The text `kprof show` prints before the table of `file`: the rendered sidecar when
/// `<stem>.env.json` exists next to it, or the rendered `environment` of a JSON result (as
/// pretty JSON when it is not a kprof fingerprint). `None` when there is none.
pub fn environment_text(file: &Path, json_environment: Option<&serde_json::Value>) -> Option<String> {
    if let Some(env) = json_environment {
        return Some(match serde_json::from_value::<Fingerprint>(env.clone()) {
            Ok(fp) if fp != Fingerprint::default() => render(&fp),
            _ => format!(
                "environment:\n{}\n",
                serde_json::to_string_pretty(env).unwrap_or_default()
            ),
        });
    }
    let side = sidecar_path(file);
    if !side.is_file() {
        return None;
    }
    Some(match Fingerprint::read_sidecar(file) {
        Ok(fp) if fp != Fingerprint::default() => render(&fp),
        // Not a device fingerprint (e.g. backend="ncu" records the ncu run): print it as JSON.
        Ok(fp) => match std::fs::read_to_string(&side)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            Some(v) => format!(
                "environment:\n{}\n",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            ),
            None => render(&fp),
        },
        Err(e) => format!("Environment\n  (unreadable {}: {e})\n", side.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sidecar_is_rendered_before_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("profiled_data-x-1.csv");
        std::fs::write(&csv, "Annotation\n").unwrap();
        assert_eq!(environment_text(&csv, None), None);
        let fp = Fingerprint {
            gpu_name: Some("NVIDIA H200".into()),
            driver_version: Some("580.159.04".into()),
            ..Fingerprint::host_only()
        };
        fp.write_sidecar(&csv).unwrap();
        assert!(dir.path().join("profiled_data-x-1.env.json").is_file());
        let text = environment_text(&csv, None).unwrap();
        assert!(text.starts_with("Environment\n"), "{text}");
        assert!(text.contains("NVIDIA H200") && text.contains("580.159.04"), "{text}");
        // A JSON result's environment: a fingerprint is rendered, anything else printed as JSON.
        let v = serde_json::to_value(&fp).unwrap();
        assert!(environment_text(&csv, Some(&v)).unwrap().contains("NVIDIA H200"));
        let other = serde_json::json!({"command": "x"});
        assert!(environment_text(&csv, Some(&other)).unwrap().contains("\"command\""));
        // A sidecar that is not a device fingerprint (backend="ncu") is printed as JSON too.
        let ncu = serde_json::json!({"backend": "ncu", "ncu": {"mode": "relaunch"}});
        std::fs::write(dir.path().join("profiled_data-x-1.env.json"), ncu.to_string()).unwrap();
        let text = environment_text(&csv, None).unwrap();
        assert!(text.contains("\"mode\": \"relaunch\""), "{text}");
    }
}
