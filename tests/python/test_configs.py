"""nsight-python's config rules, checked at call time before the backend runs."""

from __future__ import annotations

import re

import pytest

import kprof
from kprof import ConfigError


def opts(**kw):
    return dict(verbosity=kprof.VerbosityLevel.SILENT, **kw)


def configs_seen(backend):
    return [[v for _, v in c] for c in backend.configs]


def test_scalar_configs_for_one_parameter(fake_backend, fake_core):
    @kprof.kernel(**opts(configs=[1, 2, "x"]))
    def f(n):
        with kprof.annotate("a"):
            pass

    f()
    assert configs_seen(fake_backend) == [[1], [2], ["x"]]
    assert fake_backend.configs[0] == [("n", 1)]


def test_tuple_and_list_configs(fake_backend, fake_core):
    @kprof.kernel(**opts(configs=[(1, "fp32"), [2, "fp16"]]))
    def f(n, dtype):
        pass

    f()
    assert configs_seen(fake_backend) == [[1, "fp32"], [2, "fp16"]]


def test_trailing_defaults_are_padded(fake_backend, fake_core):
    @kprof.kernel(**opts(configs=[(1,), (2, 5), (3, 6, "z")]))
    def f(a, b=4, c="c"):
        with kprof.annotate("r"):
            pass

    df = f().raw()
    assert configs_seen(fake_backend) == [[1, 4, "c"], [2, 5, "c"], [3, 6, "z"]]
    assert list(df["b"]) == [4, 5, 6]


def test_scalar_config_with_defaults(fake_backend, fake_core):
    @kprof.kernel(**opts(configs=[7]))
    def f(a, b=4):
        pass

    f()
    assert configs_seen(fake_backend) == [[7, 4]]


def test_keyword_only_parameters_are_passed_by_keyword(fake_backend, fake_core):
    seen = []

    @kprof.kernel(**opts(configs=[(1, 2)]))
    def f(a, *, b):
        seen.append((a, b))

    f()
    assert seen[-1] == (1, 2)
    assert fake_backend.configs[0] == [("a", 1), ("b", 2)]


def test_configs_at_call_time(fake_backend, fake_core):
    @kprof.kernel(**opts())
    def f(n):
        pass

    f(configs=[10, 20])
    assert configs_seen(fake_backend) == [[10], [20]]


def _with_configs():
    """A benchmark f(n) whose decorator gives configs."""

    @kprof.kernel(**opts(configs=[1]))
    def f(n):
        pass

    return f


def test_configs_in_both_places():
    f = _with_configs()
    with pytest.raises(ConfigError, match=re.escape(
        "configs were given both to @kernel(configs=...) and when calling f(); give them in one place"
    )):
        f(configs=[2])


def test_positional_arguments_form_one_config(fake_backend, fake_core):
    seen = []

    @kprof.kernel(**opts())
    def f(n, dtype="fp32"):
        seen.append((n, dtype))

    f(4096)
    assert configs_seen(fake_backend) == [[4096, "fp32"]]
    f(1024, "fp16")
    assert configs_seen(fake_backend) == [[1024, "fp16"]]
    assert seen[-1] == (1024, "fp16")


def test_keyword_arguments_form_one_config(fake_backend, fake_core):
    @kprof.kernel(**opts())
    def f(n, dtype="fp32"):
        pass

    f(dtype="fp16", n=8)
    assert fake_backend.configs == [[("n", 8), ("dtype", "fp16")]]


def test_bad_keyword_arguments():
    @kprof.kernel(**opts())
    def f(n):
        pass

    with pytest.raises(ConfigError, match=re.escape("f(n): got an unexpected keyword argument 'm'")):
        f(1, m=3)


def test_arguments_and_configs_conflict():
    f = _with_configs()
    with pytest.raises(ConfigError, match=re.escape(
        "f() got arguments and configs to @kernel(configs=...); either call it with the arguments of one "
        "config, or give configs, not both"
    )):
        f(3)

    @kprof.kernel(**opts())
    def g(n):
        pass

    with pytest.raises(ConfigError, match="got arguments and configs at call time"):
        g(3, configs=[4])


def test_all_defaults_gives_one_config(fake_backend, fake_core):
    @kprof.kernel(**opts())
    def f(n=512, dtype="fp16"):
        pass

    f()
    assert configs_seen(fake_backend) == [[512, "fp16"]]

    @kprof.kernel(**opts())
    def g():
        pass

    g()
    assert fake_backend.configs == [[]]


def test_missing_configs():
    @kprof.kernel(**opts())
    def f(n, dtype):
        pass

    with pytest.raises(ConfigError, match=re.escape(
        "no configs for f(n, dtype): pass configs=[...] to @kernel or when calling, or call it with the "
        "arguments of one config"
    )):
        f()


def test_wrong_length_names_index_and_parameters():
    def f(a, b):
        pass

    with pytest.raises(ConfigError, match=re.escape(
        "config 1 is (1, 2, 3) (3 values), but f(a, b) takes 2 values: (a, b)"
    )):
        kprof.kernel(**opts(configs=[(1, 2), (1, 2, 3)]))(f)

    with pytest.raises(ConfigError, match=re.escape("config 0 is the single value 5, but f(a, b) takes 2 values: (a, b)")):
        kprof.kernel(**opts(configs=[5]))(f)

    def g(a, b, c=1):
        pass

    with pytest.raises(ConfigError, match=re.escape(
        "config 2 is (1,) (1 value), but g(a, b, c) takes 2 to 3 values: (a, b, c); "
        "parameters without defaults: (a, b)"
    )):
        kprof.kernel(**opts(configs=[(1, 2), (1, 2, 3), (1,)]))(g)


def test_wrong_length_at_call_time(fake_backend):
    @kprof.kernel(**opts())
    def f(a, b):
        pass

    with pytest.raises(ConfigError, match=re.escape("config 0 is (1,) (1 value), but f(a, b) takes 2 values")):
        f(1)
    with pytest.raises(ConfigError, match=re.escape("config 1 is (3,) (1 value)")):
        f(configs=[(1, 2), (3,)])
    assert fake_backend.calls == 0


def test_generators_are_materialised(fake_backend, fake_core):
    @kprof.kernel(**opts(configs=(n for n in (1, 2, 3))))
    def f(n):
        pass

    f()
    assert configs_seen(fake_backend) == [[1], [2], [3]]
    f()  # the generator was materialised once: the second call sees the same configs
    assert configs_seen(fake_backend) == [[1], [2], [3]]

    @kprof.kernel(**opts())
    def g(n):
        pass

    g(configs=(n * 2 for n in range(2)))
    assert configs_seen(fake_backend) == [[0], [2]]


def test_empty_configs_at_call_time():
    @kprof.kernel(**opts())
    def f(n):
        pass

    with pytest.raises(ConfigError, match=re.escape("configs for f() is empty; give at least one config")):
        f(configs=[])


def test_objects_as_config_values(fake_backend, fake_core):
    class DType:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"torch.{self.name}"

    fp16, fp32 = DType("float16"), DType("float32")
    seen = []

    @kprof.kernel(**opts(configs=[(64, fp16), (64, fp32)], runs=2))
    def f(n, dtype):
        seen.append(dtype)
        with kprof.annotate("mm"):
            pass

    df = f().to_dataframe()
    assert seen[-1] in (fp16, fp32)
    assert list(df["dtype"]) == [fp16, fp32]  # the original objects, not their text
    assert df["dtype"].dtype == object


def test_derive_metric_arity_checked_before_running(fake_backend):
    def tflops(t, n, extra):
        return t

    @kprof.kernel(**opts(configs=[1], derive_metric=tflops))
    def f(n):
        pass

    with pytest.raises(ConfigError, match=re.escape(
        "derive_metric tflops(t, n, extra) is called with 2 arguments (the metric values "
        "['gpu__time_duration.sum'] then the parameters ['n']), but it takes 3"
    )):
        f()
    assert fake_backend.calls == 0
