"""Hidden-capability protocols on a smoke run: identities with naive prompting, valid rows, idempotent reruns."""

import dataclasses
from pathlib import Path
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from empirical.training import checkpoint, evaluate, protocols, runlog  # noqa: E402
from empirical.images.dgp import DataConfig  # noqa: E402
from empirical.training.config import make_config  # noqa: E402
from empirical.elicitation.finished_run import chosen_steps, load_run, run_protocols  # noqa: E402
from empirical.elicit import main  # noqa: E402
from empirical.training.protocols import elicit_step  # noqa: E402
from empirical.probing.reader import load as load_probe  # noqa: E402
from empirical.training.loop import train  # noqa: E402
from core.trajectory import read_csv  # noqa: E402


@pytest.fixture(scope="module")
def run(smoke_run):
    return smoke_run


def naive_at(run, step, label="11"):
    t = next(
        t for t in read_csv(run / "trajectories.csv") if t.protocol == "naive" and t.label == label
    )
    i = t.step.tolist().index(step)
    return t.z[i], t.accuracy[i]


def step_result(run, step, protocol, grid=None, final=None):
    """(z, accuracy, setting) of class 11 under a protocol, with the run's grid replaced by ``grid``."""
    cfg, doc = load_run(run)
    if grid:
        cfg = dataclasses.replace(cfg, **grid)
    probe, _, _ = load_probe(doc["probe"]["path"])
    model = checkpoint.load_model(run, step, cfg)
    reading, _ = elicit_step(model, probe, cfg, step, protocol, ["11"], final=final)["11"]
    return np.array(reading.z), reading.accuracy, reading.setting


@pytest.mark.parametrize(
    "protocol, grid",
    [
        ("overprompt", {"grid_overprompt": (0.0,)}),
        ("intervention", {"grid_intervention": (0.0, 0.0)}),
        ("cfg", {"grid_cfg": (1.0,)}),
    ],
)
def test_null_settings_equal_naive(run, protocol, grid):
    """Reach 0, alpha = beta = 0 and guidance 1 ask exactly what naive prompting asks, and the chosen setting is
    scored on the naive evaluation's own noise."""
    step = checkpoint.saved_steps(run)[1]
    z, acc, setting = step_result(run, step, protocol, grid)
    z0, acc0 = naive_at(run, step)
    tol = (
        1e-4 if protocol == "cfg" else 1e-6
    )  # guidance 1 takes another (batched) path through the net
    np.testing.assert_allclose(z, z0, atol=tol)
    assert acc == pytest.approx(acc0, abs=tol)


def test_patching_the_final_checkpoint_into_itself_is_naive(run):
    cfg, _ = load_run(run)
    last = checkpoint.saved_steps(run)[-1]
    final = checkpoint.load_model(run, last, cfg)
    z, acc, setting = step_result(run, last, "patch", final=final)
    z0, acc0 = naive_at(run, last)
    np.testing.assert_allclose(z, z0, atol=1e-6)
    assert setting == "final"


def test_patch_copies_only_the_conditioning_mlps(run):
    cfg, _ = load_run(run)
    first, last = checkpoint.saved_steps(run)[0], checkpoint.saved_steps(run)[-1]
    a, b = checkpoint.load_model(run, first, cfg), checkpoint.load_model(run, last, cfg)
    p = protocols.patched(a, b)
    for name, tensor in p.state_dict().items():
        donor = b if ".cond." in name else a
        assert torch.equal(tensor, donor.state_dict()[name]), name


def test_overprompt_reaches_toward_the_renderable_limit():
    cfg = make_config(
        "tiny"
    ).data  # Δcolor 0.3, Δsize 0.4: class 11 is (0.35, 0.35, 0.65), radius 0.25
    naive = protocols.class_prompts(cfg)["11"]
    np.testing.assert_allclose(protocols.overprompt(cfg, "11", 0.0), naive)
    half, full = protocols.overprompt(cfg, "11", 0.5), protocols.overprompt(cfg, "11", 1.0)
    np.testing.assert_allclose(
        full[4:8], [0.0, 0.35, 1.0, protocols.LIMITS["size"][0]], atol=1e-6
    )  # green stays
    np.testing.assert_allclose(half[4:8], (naive[4:8] + full[4:8]) / 2, atol=1e-6)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        protocols.overprompt(cfg, "11", 1.5)


@settings(max_examples=40, deadline=None)
@given(
    color=st.floats(0.01, 0.8),
    size=st.floats(0.01, 0.4),
    reach=st.floats(0, 1),
    label=st.sampled_from(["00", "01", "10", "11"]),
)
def test_every_overprompt_is_renderable(color, size, reach, label):
    """No setting asks for a render that cannot exist: colors in [0, 1], radius in the data's range."""
    data = DataConfig(("color", "size"), {"color": color, "size": size})
    h = protocols.overprompt(data, label, reach)
    assert (
        np.all((h[4:7] >= 0) & (h[4:7] <= 1))
        and protocols.LIMITS["size"][0] <= h[7] <= protocols.LIMITS["size"][1]
    )


def test_the_setting_is_never_scored_on_the_draw_that_chose_it(run, monkeypatch):
    """Every setting is tried on the SELECT stream; only the chosen one is drawn again, from the SCORE stream (the
    naive evaluation's), with the scoring sample size."""
    cfg, _ = load_run(run)
    cfg = dataclasses.replace(
        cfg, grid_overprompt=(0.25, 0.5, 1.0), select_samples=3, samples_held_out=5
    )
    draws = []
    real = protocols.generate

    def spy(vdm, prompts, resolution, *, generator, **kw):
        draws.append((generator.initial_seed(), len(prompts)))
        return real(vdm, prompts, resolution, generator=generator, **kw)

    monkeypatch.setattr(protocols, "generate", spy)
    probe, _, _ = load_probe(load_run(run)[1]["probe"]["path"])
    step = checkpoint.saved_steps(run)[-1]
    reading, point = elicit_step(
        checkpoint.load_model(run, step, cfg), probe, cfg, step, "overprompt", ["11"]
    )["11"]
    select = evaluate.generator_for(
        cfg.seed, step, "11", torch.device("cpu"), stream=evaluate.SELECT
    ).initial_seed()
    score = evaluate.generator_for(cfg.seed, step, "11", torch.device("cpu")).initial_seed()
    assert select != score
    assert draws == [(select, 3)] * 3 + [(score, 5)]
    assert reading.samples == point.samples == 5 and reading.setting in (
        "reach=0.25",
        "reach=0.5",
        "reach=1",
    )
    assert (
        0 <= reading.selection_accuracy <= 1
        and reading.interval[0] <= reading.accuracy <= reading.interval[1]
    )


def test_intervention_edits_embeddings_and_cleans_up(run):
    cfg, _ = load_run(run)
    model = checkpoint.load_model(run, checkpoint.saved_steps(run)[-1], cfg)
    h = np.stack([protocols.class_prompts(cfg.data)["11"]])
    before = protocols.embeddings(model, h)
    with protocols.intervention(model, cfg.data, "11", 2.0, 0.5):
        during = protocols.embeddings(model, h)
    assert not torch.allclose(before, during)
    torch.testing.assert_close(protocols.embeddings(model, h), before)  # hooks removed


def test_disentanglement_matches_its_definition(run):
    cfg, _ = load_run(run)
    model = checkpoint.load_model(run, checkpoint.saved_steps(run)[-1], cfg)
    prompts = protocols.class_prompts(cfg.data)
    e = protocols.embeddings(model, np.stack([prompts["00"], prompts["01"], prompts["10"]])).numpy()
    a, b = e[1] - e[0], e[2] - e[0]
    expected = 1 - abs(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert protocols.disentanglement(model, cfg.data) == pytest.approx(expected, abs=1e-5)
    evals = [
        json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if '"eval"' in x
    ]
    assert all(0 <= r["disentanglement"] <= 1 for r in evals)


def test_all_protocols_give_valid_rows_and_reruns_are_idempotent(run, capsys):
    assert main([str(run), "--classes", "11"]) == 0
    pictures = sorted(
        p.name for p in (run / "elicit" / "samples").glob("*.png")
    )  # cfg.grids = 2 checkpoints each
    assert (
        len(pictures) == 2 * len(protocols.PROTOCOLS) and "overprompt_step_000040.png" in pictures
    )
    log = run / "trajectories.csv"
    trajectories = read_csv(log)
    steps = checkpoint.saved_steps(run)
    for name in protocols.PROTOCOLS:
        t = next(t for t in trajectories if t.protocol == name and t.label == "11")
        assert t.step.tolist() == steps
        assert np.all((t.accuracy >= 0) & (t.accuracy <= 1))
        assert all(t.extra["setting"])
    naive = [t for t in trajectories if t.protocol == "naive"]
    assert len(naive) == 4
    first = log.read_text()
    assert main([str(run), "--classes", "11"]) == 0
    assert log.read_text() == first  # rerun: nothing added, nothing lost
    # an interrupted elicitation (one checkpoint missing) is completed on rerun, to the same rows
    results = runlog.read_elicit(run, "overprompt")
    del results[steps[2]]
    runlog.write_elicit(run, "overprompt", results, {})
    run_protocols(run, ["overprompt"], ["11"], progress=False)
    assert log.read_text() == first


def test_every_nth_checkpoint_and_always_the_last():
    assert chosen_steps([0, 4, 17, 40], 1) == [0, 4, 17, 40]
    assert chosen_steps([0, 4, 17, 40], 3) == [0, 40]
    assert chosen_steps([0, 4, 17, 40, 50], 2) == [0, 17, 50]
    with pytest.raises(ValueError, match="--every 0"):
        chosen_steps([0, 4], 0)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--protocols", "telepathy"], "unknown protocol 'telepathy'; valid: overprompt"),
        (["--classes", "22"], "unknown class '22'; valid: 00, 01, 10, 11"),
    ],
)
def test_cli_bad_input(run, capsys, args, message):
    assert main([str(run), *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_not_a_run(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "not a training run (no config.json)" in capsys.readouterr().err


def test_protocols_during_training(tmp_path, smoke_probe):
    cfg = make_config(
        "smoke",
        ["protocols=overprompt,intervention", f"probe={smoke_probe}", "steps=10", "evals=2"],
    )
    train(cfg, tmp_path / "r", progress=False)
    t = [t for t in read_csv(tmp_path / "r" / "trajectories.csv") if t.label == "11"]
    assert sorted(x.protocol for x in t) == ["intervention", "naive", "overprompt"]
    with pytest.raises(ValueError, match="patch runs post hoc"):
        make_config("smoke", ["protocols=patch"])


def test_patch_needs_a_finished_run(tmp_path, capsys, smoke_probe):
    out = tmp_path / "r"
    cfg = make_config("smoke", [f"probe={smoke_probe}", "steps=20", "evals=2", "save_every=10"])
    train(cfg, out, progress=False, stop_after=12)
    assert main([str(out), "--protocols", "patch"]) == 2
    assert "patch needs the final checkpoint (step 20)" in capsys.readouterr().err


def test_the_run_probe_reports_abstention_per_unreadable_kind(run):
    """probe.json (written by train_evaluate_save when training trains its probe) has the abstention of every kind."""
    from empirical.probing import unreadable

    _, doc = load_run(run)
    report = json.loads((Path(doc["probe"]["path"]) / "probe.json").read_text())
    assert set(report["abstention"]) == set(unreadable.KINDS) | {"untrained-model"}
    assert (
        all(0 <= v <= 1 for v in report["abstention"].values()) and 0 <= report["min_readable"] <= 1
    )
    assert report["unreadable_threshold"] == 0.5 and all(
        "readable" in row for row in report["evaluation"]
    )


@pytest.mark.slow  # long end to end: run with -m slow
def test_by_default_a_run_without_an_unconditional_model_skips_guidance(tmp_path, capsys):
    out = tmp_path / "r"
    train(
        make_config("smoke", ["p_cfg=0", "steps=20", "evals=2", "save_every=10"]),
        out,
        progress=False,
    )
    assert main([str(out), "--protocols", "cfg"]) == 2  # asked for by name: refused, naming why
    assert "(p_cfg > 0: an unconditional model to guide with); this run has p_cfg=0; drop cfg" in (
        capsys.readouterr().err
    )
    assert main([str(out), "--classes", "11"]) == 0  # the default: every protocol the run supports
    protocols_run = {t.protocol for t in read_csv(out / "trajectories.csv") if t.label == "11"}
    assert protocols_run == {"naive", "overprompt", "intervention", "patch"}
