"""``python -m theory.simulate``: presets, the single-model CLI against independent integrations, bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

import reference
from reference import signed_area
from theory.simulate import main
from core.trajectory import read_csv


@pytest.fixture(scope="module")
def presets(tmp_path_factory):
    out = tmp_path_factory.mktemp("presets")
    assert main(["--out", str(out)]) == 0
    return out


def by_run(trajs, label):
    return {t.run: t for t in trajs if t.label == label}


def test_default_run_writes_every_preset(presets):
    for name, n_traj in [("fig5", 16), ("fig9b", 5), ("notebook", 15)]:
        folder = presets / name
        trajs = read_csv(folder / "trajectories.csv")
        assert len(trajs) == n_traj
        assert all(t.protocol == "sim" for t in trajs)
        np.testing.assert_array_equal(trajs[0].step, np.linspace(0, 25, 200))
        config = json.loads((folder / "config.json").read_text())
        assert config["preset"] == name and len(config["runs"]) == n_traj
        png = (folder / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_fig5_turns_clockwise_when_size_is_stronger(presets):
    trajs = read_csv(presets / "fig5" / "trajectories.csv")
    eleven, zero = by_run(trajs, "11"), by_run(trajs, "00")
    for run, tr in eleven.items():
        a = float(run.split("=")[1])
        area = signed_area(tr.z)
        assert (area < 0) if a > 1 else (area > 0), (run, area)
        weak = 0 if a > 1 else 1  # the weaker concept is first memorized toward 0, then learned
        assert tr.z[:, weak].min() < 0.45 and tr.z[-1, weak] > 0.9
    for tr in zero.values():
        assert np.all(np.diff(tr.z, axis=0) <= 1e-12)  # class 00 heads straight down to (0, 0)


def test_fig9b_targets_shift_with_masking(presets):
    trajs = by_run(read_csv(presets / "fig9b" / "trajectories.csv"), "11")
    finals = [trajs[f"p={p:g}"].z[-1] for p in (0, 0.25, 0.5, 0.75, 1)]
    np.testing.assert_allclose([f[0] for f in finals], [1, 0.75, 0.5, 0.25, 0], atol=0.02)
    np.testing.assert_allclose([f[1] for f in finals], 1, atol=0.01)


def test_notebook_preset_matches_the_authors_setting(presets):
    trajs = by_run(read_csv(presets / "notebook" / "trajectories.csv"), "11")
    assert len(trajs) == 15
    a2 = trajs["a=2.14286"]  # linspace(1, 5, 15)[4]
    ref = reference.solve(
        reference.notebook_rhs(np.linspace(1, 5, 15)[4]), (0.5, 0.5), np.linspace(0, 25, 200)
    )
    np.testing.assert_allclose(a2.z, ref, atol=1e-6)


def test_single_model_eq1_sweep_matches_independent_integration(tmp_path):
    out = tmp_path / "eq1"
    code = main(
        [
            "--model",
            "eq1",
            "--param",
            "lam=0.5,2",
            "--param",
            "t_switch_1=7",
            "--param",
            "k=1.5",
            "--sweep",
            "z_bias_1=0,0.3,0.6",
            "--t-end",
            "30",
            "--points",
            "301",
            "--class",
            "11",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    trajs = read_csv(out / "trajectories.csv")
    assert [t.run for t in trajs] == ["z_bias_1=0", "z_bias_1=0.3", "z_bias_1=0.6"]
    t = np.linspace(0, 30, 301)
    for tr, zb in zip(trajs, (0.0, 0.3, 0.6)):
        np.testing.assert_array_equal(tr.step, t)
        ref = reference.solve(
            reference.eq1_rhs((0.5, 2), (7, 0), (1.5, 1.5), (zb, 1), (1, 1)), (0.5, 0.5), t
        )
        np.testing.assert_allclose(tr.z, ref, atol=1e-6)
    assert (out / "eq1.png").exists()
    config = json.loads((out / "config.json").read_text())
    assert config["runs"][1]["params"]["z_bias"] == [0.3, 1.0]
    assert (
        config["stamp"]["command"].startswith("python -m theory.simulate")
        and config["stamp"]["sympy"]
    )


@pytest.mark.parametrize("method", ["dopri", "stacked", "loop", "exact", "auto"])
def test_single_model_methods_agree_with_reference(tmp_path, method):
    assert (
        main(
            [
                "--model",
                "notebook",
                "--sweep",
                "a=0.5,3",
                "--method",
                method,
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    t = np.linspace(0, 25, 200)
    for tr, a in zip(read_csv(tmp_path / "trajectories.csv"), (0.5, 3.0)):
        np.testing.assert_allclose(
            tr.z, reference.solve(reference.notebook_rhs(a), (0.5, 0.5), t), atol=1e-6
        )


def test_eq2_product_sweep_and_class_label(tmp_path):
    assert (
        main(
            [
                "--model",
                "eq2",
                "--sweep",
                "p=0,1",
                "--sweep",
                "beta=0.5,1",
                "--class",
                "011",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    trajs = read_csv(tmp_path / "trajectories.csv")
    assert [t.run for t in trajs] == ["p=0,beta=0.5", "p=0,beta=1", "p=1,beta=0.5", "p=1,beta=1"]
    assert {t.label for t in trajs} == {"011"} and trajs[0].concepts == ("color", "shape")
    t = np.linspace(0, 25, 200)
    ref = reference.solve(
        reference.eq1_rhs((1, 1), (6, 0), (2, 2), (0, 1), (0.5, 1)), (0.5, 0.5), t
    )
    np.testing.assert_allclose(trajs[2].z, ref, atol=1e-6)  # p = 1, beta = 0.5: target (0.5, 1)


def test_coupled_model_matches_its_hand_written_ode_and_names_its_gates(tmp_path):
    assert main(["--model", "coupled", "--sweep", "kappa=5,40", "--out", str(tmp_path)]) == 0
    t = np.linspace(0, 25, 200)
    for tr, kappa in zip(read_csv(tmp_path / "trajectories.csv"), (5.0, 40.0)):
        ref = reference.solve(
            reference.coupled_rhs((1, 0.4), (1, 1), (0, 1), kappa, 0.75), (0.2, 0.2), t
        )
        np.testing.assert_allclose(tr.z, ref, atol=1e-6)
        assert (
            tr.z[:, 0].max() > 0.5
        )  # toward 11 first, then 01's color: with size learned (P = 1) color rests at
        assert tr.z[-1, 0] == pytest.approx(
            1 - 1 / (1 + np.exp(-kappa * (1 - 0.75))), abs=1e-3
        )  # 1 - G, G = σ(κ(1-θ))
    config = json.loads((tmp_path / "config.json").read_text())
    assert set(config["held_gates"]) == {"G_1", "G_2"} and "kappa" in config["held_gates"]["G_1"]


def test_more_concepts_and_custom_energy(tmp_path):
    assert (
        main(
            [
                "--model",
                "eq1",
                "--concepts",
                "color,size,bg",
                "--param",
                "z_bias=0,1,1",
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    (tr,) = read_csv(tmp_path / "a" / "trajectories.csv")
    assert tr.concepts == ("color", "size", "bg")
    assert (
        main(
            [
                "--energy",
                "lam/2*(z1 - sigmoid(t - 5))**2 + (z2 - 1)**2/2",
                "--sweep",
                "lam=1,2",
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    trajs = read_csv(tmp_path / "b" / "trajectories.csv")
    assert [t.run for t in trajs] == ["lam=1", "lam=2"] and trajs[0].concepts == ("color", "size")


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--model", "eq1", "--param", "lam=-1"], "lam=-1 is invalid; valid range is (0, inf)"),
        (
            ["--model", "eq1", "--param", "alpha=1"],
            "eq1 has no parameter 'alpha'; valid: lam, t_switch, k, z_bias, z_target, z0",
        ),
        (["--model", "eq1", "--param", "lam=1,2,3"], "needs 1 or 2 values"),
        (["--model", "eq1", "--param", "lam=abc"], "values must be numbers"),
        (["--model", "eq1", "--param", "lam"], "expected NAME=VALUE"),
        (["--model", "eq1", "--param", "t_switch_3=1"], "no parameter 't_switch_3'"),
        (["--model", "eq1", "--sweep", "k=1,nan"], "finite"),
        (["--model", "eq2", "--param", "p=2"], "p=2 is invalid; valid range is [0, 1]"),
        (["--model", "eq2", "--sweep", "beta=1,3"], "beta * p = 1.5 > 1"),
        (["--model", "eq1", "--points", "1"], "need at least 2 output points"),
        (["--model", "eq1", "--t-end", "-3"], "must be a finite number > 0"),
        (["--param", "lam=1"], "need --model or --energy"),
        (["--model", "notebook", "--concepts", "a,b,c"], "exactly 2 concepts"),
        (["--model", "eq1", "--concepts", "a,a"], "distinct"),
        (["--energy", "(z1 - q)**2"], "no value was given"),
        (
            ["--model", "coupled", "--method", "exact"],
            "--method exact: coupled: the flow of color is not linear",
        ),
    ],
)
def test_bad_input_exits_2_with_a_one_line_message(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--model", "eq9"], "invalid choice: 'eq9'"),
        (["--preset", "fig99"], "invalid choice: 'fig99'"),
        (["--points", "x"], "invalid int value: 'x'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--model", "eq1", "--preset", "fig5"], "not allowed with argument"),
    ],
)
def test_argparse_errors_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_help_teaches(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for needle in (
        "fig5",
        "fig9b",
        "--sweep",
        "t_switch",
        "z_bias",
        "[0, 1]",
        "eq2-split",
        "NAME_i",
    ):
        assert needle in text


def test_module_entry_point_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "theory.simulate", "--preset", "fig9b", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {tmp_path / 'trajectories.csv'}" in proc.stdout


# --- the swing-by presets and the SIM models (issue 18) -----------------------------------------------


def test_swingby_presets_show_multiple_descent_with_a_monotone_training_loss(presets):
    from theory.models.identity_mapping import rises

    for name, s in (("swingby3", 3), ("swingby4", 4)):
        folder = presets / name
        trajs = {t.label: t for t in read_csv(folder / "trajectories.csv")}
        probe = "1" * s
        assert set(trajs) == {probe} | {
            "".join("1" if q == p else "0" for q in range(s)) for p in range(s)
        }
        x_hat = trajs[probe]
        ood = np.array(x_hat.extra["ood_loss"], dtype=float)
        train = np.array(x_hat.extra["train_loss"], dtype=float)
        assert rises(ood) >= 2, name  # counted again from the log, not taken from config.json
        assert np.all(np.diff(train) <= 1e-12)
        raw = np.array([x_hat.extra[f"raw_c{p + 1}"] for p in range(s)], dtype=float).T
        np.testing.assert_allclose(x_hat.z, np.clip(raw, 0, 1), atol=1e-9)
        assert raw.max() > 1.0  # the swing overshoots; the log's z is clipped, raw_ keeps it
        np.testing.assert_allclose(x_hat.z[-1], 1, atol=1e-3)  # every concept learned at the end
        config = json.loads((folder / "config.json").read_text())
        assert config["runs"][0]["ood_rises"] == rises(ood) and config["runs"][0]["train_monotone"]
        assert "seed" in config["seed_choice"]


def test_sim_models_take_params_and_sweeps(tmp_path):
    assert (
        main(
            [
                "--model",
                "sim2",
                "--param",
                "mu=1,2",
                "--param",
                "d=4",
                "--sweep",
                "seed=0,1",
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    trajs = read_csv(tmp_path / "a" / "trajectories.csv")
    assert sorted({t.run for t in trajs}) == ["seed=0", "seed=1"] and {t.label for t in trajs} == {
        "11",
        "10",
        "01",
    }
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert [r["d"] for r in config["runs"]] == [4, 4] and config["runs"][0][
        "signal"
    ] == pytest.approx([0.5025, 2.0025])
    assert (
        main(
            [
                "--model",
                "sim1",
                "--param",
                "mu=1,1.5,2.2",
                "--param",
                "scale=0",
                "--points",
                "50",
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    one = {t.label: t for t in read_csv(tmp_path / "b" / "trajectories.csv")}
    a = (
        np.array([1, 1.5**2, 2.2**2]) / 3 + 0.05**2
    )  # from W(0) = 0: coordinate k is 1 - exp(-a_k t), exactly
    np.testing.assert_allclose(one["111"].z, 1 - np.exp(-np.outer(one["111"].step, a)), atol=1e-9)


def test_sim_conventions_are_params_and_land_in_the_config(tmp_path):
    argv = [
        "--model",
        "sim2",
        "--param",
        "mu=1,1.7,2.25",
        "--param",
        "sigma=0.5,0.25,0.25",
        "--param",
        "seed=2",
        "--param",
        "start=uniform-positive",
        "--t-end",
        "100",
        "--points",
        "1001",
    ]
    assert main([*argv, "--param", "signal=a2", "--out", str(tmp_path / "a2")]) == 0
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    squared, plain = (
        json.loads((tmp_path / k / "config.json").read_text())["runs"][0] for k in ("a2", "a")
    )
    assert (squared["rates"], squared["start"], plain["rates"]) == ("a2", "uniform-positive", "a")
    assert (squared["ood_rises"], plain["ood_rises"]) == (
        2,
        1,
    )  # triple descent needs the squared signal here


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--model", "sim2", "--param", "nu=1"], "no parameter 'nu'"),
        (["--model", "sim2", "--sweep", "mu=1,2"], "mu is a vector"),
        (["--model", "sim2", "--param", "d=2"], "at least the number of concepts (3)"),
        (["--model", "sim2", "--param", "seed=1.5"], "a seed is an integer"),
        (["--model", "sim2", "--param", "scale=-1"], "scale=-1.0: the initial scale"),
        (["--model", "sim2", "--param", "mu=1,-2"], "positive, finite cluster norm"),
        (["--model", "sim1", "--concepts", "a,b"], "names its concepts c1, c2"),
        (["--model", "sim2", "--param", "signal=a3"], "--param signal=a3: valid: a, a2"),
        (
            ["--model", "sim2", "--param", "start=positive"],
            "--param start=positive: valid: gaussian, uniform-positive",
        ),
        (
            ["--model", "sim2", "--sweep", "signal=1,2"],
            "signal takes a word: --param signal=WORD, not a sweep",
        ),
    ],
)
def test_bad_sim_parameters_exit_2(tmp_path, capsys, argv, match):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "trajectories.csv").exists()


@pytest.mark.slow  # long end to end: run with -m slow
def test_the_main_jobs_figures_have_no_text_over_text_or_past_the_edge(tmp_path, monkeypatch):
    """Corner labels, ticks, titles, legends and colorbars: no two text boxes intersect, none leaves the figure."""
    from core import plot

    drawn, save = [], plot.save

    def keep(fig, path, **kwargs):
        drawn.append((path.name, fig))
        return save(fig, path, **kwargs)

    monkeypatch.setattr(plot, "save", keep)
    assert main(["--out", str(tmp_path)]) == 0
    assert {name for name, _ in drawn} == {
        "fig5.png",
        "fig9b.png",
        "notebook.png",
        "swingby3.png",
        "swingby4.png",
        *(f"swingby-fig{f}.png" for f in (5, 8, 9, 10)),
    }
    for name, fig in drawn:
        assert plot.text_overlaps(fig) == [], name


def test_the_overlap_check_finds_overlaps():
    from core import plot

    fig, ax = plot.subplots(figsize=(3, 3))
    ax.text(0.5, 0.5, "one label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "another label", transform=ax.transAxes)
    ax.set_title("a title far too long for a figure three inches wide, running off its edge")
    found = plot.text_overlaps(fig)
    assert ("one label", "another label") in found
    assert any(b == "<edge>" and a.startswith("a title far too long") for a, b in found)


def test_a_new_energy_without_out_never_replaces_the_last_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--energy", "(z1 - 0.5)**2", "--points", "20"]) == 0
    assert main(["--energy", "(z1 - 0.7)**2", "--points", "20"]) == 0
    folders = sorted(p.name for p in (tmp_path / "runs" / "theory").iterdir())
    assert len(folders) == 2 and all(f.startswith("custom-") for f in folders)
    assert main(["--energy", "(z1 - 0.5)**2", "--points", "20"]) == 0  # the same energy: its folder
    assert len(list((tmp_path / "runs" / "theory").iterdir())) == 2
