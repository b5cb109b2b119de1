"""python -m fitting.predict on a simulated sweep with known truth: outputs, numbers, and bad input."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from fitting.analyses.leave_out import differences, split_summary
from figures.predict import main as draw_main
from fitting.predict import main
from fitting.analyses.synthetic import TRUE_LAW, sweep_case
from core.trajectory import Trajectory, read_csv, write_csv


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    case = sweep_case(np.geomspace(0.005, 0.08, 8), seed=2)
    write_csv(folder / "sweep.csv", case.trajectories)
    with (folder / "covariates.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "seed", "sep_color", "signal_color", "signal_size"])
        for t, x in zip(case.trajectories, case.x):
            w.writerow([t.run, t.seed, round(float(np.sqrt(x[0])), 4), x[0], x[1]])
    return folder, case


def write_sweep(folder, case, **columns) -> list[str]:
    """The case's log (sweep.csv) and covariates (cov.csv: run, the given per-run columns, the two signals) in
    ``folder``; returns the command line's first arguments."""
    write_csv(folder / "sweep.csv", case.trajectories)
    with (folder / "cov.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", *columns, "signal_color", "signal_size"])
        for i, (t, x) in enumerate(zip(case.trajectories, case.x)):
            w.writerow([t.run, *(values[i] for values in columns.values()), x[0], x[1]])
    return [str(folder / "sweep.csv"), "--covariates", str(folder / "cov.csv")]


def test_predict_writes_the_law_the_held_out_paths_and_the_baselines(sweep, tmp_path, capsys):
    folder, case = sweep
    out = tmp_path / "p"
    assert (
        main(
            [
                str(folder / "sweep.csv"),
                "--covariates",
                str(folder / "covariates.csv"),
                "--holdout",
                "run3,run7",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "held out run3" in capsys.readouterr().out
    trajs = {(t.run, t.protocol): t for t in read_csv(out / "predicted.csv")}
    assert {p for _, p in trajs} == {"fitted", "predicted"}
    assert [r for r, p in trajs if p == "predicted"] == ["run3", "run7"] and len(trajs) == 8
    assert all(
        np.array_equal(t.step, case.trajectories[0].step) and t.label == "11"
        for t in trajs.values()
    )
    doc = json.loads((out / "prediction.json").read_text())
    assert doc["law"]["coefficients"]["b_lam"] == pytest.approx(TRUE_LAW["b_lam"], rel=0.1)
    assert doc["law"]["coefficients"]["b_t"] == pytest.approx(TRUE_LAW["b_t"], rel=0.1)
    inside, outside = doc["holdout"]["run3"], doc["holdout"]["run7"]
    assert inside["rmse"] <= 1.5 * case.noise and outside["rmse"] <= 1.5 * case.noise
    assert (
        inside["baselines"]["interpolation"]["applies"]
        and not outside["baselines"]["interpolation"]["applies"]
    )
    assert "extrapolation" in outside["baselines"]["interpolation"]["why_not"]
    assert (
        outside["baselines"]["nearest"]["runs"] == ["run6"]
        and outside["baselines"]["nearest"]["rmse"] > outside["rmse"]
    )
    for h in (
        inside,
        outside,
    ):  # the mean of the training runs ignores the covariates: the law beats it
        assert (
            len(h["baselines"]["mean"]["runs"]) == 6
            and h["baselines"]["mean"]["rmse"] > 2 * h["rmse"]
        )
    for h in (inside, outside):
        weak = h["settled_80"]["color"]
        if weak["observed"] is not None:
            assert weak["predicted"] == pytest.approx(weak["observed"], rel=0.25)
    assert set(doc["per_run_fits"]) == {f"run{i}" for i in (0, 1, 2, 4, 5, 6)}
    assert all(
        "switched" in f["summary"] or "learned directly" in f["summary"]
        for f in doc["per_run_fits"].values()
    )
    assert doc["stamp"]["command"] and doc["seconds"]["pooled_fit"] < 30
    assert not (out / "prediction.png").exists()  # figures.predict draws it
    assert draw_main([str(out)]) == 0 and (out / "prediction.png").stat().st_size > 10_000


def test_runs_are_chosen_by_ids_holding_commas_or_by_a_covariate_value(tmp_path):
    case = sweep_case(np.geomspace(0.005, 0.08, 4), seed=0)
    runs = [
        "seed=0,sep.color=0.3",
        "seed=0,sep.color=0.5",
        "seed=1,sep.color=0.3",
        "seed=1,sep.color=0.5",
    ]
    trajs = [dataclasses.replace(t, run=r) for t, r in zip(case.trajectories, runs)]
    write_csv(tmp_path / "sweep.csv", trajs)
    with (tmp_path / "cov.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "sep_color", "signal_color", "signal_size"])
        for r, x in zip(runs, case.x):
            w.writerow([r, r[-3:], x[0], x[1]])
    base = [str(tmp_path / "sweep.csv"), "--covariates", str(tmp_path / "cov.csv")]
    assert main([*base, "--holdout", "seed=1,sep.color=0.5", "--out", str(tmp_path / "a")]) == 0
    assert list(json.loads((tmp_path / "a" / "prediction.json").read_text())["holdout"]) == [
        "seed=1,sep.color=0.5"
    ]
    assert (
        main([*base, "--train", "sep_color=0.3,seed=0,sep.color=0.5", "--out", str(tmp_path / "b")])
        == 0
    )
    assert list(json.loads((tmp_path / "b" / "prediction.json").read_text())["holdout"]) == [
        "seed=1,sep.color=0.5"
    ]


def test_train_lists_the_training_runs_and_sep_is_a_covariate_too(sweep, tmp_path):
    folder, _ = sweep
    assert (
        main(
            [
                str(folder / "sweep.csv"),
                "--covariates",
                str(folder / "covariates.csv"),
                "--train",
                "run0,run2,run4,run6",
                "--covariate",
                "signal",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "prediction.json").read_text())
    assert sorted(doc["train"]) == ["run0", "run2", "run4", "run6"] and sorted(doc["holdout"]) == [
        "run1",
        "run3",
        "run5",
        "run7",
    ]


@pytest.mark.parametrize(
    "extra, edit, match",
    [
        (
            ["--covariate", "sep"],
            None,
            "no column sep_size for --covariate sep; covariates here: sep, signal",
        ),
        (["--holdout", "run99"], None, "--holdout 'run99': not a run of"),
        (["--holdout", "seed=70"], None, "--holdout 'seed=70': no run of"),
        (["--train", "run0,run1"], None, "need at least 3 training runs"),
        (["--holdout", "run1"], lambda rows: rows.pop(3), "no row for run 'run2'"),
        (
            ["--holdout", "run1"],
            lambda rows: rows[2].__setitem__(3, "x"),
            "row 3, column signal_color: 'x' is not a number",
        ),
        (
            ["--holdout", "run1"],
            lambda rows: rows[2].__setitem__(4, "-1"),
            "row 3, column signal_size: -1.0 must be a positive",
        ),
        (["--holdout", "run1", "--class", "01"], None, "no trajectory of class '01'"),
        (["--holdout", ""], None, "--holdout '': give one or more run ids, or COLUMN=VALUE"),
        (
            ["--holdout", "run1"],
            lambda rows: rows[2].__setitem__(3, "1e300"),
            "row 3, column signal_color: 1e+300 is outside",
        ),
        (
            ["--holdout", "run1"],
            lambda rows: [r.__setitem__(i, "0.5") for r in rows[1:] for i in (3, 4)],
            "columns signal_color, signal_size: the same value in every run; a covariate law needs a covariate that varies",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_problem(sweep, tmp_path, capsys, extra, edit, match):
    folder, _ = sweep
    cov = folder / "covariates.csv"
    if edit is not None:
        rows = list(csv.reader(cov.open()))
        edit(rows)
        cov = tmp_path / "cov.csv"
        with cov.open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    args = [
        str(folder / "sweep.csv"),
        "--covariates",
        str(cov),
        "--out",
        str(tmp_path / "o"),
    ]
    if not any(a in extra for a in ("--holdout", "--train")):
        args += ["--holdout", "run1"]
    assert main(args + extra) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o" / "prediction.json").exists()


def test_an_output_over_an_input_is_refused_before_any_work(sweep, tmp_path, capsys):
    folder, _ = sweep
    out = tmp_path / "o"
    out.mkdir()
    log = out / "predicted.csv"  # the log lives where a prediction would be written
    log.write_bytes((folder / "sweep.csv").read_bytes())
    args = [
        str(log),
        "--covariates",
        str(folder / "covariates.csv"),
        "--holdout",
        "run1",
        "--out",
        str(out),
    ]
    assert main(args) == 2
    assert f"--out {out / 'predicted.csv'}: would overwrite the input" in capsys.readouterr().err
    assert (
        log.read_bytes() == (folder / "sweep.csv").read_bytes()
        and not (out / "prediction.json").exists()
    )


@pytest.mark.slow  # long end to end: run with -m slow
def test_leave_one_level_out_fits_once_per_level_and_summarises(sweep, tmp_path):
    folder, case = sweep
    assert (
        main(
            [
                str(folder / "sweep.csv"),
                "--covariates",
                str(folder / "covariates.csv"),
                "--leave-out",
                "sep_color",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "leave_out.json").read_text())
    assert doc["column"] == "sep_color" and len(doc["levels"]) == 8
    assert all(len(level["runs"]) == 1 for level in doc["levels"])
    ends = [lv for lv in doc["levels"] if lv["per_run"][0]["interpolation"] is None]
    assert {lv["runs"][0] for lv in ends} == {"run0", "run7"}  # the two ends are extrapolations
    assert doc["means"]["runs_inside"] == 6 and doc["means"]["runs_outside"] == 2
    m = doc["means"]
    assert m["law_inside"] <= 1.5 * case.noise and m["law_outside"] <= 1.5 * case.noise
    assert m["law_inside"] < m["interpolation_inside"] and m["law_outside"] < m["nearest_outside"]
    assert m["interpolation_inside"] < m["mean_inside"] and m["nearest_outside"] < m["mean_outside"]
    gap = doc["differences"][
        "law_minus_interpolation_inside"
    ]  # paired per run, with a bootstrap interval
    assert (
        gap["mean"] == pytest.approx(m["law_inside"] - m["interpolation_inside"])
        and gap["runs"] == 6
    )
    assert gap["ci95"][0] <= gap["mean"] <= gap["ci95"][1] < 0 and gap["law_better"] == 6
    assert doc["differences"]["law_minus_nearest_outside"]["runs"] == 2
    assert doc["model"] == "eq1" and not (tmp_path / "leave_out.png").exists()
    assert doc["differences"]["law_minus_nearest_outside"]["text"].endswith("(2 runs, 2 levels)")
    assert draw_main([str(tmp_path)]) == 0  # leave_out.png, and each level's prediction.png
    assert (tmp_path / "leave_out.png").stat().st_size > 10_000
    assert len(list(tmp_path.glob("*/prediction.png"))) == len(doc["levels"])
    assert (
        tmp_path / f"sep_color={doc['levels'][0]['left_out'].split('=')[1]}" / "prediction.json"
    ).exists()


@pytest.mark.slow  # a pooled eq2 fit end to end, 13 s
def test_eq2_on_a_masking_sweep_recovers_the_shift_and_beats_the_baselines(tmp_path, capsys):
    ps = np.repeat([0.0, 0.25, 0.5, 0.75, 1.0], 2)
    case = sweep_case(np.tile([0.01, 0.04], 5), seed=5, masking=ps, beta=0.6)
    base = [*write_sweep(tmp_path, case, mask_p=ps)]
    assert (
        main(
            [
                *base,
                "--law",
                "eq2",
                "--masked",
                "color",
                "--leave-out",
                "mask_p",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "o" / "leave_out.json").read_text())
    inner = json.loads((tmp_path / "o" / "mask_p=0.5" / "prediction.json").read_text())
    assert inner["law"]["coefficients"]["beta"] == pytest.approx(0.6, rel=0.1)
    m = doc["means"]
    assert m["runs_inside"] + m["runs_outside"] == 10 and m["runs_inside"] >= 2
    assert m["law_inside"] <= 1.5 * case.noise and m["law_inside"] < m["interpolation_inside"]
    assert m["law_outside"] <= 1.5 * case.noise and m["law_outside"] < m["nearest_outside"]
    assert main([*base, "--law", "eq2", "--holdout", "run0", "--out", str(tmp_path / "x")]) == 2
    assert "--masked: eq2 needs the masked concept, one of color, size" in capsys.readouterr().err
    assert (
        main(
            [
                *base,
                "--law",
                "eq2",
                "--masked",
                "color",
                "--shift",
                "seed",
                "--holdout",
                "run0",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "no column 'seed' (--shift)" in capsys.readouterr().err
    assert (
        main(
            [
                *base,
                "--law",
                "eq2+local",
                "--masked",
                "color",
                "--holdout",
                "run4,run5",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )  # the local discrepancy compares runs by covariates and p
    doc = json.loads((tmp_path / "d" / "prediction.json").read_text())
    for r in ("run4", "run5"):
        h = doc["holdout"][r]
        base = "interpolation" if h["baselines"]["interpolation"]["applies"] else "nearest"
        assert (
            h["discrepancy"] == {"how": base, "runs": h["baselines"][base]["runs"]}
            and h["rmse"] <= 1.5 * case.noise
        )


@pytest.mark.slow  # 8 s
def test_memorize_with_an_onset_fits_a_sweep_that_generalizes_first_and_says_so(tmp_path):
    law = TRUE_LAW | {"b_t": 0.6, "t_ref": 1200.0}
    case = sweep_case(
        np.geomspace(0.005, 0.08, 8), seed=4, law=law, order="target-first", onset=300.0
    )
    base = [*write_sweep(tmp_path, case), "--holdout", "run3,run7"]
    assert main([*base, "--law", "memorize+onset", "--out", str(tmp_path / "m")]) == 0
    assert main([*base, "--out", str(tmp_path / "e")]) == 0
    mem, eq1 = (json.loads((tmp_path / d / "prediction.json").read_text()) for d in ("m", "e"))
    assert mem["model"] == "memorize" and mem["law_name"] == "memorize+onset"
    assert eq1["law_name"] == "eq1" and mem["law"]["coefficients"]["b_t"] == pytest.approx(
        0.6, rel=0.1
    )
    assert (
        mem["law"]["coefficients"]["t_on"] == pytest.approx(300.0, rel=0.1)
        and "onset t_on = " in mem["law"]["text"]
    )
    assert all(p["parameters"]["order"] == "target-first" for p in mem["holdout"].values())
    for run in ("run3", "run7"):
        assert mem["holdout"][run]["rmse"] <= 1.5 * case.noise < eq1["holdout"][run]["rmse"]
    assert draw_main([str(tmp_path / "m")]) == 0
    assert (tmp_path / "m" / "prediction.png").stat().st_size > 10_000


@pytest.mark.slow  # 8 s
def test_the_seed_floor_compares_each_held_out_seed_with_the_others_at_its_covariates(tmp_path):
    case = sweep_case(np.repeat(np.geomspace(0.005, 0.08, 4), 2), seed=6, run_effect=0.3)
    files = write_sweep(tmp_path, case, level=[i // 2 for i in range(8)])
    assert main([*files, "--leave-out", "level", "--out", str(tmp_path / "o")]) == 0
    inner = json.loads((tmp_path / "o" / "level=1" / "prediction.json").read_text())
    a, b = (
        case.trajectories[2],
        case.trajectories[3],
    )  # the two seeds of level 1: each one's floor is the other
    assert inner["holdout"]["run2"]["seed_floor"]["runs"] == ["run3"]
    expected = np.sqrt(np.mean((a.z - b.z) ** 2))
    assert inner["holdout"]["run2"]["seed_floor"]["rmse"] == pytest.approx(expected, rel=1e-9)
    assert inner["holdout"]["run3"]["seed_floor"]["rmse"] == pytest.approx(expected, rel=1e-9)
    doc = json.loads((tmp_path / "o" / "leave_out.json").read_text())
    assert (
        doc["levels"][1]["seed_floor"] == pytest.approx(expected)
        and doc["means"]["seed_floor_inside"] > 0
    )
    single = tmp_path / "s"
    assert main([*files, "--holdout", "run2", "--out", str(single)]) == 0
    assert (
        json.loads((single / "prediction.json").read_text())["holdout"]["run2"]["seed_floor"]
        is None
    )


def _split_sweep(folder, tmp_path, at=4):
    """The sweep's log and covariates table cut in two files each, as two sweeps of one design."""
    trajs = read_csv(folder / "sweep.csv")
    write_csv(tmp_path / "a.csv", trajs[:at])
    write_csv(tmp_path / "b.csv", trajs[at:])
    header, *rows = list(csv.reader((folder / "covariates.csv").open()))
    for name, part in (("ca.csv", rows[:at]), ("cb.csv", rows[at:])):
        with (tmp_path / name).open("w", newline="") as fh:
            csv.writer(fh).writerows([header, *part])
    return [str(tmp_path / n) for n in ("a.csv", "b.csv", "ca.csv", "cb.csv")]


def test_several_logs_and_tables_pool_into_the_fit_of_their_union(sweep, tmp_path):
    folder, _ = sweep
    a, b, ca, cb = _split_sweep(folder, tmp_path)
    same = ["--holdout", "run3,run7", "--law", "memorize"]
    assert (
        main(
            [
                str(folder / "sweep.csv"),
                "--covariates",
                str(folder / "covariates.csv"),
                *same,
                "--out",
                str(tmp_path / "one"),
            ]
        )
        == 0
    )
    assert main([a, b, "--covariates", ca, cb, *same, "--out", str(tmp_path / "two")]) == 0
    one, two = (json.loads((tmp_path / d / "prediction.json").read_text()) for d in ("one", "two"))
    assert two["log"] == [a, b] and two["covariates"] == [ca, cb]
    assert two["law"]["coefficients"] == one["law"]["coefficients"]
    assert {r: h["rmse"] for r, h in two["holdout"].items()} == {
        r: h["rmse"] for r, h in one["holdout"].items()
    }
    assert (tmp_path / "one" / "predicted.csv").read_text() == (
        tmp_path / "two" / "predicted.csv"
    ).read_text()


@pytest.mark.parametrize(
    "which, match",
    [
        ("same log twice", "run 'run0' has several trajectories of class 11 (naive), twice in"),
        ("same table twice", "run 'run0' is also in"),
        ("no --out", "--out: 2 logs are pooled"),
        ("other concepts", "concepts color, shape differ from"),
        ("a table short", "no row for run 'run4' of"),
    ],
)
def test_pooling_bad_input_exits_2_naming_the_files(sweep, tmp_path, capsys, which, match):
    folder, _ = sweep
    a, b, ca, cb = _split_sweep(folder, tmp_path)
    logs, tables, out = [a, b], [ca, cb], ["--out", str(tmp_path / "o")]
    if which == "same log twice":
        logs = [a, a]
    elif which == "same table twice":
        tables = [ca, ca, cb]
    elif which == "no --out":
        out = []
    elif which == "other concepts":
        write_csv(
            tmp_path / "b.csv",
            [dataclasses.replace(t, concepts=("color", "shape")) for t in read_csv(b)],
        )
    else:
        tables = [ca]
    assert main([*logs, "--covariates", *tables, "--holdout", "run1", *out]) == 2
    err = capsys.readouterr().err
    assert match in err and (
        "no --out" in which or "a.csv" in err or "b.csv" in err or "ca.csv" in err
    )


@pytest.mark.slow  # 9 s
def test_compete_fits_a_lead_exponent_and_draws_one_speed_curve_per_concept(tmp_path):
    law = TRUE_LAW | {"b_t": 0.6, "t_ref": 1200.0}
    case = sweep_case(
        np.geomspace(0.005, 0.08, 8),
        seed=8,
        law=law,
        order="target-first",
        onset=300.0,
        compete=1.2,
    )
    base = [
        *write_sweep(tmp_path, case, half=[i % 2 for i in range(8)]),
        "--law",
        "memorize+onset+compete",
    ]
    assert main([*base, "--holdout", "run3,run7", "--out", str(tmp_path / "c")]) == 0
    doc = json.loads((tmp_path / "c" / "prediction.json").read_text())
    assert (
        doc["law"]["coefficients"]["c_lam"] == pytest.approx(1.2, rel=0.1)
        and "lead exponent c_lam = " in doc["law"]["text"]
    )
    assert all(h["rmse"] <= 1.5 * case.noise for h in doc["holdout"].values())
    assert draw_main([str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "prediction.png").stat().st_size > 10_000
    assert main([*base, "--leave-out", "half", "--out", str(tmp_path / "l")]) == 0
    summary = json.loads((tmp_path / "l" / "leave_out.json").read_text())
    assert summary["compete"] is True and all(
        len(level["runs"]) == 4 for level in summary["levels"]
    )
    m = summary[
        "means"
    ]  # the law refitted to the 4 held-out runs themselves: its ceiling, at the noise here
    assert (
        m["ceiling_inside"] <= min(1.2 * case.noise, m["law_inside"] + 1e-3)
        and m["ceiling_outside"] <= 1.2 * case.noise
    )
    assert main([*base, "--holdout", "run3,run7", "--out", str(tmp_path / "two")]) == 0
    assert all(
        h["ceiling"] is None
        for h in json.loads((tmp_path / "two" / "prediction.json").read_text())["holdout"].values()
    )


@pytest.mark.slow  # 11 s
def test_train_per_level_draws_scarce_training_sets_and_averages_over_them(tmp_path, capsys):
    case = sweep_case(
        np.repeat(np.geomspace(0.005, 0.08, 5), 3), seed=6, run_effect=0.2
    )  # 5 levels x 3 seeds
    files = write_sweep(tmp_path, case, level=[i // 3 for i in range(15)])
    base = [*files, "--leave-out", "level"]
    assert (
        main([*base, "--train-per-level", "1", "--draws", "3", "--out", str(tmp_path / "a")]) == 0
    )
    doc = json.loads((tmp_path / "a" / "leave_out.json").read_text())
    assert (
        doc["train_per_level"] == 1
        and doc["draws"] == 3
        and [len(lv["runs"]) for lv in doc["levels"]] == [3] * 5
    )
    assert not list((tmp_path / "a").glob("level=*"))  # no per-split folders
    m = doc[
        "means"
    ]  # one seed a level: interpolation follows single noisy runs, the law pools all four
    assert m["law_inside"] < m["interpolation_inside"] and m["law_outside"] < m["nearest_outside"]
    assert (
        main([*base, "--train-per-level", "1", "--draws", "3", "--out", str(tmp_path / "b")]) == 0
    )
    assert (
        json.loads((tmp_path / "b" / "leave_out.json").read_text())["levels"] == doc["levels"]
    )  # seeded draws
    capsys.readouterr()
    assert (
        main([*files, "--holdout", "run0", "--train-per-level", "1", "--out", str(tmp_path / "x")])
        == 2
    )
    assert "only with --leave-out COLUMN" in capsys.readouterr().err


def test_coupled_fits_a_switch_thrown_by_the_other_concept_and_draws_it(tmp_path):
    case = sweep_case(
        np.geomspace(0.005, 0.08, 8), seed=1, order="target-first", gate="state", onset=300.0
    )
    base = [*write_sweep(tmp_path, case), "--law", "coupled+onset", "--holdout", "run2,run5"]
    assert main([*base, "--out", str(tmp_path / "c")]) == 0
    doc = json.loads((tmp_path / "c" / "prediction.json").read_text())
    c = doc["law"]["coefficients"]
    assert {"kappa", "theta"} <= set(c) and not {"t_ref", "b_t", "k"} & set(c)
    assert (
        c["theta"] == pytest.approx(0.75, rel=0.1)
        and "switch when the others' progress passes theta" in doc["law"]["text"]
    )
    assert all(
        h["rmse"] <= 1.5 * case.noise and h["parameters"]["gate"] == "state"
        for h in doc["holdout"].values()
    )
    assert doc["law"]["discrepancy"] is None and doc["law"]["curves"]["switch"]["gate"] == "state"
    assert draw_main([str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "prediction.png").stat().st_size > 10_000


def prediction(sweep, out, *args) -> dict:
    """Run the CLI on the module's sweep with ``args``; its prediction.json."""
    folder, _ = sweep
    assert (
        main(
            [
                str(folder / "sweep.csv"),
                "--covariates",
                str(folder / "covariates.csv"),
                *args,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return json.loads((out / "prediction.json").read_text())


@pytest.mark.slow  # long end to end: run with -m slow
def test_discrepancy_is_written_with_the_law_and_recorded_in_the_leave_out_summary(sweep, tmp_path):
    folder, _ = sweep
    files = [str(folder / "sweep.csv"), "--covariates", str(folder / "covariates.csv")]
    doc = prediction(sweep, tmp_path / "d", "--law", "eq1+mean", "--holdout", "run3,run6")
    delta = doc["law"]["discrepancy"]
    assert set(delta["delta"]) == set(delta["rms"]) == {"color", "size"}
    assert len(delta["steps"]) == len(delta["delta"]["color"]) and all(
        v < 0.03 for v in delta["rms"].values()
    )  # none built in
    before = prediction(sweep, tmp_path / "p", "--holdout", "run3,run6")
    assert doc["law"]["coefficients"] == before["law"]["coefficients"]
    assert any(
        doc["holdout"][r]["rmse"] != before["holdout"][r]["rmse"] for r in doc["holdout"]
    )  # δ moved the paths
    assert (
        main(
            [
                *files,
                "--law",
                "eq1+mean",
                "--leave-out",
                "sep_color",
                "--out",
                str(tmp_path / "l"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "l" / "leave_out.json").read_text())["discrepancy"] == "mean"


def test_local_discrepancy_names_where_each_held_out_run_took_it_from(sweep, tmp_path):
    doc = prediction(sweep, tmp_path / "d", "--law", "eq1+local", "--holdout", "run3,run7")
    delta = doc["law"]["discrepancy"]
    assert (
        delta["kind"] == "local"
        and len(delta["points"]) == 6
        and {"color", "size"} == set(delta["points"][0]["rms"])
    )
    inside, outside = doc["holdout"]["run3"]["discrepancy"], doc["holdout"]["run7"]["discrepancy"]
    assert inside == {
        "how": "interpolation",
        "runs": ["run2", "run4"],
    }  # the runs the interpolation baseline uses
    assert doc["holdout"]["run3"]["baselines"]["interpolation"]["runs"] == ["run2", "run4"]
    assert outside == {"how": "nearest", "runs": ["run6"]} and doc["holdout"]["run7"]["baselines"][
        "nearest"
    ]["runs"] == ["run6"]
    before = prediction(sweep, tmp_path / "m", "--law", "eq1+mean", "--holdout", "run3,run7")
    assert (
        before["holdout"]["run3"]["discrepancy"]["how"] == "mean"
        and before["law"]["discrepancy"]["kind"] == "mean"
    )
    assert doc["law"]["coefficients"] == before["law"]["coefficients"]
    assert doc["holdout"]["run3"]["rmse"] != before["holdout"]["run3"]["rmse"]
    assert draw_main([str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "prediction.png").stat().st_size > 10_000


def test_the_law_is_compared_with_a_baseline_at_the_points_the_baseline_predicts(tmp_path):
    # every training run is first located at the 5th checkpoint; the held-out run from the first: the baselines
    # have no value at its first 4 points, so the paired comparison leaves those out of the law's RMSE too
    case = sweep_case(np.geomspace(0.005, 0.08, 8), seed=2)
    trajs = []
    for t in case.trajectories:
        z = t.z.copy()
        if t.run != "run3":
            z[:4] = np.nan
        trajs.append(Trajectory(t.step, z, t.concepts, t.label, t.protocol, t.seed, t.run))
    files = write_sweep(tmp_path, dataclasses.replace(case, trajectories=trajs))
    assert main([*files, "--holdout", "run3", "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "prediction.json").read_text())
    path = next(t for t in read_csv(tmp_path / "o" / "predicted.csv") if t.run == "run3").z
    err = (path - trajs[3].z) ** 2
    h = doc["holdout"]["run3"]
    assert h["rmse"] == pytest.approx(np.sqrt(err.mean()), rel=1e-6)
    for base in ("interpolation", "nearest"):
        assert h["baselines"][base]["law_rmse"] == pytest.approx(np.sqrt(err[4:].mean()), rel=1e-6)
    row = split_summary(doc)["per_run"][0]
    assert row["law_at_interpolation"] == h["baselines"]["interpolation"]["law_rmse"] != row["law"]
    gap = differences([{"per_run": [row]}])["law_minus_interpolation_inside"]
    assert gap["mean"] == pytest.approx(row["law_at_interpolation"] - row["interpolation"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--law", "memorize+gp"],
            "--law memorize+gp: unknown part 'gp'; valid: eq1, memorize, coupled, eq2",
        ),
        (["--law", "onset+eq1"], "begin with exactly one base model (eq1, memorize, coupled, eq2)"),
        (["--law", "eq1+mean+local"], "at most one discrepancy (mean or local)"),
        (["--law", "eq1+gp"], "unknown part 'gp'; valid: eq1, memorize, coupled, eq2"),
        (["--law", "eq1", "--masked", "color"], "--masked: only with --law eq2 (the law is eq1)"),
    ],
)
def test_a_law_that_does_not_parse_exits_2_naming_what_is_valid(
    sweep, tmp_path, capsys, argv, message
):
    folder, _ = sweep
    base = [
        str(folder / "sweep.csv"),
        "--covariates",
        str(folder / "covariates.csv"),
        "--holdout",
        "run1",
    ]
    assert main([*base, *argv, "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_list_laws_names_every_part_without_other_arguments(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--list-laws"])
    listing = capsys.readouterr().out
    assert stop.value.code == 0 and listing.startswith("a law: BASE")
    for part in ("eq1", "memorize", "coupled", "eq2", "onset", "compete", "mean", "local"):
        assert f"\n  {part} " in listing


def test_the_old_law_flags_are_gone(sweep, tmp_path, capsys):
    """--model/--onset/--compete/--discrepancy spelled a law before --law; argparse now refuses them."""
    folder, _ = sweep
    files = [str(folder / "sweep.csv"), "--covariates", str(folder / "covariates.csv")]
    with pytest.raises(SystemExit) as stop:
        main([*files, "--holdout", "run1", "--onset", "--out", str(tmp_path / "o")])
    assert stop.value.code == 2 and "unrecognized arguments: --onset" in capsys.readouterr().err
