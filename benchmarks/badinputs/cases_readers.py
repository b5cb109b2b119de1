"""Bad input to the pipeline's readers: sweep status and collect, the chained steps on broken runs, study and predict on broken sweeps."""

from __future__ import annotations

from badinputs.fixtures import (
    Case,
    then,
    write,
    copy_file,
    copy_run,
    no_file,
    then_files,
    same_file,
)

ST = "fitting.study"
PD = "fitting.predict"
F = "fitting.fit"
EL = "empirical.elicit"

CASES = [
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--class", "", *["--out", "{c}/out"]],
        "no trajectory matches",
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--boot", "x", *["--out", "{c}/out"]],
        "invalid int value: 'x'",
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--boot", "5", *["--out", "{c}/out"]],
        "--boot 5: need at least 10",
        check=no_file("out"),
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--persist", "0", *["--out", "{c}/out"]],
        "--persist 0: must be >= 1",
        check=no_file("out"),
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--compare", "eq1", *["--out", "{c}/out"]],
        "give another model",
        check=no_file("out"),
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--class", "99", *["--out", "{c}/out"]],
        "no trajectory matches --class 99",
    ),
    Case(
        "bad flag",
        F,
        ["{w}/log.csv", "--protocol", "nope", *["--out", "{c}/out"]],
        "no trajectory matches",
    ),
    Case("output path", F, ["{w}/log.csv", "--out", "{w}/file"], "is a file, not a folder"),
    Case(
        "bad flag",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "",
            "--out",
            "{c}/out",
        ],
        "--holdout",
    ),
    Case(
        "output path",
        PD,
        [
            "{w}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--out",
            "{w}/file",
        ],
        "file",
    ),
    Case(
        "bad value",
        PD,
        ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
        "1e+300",
        setup=write(
            "cov.csv",
            "run,signal_color,signal_size\n"
            + "".join(f"r{i},{'1e300' if i == 2 else 0.01 * (i + 1)},0.05\n" for i in range(5)),
        ),
        check=no_file("out/prediction.json"),
        label="--covariates (a signal of 1e300)",
    ),
    Case(
        "bad value",
        PD,
        ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
        "the same value in every run",
        setup=write(
            "cov.csv",
            "run,signal_color,signal_size\n" + "".join(f"r{i},0.02,0.05\n" for i in range(5)),
        ),
        check=no_file("out/prediction.json"),
        label="--covariates (no covariate varies)",
    ),
    Case(
        "bad value",
        PD,
        ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
        "must be a positive number",
        setup=write(
            "cov.csv",
            "run,signal_color,signal_size\n"
            + "".join(f"r{i},{-0.01 * (i + 1)},0.05\n" for i in range(5)),
        ),
        label="--covariates (negative signals)",
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
            "--seed",
            "-1",
            "--out",
            "{c}/out",
        ],
        "--seed -1: a seed must be an integer in [0, 2**32)",
        check=no_file("out"),
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
            "--seed",
            "x",
            "--out",
            "{c}/out",
        ],
        "invalid int value: 'x'",
    ),
    Case(
        "output path",
        PD,
        [
            "{c}/sweep.csv",
            "--covariates",
            "{w}/covariates.csv",
            "--holdout",
            "r0",
            "--out",
            "{c}/sweep.csv",
        ],
        "sweep.csv",
        setup=copy_file("sweep.csv"),
        check=same_file("sweep.csv"),
    ),
    Case(
        "bad flag",
        ST,
        ["{c}", "--by", ""],
        "--by : not a column of",
        setup=then(
            copy_file("sweep.csv"),
            write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.4\n"),
        ),
    ),
    Case(
        "output path",
        ST,
        ["{c}", "--out", "{c}/sweep.csv"],
        "would overwrite the input",
        setup=then_files("sweep.csv", "covariates.csv"),
        check=same_file("sweep.csv"),
    ),
    Case(
        "output path",
        ST,
        ["{c}", "--out", "{c}"],
        "is a folder",
        setup=then_files("sweep.csv", "covariates.csv"),
    ),
    Case(
        "silent drop",
        ST,
        ["{c}"],
        "have no row in",
        setup=then(
            copy_file("sweep.csv"),
            write(
                "covariates.csv",
                "run,seed,sep_color\n" + "".join(f"r{i},0,{0.3 + i / 10:g}\n" for i in range(4)),
            ),
        ),
        check=no_file("study.json"),
        label="DIR (run r4 has trajectories but no covariates row)",
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--every", "-2"],
        "--every -2",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case("bad flag", EL, ["{c}/run", "--every", "x"], "invalid int value: 'x'", setup=copy_run),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--protocols", "overprompt,foo"],
        "unknown protocol 'foo'",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case(
        "bad flag",
        EL,
        ["{c}/run", "--classes", ","],
        "--classes ','",
        setup=copy_run,
        check=no_file("run/elicit"),
    ),
    Case("bad flag", EL, ["{c}/run", "--device", "tpu"], "invalid choice: 'tpu'", setup=copy_run),
]
