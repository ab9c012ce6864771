//! Package metadata: no placeholder repository URL, one SPDX licence expression, and the Python
//! floor that the wheel's abi3 feature promises.

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)).unwrap()
}

#[test]
fn metadata_is_real_and_consistent() {
    let cargo = read("Cargo.toml");
    let pyproject = read("pyproject.toml");
    let py_cargo = read("crates/kprof-py/Cargo.toml");
    for (name, text) in [("Cargo.toml", &cargo), ("pyproject.toml", &pyproject)] {
        for placeholder in ["example.invalid", "example.com", "example.org"] {
            assert!(
                !text.contains(placeholder),
                "{name} has a placeholder URL ({placeholder})"
            );
        }
    }
    assert!(
        cargo.contains("license = \"MIT OR Apache-2.0\""),
        "workspace licence is not the SPDX expression"
    );
    assert!(
        pyproject.contains("license = \"MIT OR Apache-2.0\""),
        "pyproject licence is not a PEP 639 SPDX string"
    );
    assert!(pyproject.contains("requires-python = \">=3.10\""));
    assert!(pyproject.contains("\"pyo3/abi3-py310\"") && py_cargo.contains("\"abi3-py310\""));
}
