"""The decorator's options against the engine's one model of them (``kprof._core.option_model()``,
``crates/kprof/src/option_model.rs``): its signature, defaults, docstring, the stub and the choice
checks. The options table of docs/quickstart.md and the stub's choice aliases are compared with
the model by the Rust tests (``cargo test -p kprof option_model``)."""

from __future__ import annotations

import ast
import enum
import inspect
import pathlib
import re
import typing

import pytest

import kprof
from kprof import ConfigError, _core, _measurement, _options, analyze
from kprof.analyze import kernel

MODEL = _core.option_model()
PYTHON = [o for o in MODEL if o["python"]]
STUB = pathlib.Path(__file__).resolve().parents[2] / "python" / "kprof" / "_core.pyi"


def body(n):
    pass


def keywords() -> list[inspect.Parameter]:
    return [p for p in inspect.signature(kernel).parameters.values() if p.kind is p.KEYWORD_ONLY]


def test_the_decorators_keywords_are_the_models_in_its_order():
    names = [p.name for p in keywords()]
    model = [o["name"] for o in PYTHON]
    assert sorted(set(names) - set(model)) == [], "keywords of @kernel missing from crates/kprof/src/option_model.rs"
    assert sorted(set(model) - set(names)) == [], "options of the model that @kernel lacks"
    assert names == model


def test_the_decorators_defaults_are_the_models():
    for p in keywords():
        want = _options.model()[p.name]["default"]
        if isinstance(p.default, enum.Enum):
            assert f"{type(p.default).__name__}.{p.default.name}" == want, p.name
        else:
            assert ast.literal_eval(want) == p.default, p.name


def test_configures_keywords_and_defaults_are_the_models():
    params = inspect.signature(kprof.configure).parameters.values()
    model = [o for o in MODEL if o["configure"]]
    assert [p.name for p in params] == [o["name"] for o in model]
    for p, o in zip(params, model):
        assert ast.literal_eval(o["default"]) == p.default, p.name
    for o in model:
        assert f"``{o['name']}``" in kprof.configure.__doc__


def test_every_keyword_is_in_the_docstring():
    doc = kernel.__doc__
    assert [o["name"] for o in PYTHON if f"``{o['name']}``" not in doc] == []


def test_python_only_options_have_no_rust_field_and_rust_only_ones_no_keyword():
    assert {o["name"] for o in MODEL if o["python_only"]} >= {"derive_metric", "executor", "devices", "verbosity"}
    for o in MODEL:
        assert o["python_only"] == (o["python"] and o["rust"] is None), o["name"]
    rust_only = {o["name"] for o in MODEL if not o["python"] and not o["configure"]}
    assert rust_only == {"ignore_failures", "conditions", "progress", "cancel"}


@pytest.mark.parametrize("option", [o for o in PYTHON if o["choices"]], ids=lambda o: o["name"])
def test_a_bad_choice_names_the_option_the_value_and_the_allowed_values(option):
    name, allowed = option["name"], option["choices"]
    message = f"{name} must be one of {', '.join(repr(c) for c in allowed)}; got 'no-such-value'"
    with pytest.raises(ConfigError, match=re.escape(message)):
        kernel(**{name: "no-such-value"})
    for value in allowed:
        assert _options.check_choice(name, value) == value


def test_the_typing_aliases_are_the_models():
    # Every Python option with choices has one.
    aliased = {"replay_mode", "cache_control", "clock_control", "thermal_mode", "order", "backend", "duration_source",
               "l2_flush", "kernel_trace", "graph_trace", "attribution"}
    assert {o["name"] for o in MODEL if o["choices"] and (o["python"] or o["configure"])} == aliased
    for alias, name in [
        (analyze.ReplayModeName, "replay_mode"),
        (analyze.CacheControlName, "cache_control"),
        (analyze.ClockControlName, "clock_control"),
        (_options.ThermalModeName, "thermal_mode"),
        (_options.OrderName, "order"),
        (_options.BackendName, "backend"),
        (_options.DurationSourceName, "duration_source"),
        (_measurement.L2FlushName, "l2_flush"),
        (_measurement.KernelTraceName, "kernel_trace"),
        (_measurement.GraphTraceName, "graph_trace"),
        (_measurement.AttributionName, "attribution"),
    ]:
        assert typing.get_args(alias) == _options.choices(name), name


def test_the_stub_declares_option_model_with_the_keys_it_returns():
    tree = ast.parse(STUB.read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert ast.unparse(funcs["option_model"].returns) == "list[OptionSpec]"
    spec = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OptionSpec")
    keys = [n.target.id for n in spec.body if isinstance(n, ast.AnnAssign)]
    assert keys == list(MODEL[0])


def test_one_pass_goes_through_to_the_engine(fake_backend, fake_core):
    kernel(configs=[1], runs=1, verbosity=0)(body)()
    assert fake_backend.options["one_pass"] is True
    kernel(configs=[1], runs=1, verbosity=0, one_pass=False)(body)()
    assert fake_backend.options["one_pass"] is False
    with pytest.raises(ConfigError, match=re.escape("one_pass must be True or False, got 'yes'")):
        kernel(one_pass="yes")


def test_the_backend_option_keys_are_options_of_the_model():
    from kprof import _backend

    python = {o["name"] for o in PYTHON}
    assert sorted(set(_backend.OPTION_KEYS) - python) == []
    # Every keyword a Rust field takes reaches the engine through the options dict, but the info
    # collectors, which Python runs itself (kprof._core.CollectorSession).
    rust = {o["name"] for o in PYTHON if o["rust"]}
    assert sorted(rust - set(_backend.OPTION_KEYS)) == ["info_collectors"]
