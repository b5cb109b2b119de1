"""Bad input to the pipeline: every --then step and every sweep flag, refused before anything is written (the issue on the pipeline under bad input)."""

from __future__ import annotations

import json
from badinputs.fixtures import Case, then, write, copy_log, no_file, unchanged, sweep_folder

SW = "pipeline.sweep"
TU = "fitting.turn"
sweep = ["--preset", "smoke", "--executor", "debug", "--out", "{c}/sw"]
nothing = no_file("sw")
steps = [  # (step, the words of its refusal): checked by the step's own command (--check-args) before any run
    ("elicit --bogus 3", "unrecognized arguments: --bogus 3"),
    ("elicit --every 0", "--every 0: must be >= 1"),
    ("elicit --every x", "invalid int value: 'x'"),
    ("elicit --protocols foo", "unknown protocol 'foo'"),
    ("elicit --protocols ,", "give at least one of"),
    ("elicit --classes ,", "--classes ','"),
    ("elicit --device tpu", "invalid choice: 'tpu'"),
    ("fit --class", "--class: expected one argument"),
    ("fit --boot 3", "--boot 3: need at least 10"),
    ("fit --persist 0", "--persist 0: must be >= 1"),
    ("fit --model nope", "invalid choice: 'nope'"),
    ("fit --compare eq1", "give another model than --model eq1"),
    ("fit --ci nope", "invalid choice: 'nope'"),
    ("turn --min-dev -1", "--min-dev -1.0"),
    ("turn --min-dev nan", "--min-dev nan"),
    ("turn --min-angle 400", "--min-angle 400.0: give degrees in [0, 180]"),
    ("turn --class ,", "give one or more class labels"),
    ("capability --persist 0", "--persist 0: must be >= 1"),
    ("capability --class ' '", "give a class label"),
    ("figure --out x.jpg", "must end in .png or .pdf or .svg"),
    ("figure --out {w}/file/x.png", "which is a file, not a folder"),
    ("fit --out {w}/file", "is a file, not a folder"),
    ("capability --out {w}/file", "is a file, not a folder"),
    ("elicit '--every", "No closing quotation"),
    ("", "unknown step ''"),
    ("train --steps 5", "unknown step 'train'"),
    (
        "fit",
        "a model fit needs at least 8 checkpoints with readable samples and run 'run' logs 4",
    ),
]
flags = [  # (arguments, words): the sweep's own flags and grid, refused before sweep.json is written
    (["--max-parallel", "0"], "--max-parallel 0: must be >= 1"),
    (["--cpus-per-job", "0"], "--cpus-per-job 0: must be >= 1"),
    (["--timeout-min", "0"], "--timeout-min 0: must be >= 1"),
    (["--gpus-per-job", "-1"], "--gpus-per-job -1: must be >= 0"),
    (["--slurm-partition", "gpu"], "only with --executor slurm"),
    (["--preset", "nope"], "--preset 'nope': valid: smoke"),
    (["--executor", "pbs"], "invalid choice: 'pbs'"),
    (["--grid", "seed="], "expected KEY=V1,V2"),
    (["--grid", "=1"], "--grid '=1'"),
    (["--grid", "seed"], "--grid 'seed'"),
    (["--grid", "sep.color=0.3,abc"], "sep.color"),
    (["--grid", "steps=0,10"], "steps=0"),
    (["--grid", "lr=nan"], "lr"),
    (["--set", "nonsense=1"], "nonsense"),
    (["--set", "sep.color=2"], "sep"),
    (["--grid", "seed=0,1", "--set", "seed=3"], "seed is also given by --set; give it once"),
    (["--grid", "seed=0,1", "--grid", "seed=2"], "seed is already a grid key"),
    (["--grid", "probe=a,b"], "a sweep shares its probe"),
    (["--grid", "channels=8,16;x"], "channels"),
    (["--grid", "seed=-1"], "seed=-1 is not valid"),
    (["--grid", "resolution=3"], "resolution"),
    (
        ["--grid", "protocols=cfg", "--set", "p_cfg=0"],
        "cfg needs a model trained with classifier-free dropout (p_cfg > 0",
    ),
    (["--grid", "seed=0.5"], "seed"),
    (["--grid", "steps=1e99"], "steps"),
]

CASES = [
    Case("bad flag", SW, [*sweep, "--then", step], words, check=nothing, label=f"--then '{step}'")
    for step, words in steps
]

CASES += [Case("bad flag", SW, [*sweep, *extra], words, check=nothing) for extra, words in flags]

CASES += [
    Case(
        "output path",
        SW,
        ["--preset", "smoke", "--executor", "debug", "--out", "{w}/file"],
        "is a file, not a folder",
    ),
    Case(
        "output path",
        SW,
        ["--preset", "smoke", "--executor", "debug", "--out", "{w}/file/sw"],
        "which is a file, not a folder",
    ),
    Case("missing input", SW, ["status", "{c}/none"], "none", check=no_file("none")),
    Case("missing input", SW, ["status", "{w}/file"], "file"),
    Case(
        "bad run folder",
        SW,
        ["status", "{c}/sw"],
        "sweep.json",
        setup=sweep_folder("sw/sweep.json", "{oops"),
        check=unchanged("sw/sweep.json", "{oops"),
        label="status DIR (sweep.json is not JSON)",
    ),
    Case(
        "bad run folder",
        SW,
        ["status", "{c}/sw"],
        "sweep.json",
        setup=sweep_folder("sw/sweep.json", "[1, 2]"),
        check=unchanged("sw/sweep.json", "[1, 2]"),
        label="status DIR (sweep.json is a list)",
    ),
    Case(
        "bad run folder",
        SW,
        ["status", "{c}/sw"],
        "sweep.json",
        setup=sweep_folder("sw/sweep.json", json.dumps({"runs": "x"})),
        label="status DIR (sweep.json's runs is not a list)",
    ),
    Case("missing input", SW, ["collect", "{w}/file"], "not a sweep folder"),
    Case(
        "missing input",
        SW,
        ["collect", "{c}/none", "--partial"],
        "not a sweep folder",
        check=no_file("none"),
    ),
    Case(
        "bad run folder",
        SW,
        ["status", "{c}/sw"],
        "no runs",
        setup=lambda c, w: (c / "sw" / "runs").mkdir(parents=True),
        label="status DIR (an empty runs/ and no sweep.json)",
    ),
    Case(
        "bad run folder",
        SW,
        ["collect", "{c}/sw"],
        "no run folders",
        setup=sweep_folder("sw/sweep.json", "{oops"),
        check=no_file("sw/sweep.csv"),
        label="collect DIR (sweep.json is not JSON, no run trained: not read)",
    ),
    Case(
        "bad run folder",
        SW,
        ["collect", "{c}/sw"],
        "no run folders",
        setup=sweep_folder("sw/sweep.json", json.dumps({"preset": "smoke", "runs": ["seed=0"]})),
        check=no_file("sw/sweep.csv"),
        label="collect DIR (no run has trained)",
    ),
    Case(
        "bad flag",
        TU,
        ["{w}/naive-run", "--min-dev", "-1"],
        "--min-dev -1.0",
        check=no_file("turn.json"),
    ),
    Case("bad flag", TU, ["{w}/naive-run", "--min-dev", "inf"], "--min-dev inf"),
    Case("bad flag", TU, ["{w}/naive-run", "--min-angle", "181"], "--min-angle 181.0"),
    Case("bad flag", TU, ["{w}/naive-run", "--min-angle", "-5"], "--min-angle -5.0"),
    Case("bad flag", TU, ["{w}/naive-run", "--class", ","], "give one or more class labels"),
    Case("bad flag", TU, ["{w}/naive-run", "--min-dev", "x"], "invalid float value: 'x'"),
    Case("unreadable log", TU, ["{w}/binary.csv"], "binary.csv"),
    Case("unreadable log", TU, ["{w}/empty.csv"], "empty.csv"),
    Case("unreadable log", TU, ["{w}/nostep.csv"], "step"),
    Case("unreadable log", TU, ["{w}/file"], "column 'step': required column is missing"),
    Case("bad flag", TU, ["{w}/naive-run", "--class", "99"], "99", check=no_file("turn.json")),
    Case(
        "output path",
        TU,
        ["{c}/run"],
        "turn.json",
        setup=then(copy_log("run"), write("run/turn.json/x", "")),
        label="RUN (RUN/turn.json is a folder)",
    ),
]
