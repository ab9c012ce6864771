"""Type stubs of ``kprof._core``, the Rust extension (crate ``kprof-py``). Every function is
documented in the Rust source; the contracts of the dict-of-columns arguments are in
``kprof/results.py`` and ``kprof/_backend.py``."""

import os
from typing import Any, Callable, Literal, Sequence, TypedDict

# choices: generated from crates/kprof/src/option_model.rs (UPDATE_OPTION_DOCS=1 cargo test -p kprof option_model)
ClockControlName = Literal["none", "base"]
CacheControlName = Literal["all", "none"]
ReplayModeName = Literal["kernel", "range", "application"]
ThermalModeName = Literal["auto", "manual", "off"]
OrderName = Literal["interleaved", "sequential"]
BackendName = Literal["cupti", "cuda-events", "ncu"]
DurationSourceName = Literal["auto", "records", "counters"]
L2FlushName = Literal["read", "discard", "write"]
KernelTraceName = Literal["concurrent", "serial"]
GraphTraceName = Literal["graph", "nodes"]
AttributionName = Literal["order", "records"]
# end of the choices

class OptionSpec(TypedDict):
    """One option of a benchmark (``kprof::option_model::OptionSpec``)."""

    name: str
    type: str
    choices: list[str]
    optional: bool
    default: str
    doc: str
    python: bool
    python_only: bool
    configure: bool
    rust: str | None
    cli: str | None
    cli_choices: list[str] | None
    env: str | None

__version__: str

AGGREGATE_SUFFIXES: tuple[str, ...]
BOOTSTRAP_COLUMNS: tuple[str, ...]
CONDITION_COLUMNS: tuple[str, ...]
CONFIG_INDEX_COLUMN: str
ENGINE_INFO_COLUMNS: tuple[str, ...]
KPROF_EXTRA_COLUMNS: tuple[str, ...]
KPROF_PROCESSED_COLUMNS: tuple[str, ...]
KPROF_RAW_COLUMNS: tuple[str, ...]
KPROF_RESERVED_COLUMN_NAMES: tuple[str, ...]
NORMALIZATION_VALUE_COLUMN: str
NSIGHT_PROCESSED_COLUMNS: tuple[str, ...]
NSIGHT_RAW_COLUMNS: tuple[str, ...]
NSIGHT_RESERVED_COLUMN_NAMES: tuple[str, ...]
PROCESSED_COLUMNS: tuple[str, ...]
PROCESSED_FLOAT_COLUMNS: tuple[str, ...]
PROCESSED_INT_COLUMNS: tuple[str, ...]
PROCESSED_KEY_COLUMNS: tuple[str, ...]
RESERVED_COLLECTOR_NAMES: tuple[str, ...]
RAW_COLUMNS: tuple[str, ...]
THROTTLED_COLUMN: str
THROTTLED_RUNS_COLUMN: str

class CollectorSession:
    def __init__(self, collectors: list[tuple[str, str, Any]], configs: list[tuple[Any, ...]], warmup: int) -> None: ...
    def before_call(self, config_index: int) -> None: ...
    def after_call(self) -> None: ...
    def on_annotation(self, name: str) -> None: ...
    def column(self, name: str, config_index: list[int], runs: list[int], annotations: list[str]) -> list[Any]: ...

def check_collector_names(names: list[str], params: list[str]) -> None: ...
def cli_main(argv: list[str], inject_dirs: list[str]) -> int: ...
def convert_config(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]: ...
def durations_line(sources: Sequence[str]) -> str | None: ...
def derive_rows(
    table: dict[str, list[Any]],
    metrics: list[str],
    derive: Callable[[int, list[float]], list[tuple[str, float, str | None]]],
) -> list[tuple[int, str, float, str | None]]: ...
def engine_available() -> tuple[bool, str]: ...
def enter_region(name: str) -> None: ...
def exit_region(name: str, failed: bool) -> None: ...
def in_counter_pass() -> bool: ...
def counter_cost() -> dict[str, float]: ...
def check_bench_options(options: dict[str, Any]) -> None: ...
def fingerprint_json() -> str | None: ...
def load_results(
    path: str,
) -> tuple[dict[str, list[Any]], list[list[tuple[str, Any]]], list[str], str | None]: ...
def ncu_argv(options: dict[str, Any], program: str, args: list[str]) -> list[str]: ...
class _Relaunch(TypedDict):
    program: str
    args: list[str]
    child_id: str
    module: str
    call_index: int
    report_prefix: str | None
    env: list[tuple[str, str]] | None

def ncu_relaunch(
    name: str,
    configs: list[list[tuple[str, Any]]],
    options: dict[str, Any],
    launch: _Relaunch,
) -> tuple[dict[str, list[Any]], dict[str, Any]]: ...
def param_value(obj: Any) -> tuple[str, Any]: ...
def parse_collection_scope(text: str) -> str: ...
def process_raw(raw: dict[str, list[Any]], options: dict[str, Any]) -> dict[str, list[Any]]: ...
def render_plot(
    raw: dict[str, list[Any]], options: dict[str, Any], spec: dict[str, Any], path: str | None = None
) -> str: ...
def render_report(inputs: list[dict[str, Any]], options: dict[str, Any], path: str | None = None) -> str: ...
def expand_metrics(names: list[str]) -> tuple[list[str], str | None, int | None]: ...
def speed_of_light(raw: dict[str, list[Any]], options: dict[str, Any]) -> dict[str, list[Any]]: ...
def render_roofline(
    raw: dict[str, list[Any]], options: dict[str, Any], title: str | None = None, path: str | None = None
) -> str: ...
def run_benchmark(
    name: str,
    func: Callable[[int], None],
    configs: list[list[tuple[str, Any]]],
    options: dict[str, Any],
    progress: Any,
) -> dict[str, list[Any]]: ...
def save_results_json(
    raw: dict[str, list[Any]], options: dict[str, Any], path: str, environment: str | None = None
) -> None: ...
def write_file(path: str, data: bytes) -> None: ...
def write_trace(timeline_json: str, path: str | os.PathLike[str]) -> None: ...

class Timeline:
    def __init__(self, timeline_json: str) -> None: ...
    def __len__(self) -> int: ...
    def regions(self) -> list[tuple[str, str, int, int, int]]: ...
    def write(self, path: str | os.PathLike[str], counters_json: str) -> None: ...
def release_counters() -> str | None: ...
def pause_counters() -> None: ...
def option_model() -> list[OptionSpec]: ...
def parse_choice(option: str, value: str) -> str: ...
def configure_trace(kernel_trace: str, graph_trace: str | None, attribution: str = "order") -> None: ...
def write_csv(
    raw: dict[str, list[Any]], options: dict[str, Any], path: str | os.PathLike[str], table: str
) -> None: ...
def store_raw(
    raw: dict[str, list[Any]],
    options: dict[str, Any],
    db: str | os.PathLike[str],
    name: str,
    tags: list[tuple[str, str]],
    commit: str | None = None,
    environment: str | None = None,
) -> int: ...
