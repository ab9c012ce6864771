"""gpu-checks/ncu_sections.py, the reader of Nsight Compute's section files that wrote
tests/fixtures/ncu-sections/sections.json, on a made-up section in the same text format."""

from __future__ import annotations

import os

from bench_support import load_module

HERE = os.path.dirname(os.path.abspath(__file__))
ncu_sections = load_module(os.path.join(HERE, "..", "..", "gpu-checks", "ncu_sections.py"))

SECTION = """
Identifier: "Made"
DisplayName: "A made-up section, {braces} in a string"
Sets {
  Identifier: "basic"
}
Sets {
  Identifier: "full"
}
# a comment with "quotes" and { braces }
Header {
  Metrics {
    Label: "Plain"
    Name: "a__x.sum"
  }
  Metrics {
    Name: "b__y.avg.pct_of_peak_sustained_elapsed"
    Filter {
      Items {
        MinArch: CC_75
        MaxArch: CC_86
      },
      Items {
        MinArch: CC_90
      }
    }
  }
}
Metrics {
  Metrics {
    Name: "launch__grid_size"
    Filter {
      MaxArch: CC_80
    }
  }
  Metrics {
    Name: "a__x.sum"
  }
}
MetricDefinitions {
  MetricDefinitions {
    Name: "derived__twice"
    Expression: "c__z.sum.per_second * 2"
  }
}
Body: {
  Items {
    Chart {
      Metrics { Name: "derived__twice" }
      Metrics { Name: "breakdown:b__y.avg.pct_of_peak_sustained_elapsed" }
    }
  }
}
"""


def test_metrics_filters_sets_derived_and_breakdowns():
    s = ncu_sections.section_metrics(SECTION)
    assert s["identifier"] == "Made"
    assert s["sets"] == ["basic", "full"]
    assert s["breakdowns"] == ["b__y.avg.pct_of_peak_sustained_elapsed"]
    got = {m["name"]: m["arch"] for m in s["metrics"]}
    # Order of first appearance, a name listed twice once, a derived value's inputs included.
    assert [m["name"] for m in s["metrics"]] == [
        "a__x.sum",
        "b__y.avg.pct_of_peak_sustained_elapsed",
        "launch__grid_size",
        "c__z.sum.per_second",
    ]
    assert got["b__y.avg.pct_of_peak_sustained_elapsed"] == [[75, 86], [90, 999]]
    assert got["launch__grid_size"] == [[0, 80]]
    assert got["a__x.sum"] == [] and got["c__z.sum.per_second"] == []
