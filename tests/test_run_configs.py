"""`irscope scan script.py`: each compiled kernel's constexprs and options, and each autotuner's
choice, recorded in the child and carried into the report (KernelReport.config, .autotune).

The script (tests/data/scripts/autotuned_add.py) has three autotune configs and is called for
sizes 4096, 10001, 8192 and 4096 again: 4096 and 8192 compile alike (multiples of 16), 10001
does not, so six kernels compile and three tuning keys are tuned. Under --target every config
times the same, so the autotuner keeps the first.
"""

from __future__ import annotations

import ast
import io
import json
import math
from types import SimpleNamespace

import pytest
from conftest import REPO

pytest.importorskip("triton")
pytest.importorskip("torch")

from irscope.pipeline.config_recorder import ConfigRecorder, constexpr_values  # noqa: E402
from irscope.model.launches import read_autotune, read_compiled, read_launches  # noqa: E402
from irscope.model.report import Report  # noqa: E402
from irscope.pipeline.runner import run_script  # noqa: E402

SCRIPT = REPO / "tests" / "data" / "scripts" / "autotuned_add.py"


def script_configs() -> list[tuple[dict, int, int]]:
    """The script's `triton.Config(kwargs, num_warps=, num_stages=)` list, as written, in order."""
    found = []
    for node in ast.walk(ast.parse(SCRIPT.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Config":
            options = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            found.append((ast.literal_eval(node.args[0]), options["num_warps"], options["num_stages"]))
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    result = run_script(str(SCRIPT), (), "gfx942", out=str(out))
    assert result.exit_code == 0
    return result.report, out / "launches.jsonl"


def test_every_kernel_has_the_config_it_compiled(run):
    report, _ = run
    configs = script_configs()
    assert len(configs) == 3 and len(report.kernels) == 6  # three configs, two specializations
    seen = []
    for kr in report.kernels:
        config = kr.config
        assert config is not None and config.hash == kr.kernel.hash and config.name == "add_kernel"
        constexprs = dict(config.constexprs)
        assert constexprs.pop("SCALE") == "3"  # the launch's own constexpr, beside the config's
        match = (constexprs, config.num_warps, config.num_stages)
        assert match in [({k: str(v) for k, v in c.items()}, w, s) for c, w, s in configs]
        assert config.num_warps == kr.kernel.options.num_warps.value
        assert config.kpack == 1 and config.waves_per_eu is not None  # gfx942: AMD's options too
        seen.append(match)
    assert len(set(map(repr, seen))) == 3  # every config, each in both specializations


def test_one_choice_per_tuning_key_and_the_first_config_under_target(run):
    report, _ = run
    first, num_warps, num_stages = script_configs()[0]
    choices = [(kr, choice) for kr in report.kernels for choice in kr.autotune]
    keys = [choice.key for _, choice in choices]
    assert len(keys) == 3 and len(set(keys)) == 3  # the repeated 4096 call was a key-cache hit: not told again
    assert {key.split(",")[0] for key in keys} == {"(4096", "(10001", "(8192"}
    for kr, choice in choices:
        assert choice.hash == kr.kernel.hash and choice.name == "add_kernel"
        assert choice.configs == 3 and choice.measured is False and choice.timings == ()
        assert dict(kr.config.constexprs) == {"SCALE": "3", **{k: str(v) for k, v in first.items()}}
        assert (kr.config.num_warps, kr.config.num_stages) == (num_warps, num_stages)
        assert kr.launches  # the chosen config's kernel ran
    # 4096 and 8192 chose the same kernel, 10001 its own
    assert sorted(len(kr.autotune) for kr in report.kernels if kr.autotune) == [1, 2]


def test_a_report_with_configs_saves_and_loads(run, tmp_path):
    report, _ = run
    report.save(tmp_path / "report.json")
    assert Report.load(tmp_path / "report.json").kernels == report.kernels
    data = json.loads((tmp_path / "report.json").read_text())
    for kernel in data["kernels"]:  # a report saved before these fields existed
        del kernel["config"], kernel["autotune"]
    old = Report.from_json(json.dumps(data))
    assert all(kr.config is None and kr.autotune == () for kr in old.kernels)


def test_junk_and_truncated_lines_are_skipped(run, tmp_path):
    _, launches = run
    lines = launches.read_text().splitlines()
    compiled, chosen, launched = read_compiled(launches), read_autotune(launches), read_launches(launches)
    assert len(compiled) == 6 and len(chosen) == 2 and sum(len(c) for c in chosen.values()) == 3
    assert set(launched) <= set(compiled)  # the new records are not launches
    record = json.loads(next(line for line in lines if '"autotuned"' in line))
    bad = [
        lines[0][: len(lines[0]) // 2],  # a line cut short by a killed script
        "[1, 2]", "42", "null", "not json",
        json.dumps({"record": "compiled", "hash": 7, "constexprs": {}}),
        json.dumps({"record": "compiled", "hash": "x" * 64, "constexprs": [1, 2]}),
        json.dumps({"record": "compiled", "hash": "y" * 64, "constexprs": {"A": [1]}}),
        json.dumps({"record": "compiled", "hash": "z" * 64, "constexprs": {}, "num_warps": -4}),
        '{"record": "compiled", "hash": "w", "constexprs": {}, "num_warps": 1' + "0" * 400 + "}",
        json.dumps({**record, "measured": "no"}),
        json.dumps({**record, "hash": "v" * 64, "measured": True, "timings": [{"ms": [math.nan]}]}),
        json.dumps({**record, "hash": "u" * 64, "configs": True}),
    ]
    junk = tmp_path / "launches.jsonl"
    junk.write_text("\n".join(bad[:5] + lines + bad[5:]) + "\n")
    assert read_compiled(junk) == compiled and read_autotune(junk) == chosen and read_launches(junk) == launched
    assert read_compiled(tmp_path / "missing.jsonl") == {} and read_autotune(tmp_path / "missing.jsonl") == {}


def test_measured_timings_are_kept_by_config(tmp_path):
    """On a GPU the autotuner's own timings go with the choice, keyed as the compiled records are."""
    import triton

    fast = triton.Config({"BLOCK": 512}, num_warps=4, num_stages=2)
    slow = triton.Config({"BLOCK": 256}, num_warps=2, num_stages=1)
    broken = triton.Config({"BLOCK": 4096}, num_warps=8, num_stages=1)
    timings = {slow: [0.5, 0.4, 0.6], fast: [0.2, 0.1, 0.3], broken: [math.inf] * 3}
    tuner = SimpleNamespace(cache={(1024, "torch.float16"): fast}, configs=[slow, fast, broken],
                            configs_timings=timings, base_fn=SimpleNamespace(__name__="add_kernel"))
    sink = io.StringIO()
    recorder = ConfigRecorder(sink, stand_in=False)
    recorder.launched("a" * 64)
    recorder.autotuned(tuner, keys_before=set(), timings_before=None)
    recorder.autotuned(tuner, keys_before=set(tuner.cache), timings_before=timings)  # a key-cache hit
    path = tmp_path / "measured.jsonl"
    path.write_text(sink.getvalue())
    ((choice,),) = read_autotune(path).values()
    assert choice.hash == "a" * 64 and choice.measured and choice.configs == 3
    assert choice.key == "(1024, 'torch.float16')"
    by_config = {(t.constexprs, t.num_warps, t.num_stages): t.ms for t in choice.timings}
    assert by_config == {((("BLOCK", "256"),), 2, 1): (0.5, 0.4, 0.6), ((("BLOCK", "512"),), 4, 2): (0.2, 0.1, 0.3),
                         ((("BLOCK", "4096"),), 8, 1): ()}
    stand_in = ConfigRecorder(io.StringIO(), stand_in=True)
    stand_in.launched("b" * 64)
    stand_in.autotuned(tuner, keys_before=set(), timings_before=None)
    path.write_text(stand_in.sink.getvalue())
    ((choice,),) = read_autotune(path).values()
    assert not choice.measured and choice.timings == ()


@pytest.mark.parametrize("key_of", [lambda i, name: i, lambda i, name: name, lambda i, name: (i,)],
                         ids=["triton-3.0-index", "triton-3.2-name", "triton-3.3-tuple"])
def test_constexprs_by_name_in_every_key_shape(key_of):
    """ASTSource.constants as Triton 3.0-3.9 key it; an int arg equal to 1 is a constant, not a constexpr."""
    import triton.language as tl

    names = ["x_ptr", "n", "stride", "BLOCK", "DTYPE"]
    fn = SimpleNamespace(arg_names=names, constexprs=[3, 4])
    values = {2: 1, 3: tl.constexpr(128), 4: tl.float16}
    src = SimpleNamespace(fn=fn, constants={key_of(i, names[i]): v for i, v in values.items()})
    assert constexpr_values(src) == {"BLOCK": 128, "DTYPE": tl.float16}
