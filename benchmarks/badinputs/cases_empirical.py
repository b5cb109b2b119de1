"""Bad input to training: empirical.data, empirical.probe, empirical.train, empirical.elicit (torch)."""

from __future__ import annotations

import json
from badinputs.fixtures import (
    Case,
    then,
    write,
    copy_run,
    own_probe,
    malicious_probe,
    no_file,
    same_naive_rows,
    unchanged,
)


def _torch_setup(c, w) -> None:
    """A setup step that marks its case as needing torch."""


_torch_setup.torch = True


TR = "empirical.train"
EL = "empirical.elicit"
DA = "empirical.data"
PR = "empirical.probe"
out = ["--out", "{c}/out"]
ran = no_file("ran")
inj = "injection"

CASES = [
    Case("bad number", DA, ["--seed", "-1", *out], "--seed -1", check=no_file("out")),
    Case("bad number", DA, ["--sep", "color=nan,size=0.4", *out], "finite", check=no_file("out")),
    Case(
        "bad number",
        DA,
        ["--sep", "color=2,size=0.4", *out],
        "valid range",
        check=no_file("out"),
    ),
    Case("bad name", DA, ["--sep", "nope=1", *out], "nope", check=no_file("out")),
    Case(
        "bad name",
        DA,
        ["--concepts", "foo", *out],
        "unknown concept 'foo'",
        check=no_file("out"),
    ),
    Case("bad number", DA, ["--n", "0", *out], "--n 0", check=no_file("out")),
    Case("bad number", DA, ["--res", "3", *out], "resolution", check=no_file("out")),
    Case("output path", DA, ["--out", "{w}/file"], "is a file"),
    Case("bad name", PR, ["--setup", "nope", *out], "nope", check=no_file("out")),
    Case("bad number", PR, ["--seed", "-1", *out], "--seed -1", check=no_file("out")),
    Case("bad number", PR, ["--res", "3", *out], "resolution", check=no_file("out")),
    Case("output path", PR, ["--out", "{w}/file/probe"], "which is a file"),
    Case("bad config", TR, ["--preset", "nope", *out], "unknown preset"),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "lr=1e6", *out],
        "lr=1000000.0 is not valid",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "gamma_max=inf", *out],
        "finite",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "lr=nan", *out],
        "finite",
        check=no_file("out"),
    ),
    Case("bad config", TR, ["--preset", "smoke", "--set", "nope=1", *out], "unknown key 'nope'"),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "steps=abc", *out],
        "steps takes an integer",
    ),
    Case("bad config", TR, ["--preset", "smoke", "--set", "channels=", *out], "channels"),
    Case("bad config", TR, ["--preset", "smoke", "--set", "seed=-1", *out], "seed=-1"),
    Case("bad config", TR, ["--preset", "smoke", "--set", "mask_p=2", *out], "mask_p=2"),
    Case("bad config", TR, ["--preset", "smoke", "--set", "device=tpu", *out], "device=tpu"),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "eval_dense=10,20", *out],
        "give start,end,count",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "grid_overprompt=0.5,3", *out],
        "renderable limit",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "grid_intervention=1,0,2", *out],
        "even number",
        check=no_file("out"),
    ),
    Case(
        "bounded work",
        TR,
        ["--preset", "paper", "--set", "per_class=10000000", *out],
        "GiB",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "probe={c}/none/probe.pt", *out],
        "is not a file",
        check=no_file("out"),
    ),
    Case(
        "bad config",
        TR,
        ["--preset", "smoke", "--set", "probe={w}/file/probe", *out],
        "which is a file",
        check=no_file("out"),
    ),
    Case(
        "bad run folder",
        TR,
        ["--preset", "smoke", "--out", "{c}/run"],
        "no 'train' section",
        setup=write("run/config.json", "{}"),
        check=unchanged("run/config.json", "{}"),
    ),
    Case(
        "bad run folder",
        TR,
        ["--preset", "smoke", "--out", "{c}/run"],
        "not valid JSON",
        setup=write("run/config.json", "{oops"),
        check=unchanged("run/config.json", "{oops"),
    ),
    Case(
        "bad run folder",
        TR,
        ["--preset", "smoke", "--set", "steps=50", "--out", "{c}/run"],
        "another config",
        setup=copy_run,
    ),
    Case(
        "bad run folder",
        TR,
        ["--preset", "smoke", "--set", "channels=8,16", "--out", "{c}/run"],
        "another config",
        setup=then(copy_run, lambda c, w: (c / "run" / "config.json").unlink()),
        check=no_file("run/config.json"),
        label="--set channels=8,16 --out RUN (RUN holds only a last.pt of channels 16,32)",
    ),
    Case(
        "bad run folder",
        TR,
        ["--preset", "smoke", "--out", "{c}/run"],
        "cannot read this checkpoint",
        setup=then(copy_run, write("run/checkpoints/last.pt", b"\x80\x04garbage")),
        label="--out RUN (last.pt is garbage)",
    ),
    Case("output path", TR, ["--preset", "smoke", "--out", "{w}/file"], "is a file"),
    Case(
        "bad run folder",
        EL,
        ["{c}/theory"],
        "no 'train' section",
        setup=write("theory/config.json", json.dumps({"preset": "fig5", "model": "eq1"})),
        label="a theory.simulate output folder",
    ),
    Case("missing input", EL, ["{c}/none"], "not a folder"),
    Case("missing input", EL, ["{w}/file"], "not a folder"),
    Case(
        "bad run folder",
        EL,
        ["{c}/run"],
        "no 'train' section",
        setup=then(copy_run, write("run/config.json", "{}")),
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--classes", ""],
        "--classes",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--classes", "22"],
        "unknown class",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--protocols", ""],
        "--protocols",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--protocols", "nope"],
        "unknown protocol",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case("bad flag", EL, ["{c}/run", "--device", "cuda"], "no CUDA device", setup=copy_run),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--every", "0"],
        "--every 0",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case(
        "bad run folder",
        EL,
        ["{c}/run", "--protocols", "overprompt"],
        "cannot read this probe",
        setup=then(copy_run, own_probe, write("run/probe/probe.pt", b"not a torch file")),
        label="RUN (probe.pt corrupt)",
    ),
    Case(
        inj,
        EL,
        ["{c}/run", "--protocols", "overprompt"],
        "cannot read this probe",
        setup=then(copy_run, own_probe, malicious_probe),
        check=ran,
        label="RUN (probe.pt pickles os.system)",
    ),
    Case(
        "bad run folder",
        EL,
        ["{c}/run", "--protocols", "overprompt"],
        "not an elicitation file",
        setup=then(copy_run, write("run/elicit/overprompt.json", "[]")),
        label="RUN (elicit/overprompt.json is a list)",
    ),
    Case(
        "bad run folder",
        EL,
        ["{c}/run", "--protocols", "overprompt"],
        "z is not a list of numbers",
        setup=then(
            copy_run,
            write(
                "run/elicit/overprompt.json",
                json.dumps({"steps": {"4": {"11": [[9], "x", 1]}}}),
            ),
        ),
        label="RUN (an elicitation entry of the wrong shape)",
    ),
    Case(
        "lost data",
        EL,
        ["{c}/run", "--protocols", "overprompt"],
        expect="ok",
        setup=then(copy_run, lambda c, w: (c / "run" / "trajectories.csv").unlink()),
        check=same_naive_rows,
        label="RUN after trajectories.csv was deleted (naive rows come back from last.pt)",
        slow=True,
    ),
    # the job-file runner (issue #51: the shell runner dropped or mixed runs silently)
    Case(
        "bad flag",
        "pipeline.batch",
        ["{c}/jobs.txt", "--runs", "{c}/runs", "--parallel", "two"],
        "argument --parallel: invalid int value: 'two'",
        setup=write("jobs.txt", "a --preset smoke\n"),
        check=no_file("runs"),
    ),
    *(
        Case(
            "bad run folder",
            "pipeline.batch",
            ["{c}/jobs.txt", "--runs", "{c}/runs"],
            words,
            setup=write("jobs.txt", text),
            check=no_file("runs"),
        )
        for text, words in (
            ("../../outside --preset smoke\n", "the folder must name a folder under the runs"),
            ("/abs --preset smoke\n", "the folder must be relative"),
        )
    ),
    Case(  # line 1 is checked as empirical.train takes it: torch
        "bad run folder",
        "pipeline.batch",
        ["{c}/jobs.txt", "--runs", "{c}/runs"],
        "the folder is also line 1's",
        setup=then(write("jobs.txt", "a --preset smoke\n./a/ --preset smoke\n"), _torch_setup),
        check=no_file("runs"),
    ),
]
