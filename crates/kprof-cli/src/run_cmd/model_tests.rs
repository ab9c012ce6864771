//! The flags of `kprof run` that take an option of a benchmark are the ones the engine's option
//! model names (`kprof::option_model`: `OptionSpec::cli`), with its choices.

use clap::CommandFactory;
use kprof::option_model::{lookup, OptionType, OPTIONS};

use super::RunArgs;

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: RunArgs,
}

fn accepts(flag: &str, value: &str) -> bool {
    use clap::Parser;
    Cli::try_parse_from(["run", flag, value, "--", "prog"]).is_ok()
}

#[test]
fn a_flag_named_as_an_option_is_the_models_flag_for_it() {
    let cmd = Cli::command();
    for long in cmd.get_arguments().filter_map(|a| a.get_long()) {
        if let Some(o) = lookup(&long.replace('-', "_")) {
            let flag = format!("--{long}");
            assert_eq!(
                o.cli.map(|c| c.flag),
                Some(flag.as_str()),
                "kprof run {flag} takes the option {} but the model does not say so (option_model.rs)",
                o.name
            );
        }
    }
}

#[test]
fn every_flag_of_the_model_exists_with_the_models_choices_and_default() {
    let cmd = Cli::command();
    for o in OPTIONS {
        let Some(cli) = o.cli else { continue };
        let long = cli.flag.trim_start_matches("--");
        let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long));
        let arg =
            arg.unwrap_or_else(|| panic!("the model gives {} the flag {} that kprof run lacks", o.name, cli.flag));
        let OptionType::Choice(names) = o.ty else { continue };
        let accepted = cli.choices.unwrap_or(names);
        for n in names {
            let ok = accepts(cli.flag, n);
            assert_eq!(
                ok,
                accepted.contains(n),
                "kprof run {} {n}: accepted {ok}, the model says {accepted:?}",
                cli.flag
            );
        }
        assert!(!accepts(cli.flag, "no-such-value"), "{}", cli.flag);
        if o.default != "None" {
            let default: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into())
                .collect();
            assert_eq!(
                default,
                [o.default.trim_matches('\'')],
                "the default of kprof run {}",
                cli.flag
            );
        }
    }
}
