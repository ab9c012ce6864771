//! The `kprof` binary: see the library ([`kprof_cli::run`]) for the commands.

#![deny(unsafe_code)]

fn main() {
    std::process::exit(kprof_cli::run(std::env::args_os()));
}
