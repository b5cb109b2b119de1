"""Bad input to the pooled analyses: fitting.predict, the first sweep cases, fitting.study, figures.study."""

from __future__ import annotations

import json
from badinputs.fixtures import Case, then, write, copy_file, no_file, two_levels, unchanged

PD = "fitting.predict"
ST = "fitting.study"
FS = "figures.study"
SW = "pipeline.sweep"
sweep = ["--preset", "smoke", "--executor", "debug", "--out", "{c}/sw"]
canary = "touch {c}/ran"
out = ["--out", "{c}/out"]
ran = no_file("ran")
inj = "injection"


def five_runs(*signals: str):
    """Setup: the workspace's sweep.csv (class 11 only) and a covariates table of five runs with ``signals``."""
    head = ",".join(["run,seed,sep_color", *signals]) + "\n"
    rows = "".join(f"r{i},0,{0.3 + i / 10:g}" + ",0.05" * len(signals) + "\n" for i in range(5))
    return then(copy_file("sweep.csv"), write("covariates.csv", head + rows))


CASES = [
    Case(
        "missing input",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/none.csv", "--holdout", "r0", *out],
        "no such file",
        check=no_file("out"),
    ),
    Case(
        "unreadable log",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/binary.csv", "--holdout", "r0", *out],
        "NUL bytes",
    ),
    Case(
        "unreadable log",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/file", "--holdout", "r0", *out],
        "no 'run' column",
    ),
    Case(
        "bad value",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/cov_text.csv", "--holdout", "r0", *out],
        "row 4, column signal_color: 'lots' is not a number",
        check=no_file("out/prediction.json"),
    ),
    Case(
        "bad flag",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--covariate",
            "sep",
            *out,
        ],
        "no column sep_color",
    ),
    Case(
        "bad flag",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/covariates.csv", "--holdout", "nope", *out],
        "not a run of",
    ),
    Case(
        "bad flag",
        PD,
        ["{w}/sweep.csv", "--covariates", "{w}/covariates.csv", "--train", "r0,r1", *out],
        "at least 3 training runs",
    ),
    Case(
        "bad flag",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--train",
            "r1",
            *out,
        ],
        "not allowed with argument",
    ),
    Case(
        "bad flag",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--law",
            "eq2",
            *out,
        ],
        "eq2 needs the masked concept",
    ),
    Case(
        "bad flag",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--law",
            "notebook",
            *out,
        ],
        "unknown part 'notebook'",
    ),
    Case(
        "bad value",
        PD,
        ["{w}/log.csv", "--covariates", "{w}/covariates.csv", "--holdout", "r0", *out],
        "no row for run 'r'",
    ),
    Case(inj, SW, [*sweep, "--then", f"turn; {canary}"], "unknown step 'turn;'", check=ran),
    Case(
        "bad flag",
        SW,
        [*sweep, "--grid", "nonsense=1,2"],
        "unknown key 'nonsense'",
        check=no_file("sw"),
    ),
    Case("bad flag", SW, [*sweep, "--grid", "seed=0,0"], "repeated", check=no_file("sw")),
    Case(
        "bad flag",
        SW,
        [*sweep, "--grid", "lr=0.001,2"],
        "run lr=2: lr=2.0 is not valid",
        check=no_file("sw/runs"),
    ),
    Case(
        "bad flag",
        SW,
        [*sweep, "--set", "probe={out}/p"],
        "one probe across its runs",
        check=no_file("sw/runs"),
    ),
    Case("bad flag", SW, [*sweep, "--no-wait"], "only with --executor slurm"),
    Case(
        "bad run folder",
        SW,
        [*sweep, "--grid", "seed=0"],
        "holds a run with another config",
        setup=write("sw/runs/seed=0/config.json", json.dumps({"train": {"steps": 7}})),
        check=no_file("sw/logs"),
        label="--out DIR (DIR/runs/seed=0 holds another run)",
    ),
    Case(
        "missing input",
        SW,
        ["collect", "{c}/none"],
        "not a sweep folder",
        check=no_file("none"),
    ),
    Case(
        "bad config",
        "empirical.train",
        ["--preset", "smoke", "--set", "precision=fp16", "--out", "{c}/r"],
        "precision=fp16 is not valid",
        check=no_file("r"),
    ),
    Case(
        "missing input",
        ST,
        ["{c}/none"],
        "sweep.csv: not found; run python -m pipeline.sweep collect",
        check=no_file("none/study.json"),
    ),
    Case(
        "unreadable log",
        ST,
        ["{c}"],
        "no 'seed' column",
        setup=then(
            copy_file("sweep.csv"),
            write("covariates.csv", ("run,signal_color,signal_size\nr0,0.01,0.05\n")),
        ),
        label="DIR (covariates.csv without seeds)",
    ),
    Case(
        "bad value",
        ST,
        ["{c}"],
        "row 3, column seed: 'x' is not a number",
        setup=then(
            copy_file("sweep.csv"),
            write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,x,0.4\n"),
        ),
        label="DIR (a seed that is not a number)",
    ),
    Case(
        "bad flag",
        ST,
        ["{c}"],
        "--by: give the covariate to group by; the runs vary in nothing",
        setup=then(
            copy_file("sweep.csv"),
            write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.3\n"),
        ),
        label="DIR (nothing varies between the runs)",
    ),
    Case(
        "bad flag",
        ST,
        ["{c}", "--by", "lr"],
        "--by lr: not a column of",
        setup=two_levels,
    ),
    Case(
        "bad flag",
        ST,
        ["{c}", "--only", "sep_color=0.9"],
        "--only 'sep_color=0.9': no run of",
        setup=two_levels,
        check=no_file("study-sep_color=0.9.json"),
    ),
    Case(
        "unreadable log",
        ST,
        ["{c}"],
        "no naive trajectory of a training class (the log holds class 11 only)",
        setup=five_runs("signal_color", "signal_size"),
        label="DIR (a log of the held-out class only)",
        check=no_file("study.json"),
    ),
    Case(
        "missing input",
        ST,
        ["{c}"],
        "has no signal_size: the study needs each concept's measured signal",
        setup=five_runs("signal_color"),
        label="DIR (covariates.csv without signal_size)",
        check=no_file("study.json"),
    ),
    Case("missing input", FS, ["{c}"], "study.json: not found; run python -m fitting.study"),
    Case("unreadable log", FS, ["{c}", "--study", "{w}/log.csv"], "log.csv: not valid JSON"),
    Case(
        "bad run folder",
        FS,
        ["{c}"],
        "not the study.json that python -m fitting.study writes",
        setup=write("study.json", json.dumps({"runs": []})),
        check=no_file("learning.png"),
    ),
    # an output named as a file other commands read (issue #51: these overwrote them)
    Case(
        "lost data",
        ST,
        ["{c}", "--out", "{c}/sweep.json"],
        "sweep.json is the name of a sweep's plan, which other commands read",
        setup=write("sweep.json", '{"grid": 1}'),
        check=unchanged("sweep.json", '{"grid": 1}'),
    ),
    *(
        Case(
            "lost data",
            "fitting.ladder",
            ["{w}/naive-run", "--out", "{c}/" + name],
            f"{name.split('/')[-1]} is the name of {what}, which other commands read",
            setup=write(name, "{}"),
            check=unchanged(name, "{}"),
        )
        for name, what in (
            ("trajectories.meta.json", "a trajectory log's sidecar"),
            ("elicit/overprompt.json", "an elicitation protocol's record of the run"),
        )
    ),
]
