//! The `kprof` command-line tool.
fn main() {}
