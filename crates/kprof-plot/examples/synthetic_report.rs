//! Writes a report from synthetic data shaped like an H200 sgemm sweep (fp32 vs fp16,
//! n = 512..8192): `cargo run -p kprof-plot --example synthetic_report -- OUT.html`.

#[path = "../tests/common/mod.rs"]
mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "report.html".into());
    let (raw, processed) = common::sgemm_sweep();
    let env = common::environment();
    let html = kprof_plot::render_report(
        &[kprof_plot::ReportInput {
            title: "sgemm sweep (synthetic H200-like data)",
            raw: Some(&raw),
            processed: &processed,
            environment: Some(&env),
        }],
        &kprof_plot::ReportOptions {
            title: "kprof report: sgemm fp32 vs fp16 (SYNTHETIC DATA)".into(),
            ..Default::default()
        },
    )?;
    std::fs::write(&out, html)?;
    println!("wrote {out}");
    Ok(())
}
