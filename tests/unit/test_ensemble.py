"""Many runs trained as one (empirical.ensemble, empirical.training.stacked): a member equals its run trained alone."""

from __future__ import annotations

import json
from pathlib import Path
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.training.config import make_config  # noqa: E402
from empirical.ensemble import main, members, seed_list, train_members  # noqa: E402
from empirical.training.stacked import check_shared  # noqa: E402
from empirical.training.loop import train  # noqa: E402
from core.cli import UsageError  # noqa: E402
from core.trajectory import read_csv  # noqa: E402

SHARED = [
    "precision=fp32",
    "device=cpu",
    "ema=0.9",
    "clip_scope=all",
    "steps=30",
    "log_every=5",
    "save_every=10",
]


def config(probe, *own):
    """A member's config reading the probe folder ``probe`` (the session's smoke probe: none is trained)."""
    return make_config("smoke", [*SHARED, f"probe={probe}", *own])


def losses(folder):
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: (r["total"], r["grad_norm"]) for r in rows if r["kind"] == "train"}


def points(folder):
    return {
        (t.label, int(s)): z
        for t in read_csv(folder / "trajectories.csv")
        for s, z in zip(t.step, t.z)
    }


def assert_same_run(a, b):
    """Two runs' loss and gradient norm at every record (1e-4 relative) and concept points (1e-3)."""
    la, lb = losses(a), losses(b)
    assert la.keys() == lb.keys() and len(la) >= 6
    for step in la:
        assert la[step] == pytest.approx(lb[step], rel=1e-4), step
    pa, pb = points(a), points(b)
    assert pa.keys() == pb.keys()
    for key in pa:
        assert np.allclose(pa[key], pb[key], atol=1e-3, equal_nan=True), key


@pytest.fixture(
    scope="module", params=["stacked", pytest.param("threaded", marks=pytest.mark.slow)]
)
def trained(tmp_path_factory, request, smoke_probe):
    """Seeds 0 and 1 at two separations trained as one ensemble (each engine), and seed 1 alone."""
    tmp = tmp_path_factory.mktemp(request.param)
    torch.set_num_threads(1)
    cfgs = [config(smoke_probe, "seed=0"), config(smoke_probe, "seed=1", "sep.color=0.5")]
    done, failed = train_members(
        cfgs, [tmp / "a", tmp / "b"], engine=request.param, workers=2, progress=False
    )
    assert failed == [] and [d["step"] for d in done] == [30, 30]
    train(cfgs[1], tmp / "alone", progress=False)
    return tmp


def test_a_member_equals_its_run_trained_alone(trained):
    assert_same_run(trained / "b", trained / "alone")
    assert losses(trained / "a") != losses(trained / "b")  # its own seed and data, not a copy


@pytest.mark.slow  # trains an ensemble twice more, 14 s; a run's resume: test_train.py
def test_a_killed_ensemble_resumes_level_and_ends_as_if_never_stopped(
    trained, tmp_path, smoke_probe
):
    """One member saved at step 20, the other at 10 (a kill between saves): the one behind catches up alone,
    then both go on together; each ends equal to its uninterrupted run."""
    cfgs = [config(smoke_probe, "seed=0"), config(smoke_probe, "seed=1", "sep.color=0.5")]
    outs = [tmp_path / "a", tmp_path / "b"]
    engine = trained.name.rstrip("0123456789")
    train_members(cfgs, outs, engine=engine, progress=False, stop_after=20)
    train_members(cfgs[1:], [tmp_path / "behind"], engine=engine, progress=False, stop_after=10)
    shutil.rmtree(outs[1])
    shutil.copytree(tmp_path / "behind", outs[1])
    done, _ = train_members(cfgs, outs, engine=engine, progress=False)
    assert [d["step"] for d in done] == [30, 30]
    assert_same_run(outs[0], trained / "a")
    assert_same_run(outs[1], trained / "b")


def test_members_differ_only_where_a_member_may(tmp_path):
    with pytest.raises(ValueError, match=r"differ: lr \(0.001 in member 0, 0.002 in member 1\)"):
        check_shared([config(tmp_path), config(tmp_path, "lr=0.002", "seed=1")])
    check_shared([config(tmp_path), config(tmp_path, "seed=4", "sep.color=0.6", "mask_p=0.5")])


def test_the_command_line_names_bad_members(tmp_path, capsys):
    assert seed_list("0-2,7") == [0, 1, 2, 7] and seed_list(None) == []
    with pytest.raises(UsageError, match="'x' is not a seed"):
        seed_list("0,x")
    assert members(["steps=5"], ["seed=1,sep.color=0.3"], "0") == [
        ("seed=1,sep.color=0.3", ["steps=5", "seed=1", "sep.color=0.3"]),
        ("seed=0", ["steps=5", "seed=0"]),
    ]
    with pytest.raises(UsageError, match="'lr=0.1' is not a member's own"):
        members([], ["seed=1,lr=0.1"], None)
    with pytest.raises(UsageError, match="named twice"):
        members([], ["seed=1"], "1")
    with pytest.raises(UsageError, match="name the members"):
        members([], [], None)
    assert (
        main(["--runs", str(tmp_path / "r"), "--preset", "smoke", "--member", "seed=0,lr=1"]) == 2
    )
    assert "is not a member's own" in capsys.readouterr().err


def test_explicit_attention_equals_torch_s_fused_one():
    from empirical.nets.unet import Attention, explicit_attention

    torch.manual_seed(0)
    layer, x = Attention(32), torch.randn(3, 32, 4, 4)
    with torch.no_grad():
        fused = layer(x)
        with explicit_attention():
            written = layer(x)
    assert torch.allclose(fused, written, atol=1e-5) and not torch.equal(fused, x)


@pytest.mark.parametrize("name", ["stacked", "threaded"])
def test_a_diverging_member_is_named_and_the_others_are_not_lost(
    trained, tmp_path, name, smoke_probe
):
    """A member whose loss is not finite comes back as its Diverged, not updated; under `stacked` nobody is
    updated and every stream is put back (the others redo the step as drawn), under `threaded` the others step."""
    from empirical.training import stacked
    from empirical.ensemble import open_members
    from empirical.training.run import Diverged

    cfgs = [config(smoke_probe, "seed=0"), config(smoke_probe, "seed=1")]
    runs = open_members(cfgs, [tmp_path / "a", tmp_path / "b"], progress=False)
    with torch.no_grad():
        next(runs[0].vdm.net.parameters()).fill_(float("nan"))
    before = [run.stream.get_state() for run in runs]
    ens = stacked.engine(runs, name, workers=2)
    try:
        results = ens.train_step()
    finally:
        ens.close()
    assert isinstance(results[0], Diverged) and "diverged at step 1" in str(results[0])
    if name == "stacked":
        assert results[1] is None and [r.step for r in runs] == [0, 0]
        assert all(torch.equal(r.stream.get_state(), s) for r, s in zip(runs, before))
    else:
        assert isinstance(results[1], dict) and [r.step for r in runs] == [0, 1]


@pytest.mark.parametrize("name", ["stacked", "threaded"])
def test_a_stretch_of_updates_stops_where_a_member_diverges(trained, tmp_path, name, smoke_probe):
    """train_steps: under `stacked` nobody is updated at the bad step and the stretch ends there; under `threaded`
    the others go on to its end."""
    from empirical.training import stacked
    from empirical.ensemble import open_members
    from empirical.training.run import Diverged

    cfgs = [config(smoke_probe, "seed=0"), config(smoke_probe, "seed=1")]
    runs = open_members(cfgs, [tmp_path / "a", tmp_path / "b"], progress=False)
    with torch.no_grad():
        next(runs[0].vdm.net.parameters()).fill_(float("nan"))
    ens = stacked.engine(runs, name, workers=2)
    try:
        results = ens.train_steps(3)
    finally:
        ens.close()
    assert isinstance(results[0], Diverged) and results[1] is None
    assert [r.step for r in runs] == ([0, 0] if name == "stacked" else [0, 3])
    assert runs[1].meter.count == (0 if name == "stacked" else 3)


@pytest.mark.parametrize(
    "name",
    ["stacked", pytest.param("threaded", marks=pytest.mark.slow)],  # the other engine, 5 s
)
def test_a_member_diverging_mid_training_is_named_and_the_other_ends_as_alone(
    trained, tmp_path, monkeypatch, name, smoke_probe
):
    """Member a's images turn to NaN at update 8 (between two records): it stops there, named; member b trains on
    to the end and equals its run trained alone, records, evaluations and saves included."""
    from empirical.training.run import Run

    real = Run.batch

    def batch(self):
        x, h = real(self)
        return (x * float("nan") if self.out.name == "a" and self.step >= 7 else x), h

    monkeypatch.setattr(Run, "batch", batch)
    cfgs = [config(smoke_probe, "seed=0"), config(smoke_probe, "seed=1", "sep.color=0.5")]
    outs = [tmp_path / "a", tmp_path / "b"]
    done, failed = train_members(cfgs, outs, engine=name, workers=2, progress=False)
    assert failed == [f"{outs[0]}: diverged at step 8"] and done[1]["step"] == 30
    assert_same_run(outs[1], trained / "alone")


def trained_stacked(tmp_path, probe, *shared):
    """Two members (seed 0; seed 1 at Δcolor 0.5) of the stacked engine after 3 updates, drawing every member's
    samples at once as on a GPU (on a CPU that is off: checked here)."""
    from empirical.ensemble import open_members
    from empirical.training.stacked import Stacked

    cfgs = [
        config(probe, "seed=0", *shared),
        config(probe, "seed=1", "sep.color=0.5", *shared),
    ]
    runs = open_members(cfgs, [tmp_path / "a", tmp_path / "b"], progress=False)
    ens = Stacked(runs)
    assert ens.naive_images() is None and ens.elicited() is None
    for _ in range(3):
        ens.train_step()
    ens.unstack()
    ens.sample_at_once = True
    return runs, ens


def test_the_members_naive_samples_drawn_at_once_are_each_member_s_own(tmp_path, smoke_probe):
    """The GPU's evaluation (every member's naive samples in one sampler) hands each member the images its
    run alone draws at that step (empirical.training.evaluate.naive's prompts and generators)."""
    from empirical.training import evaluate

    runs, ens = trained_stacked(tmp_path, smoke_probe)
    drawn = ens.naive_images()
    for run in runs:
        cfg = run.cfg
        samples = {c: cfg.samples_for(c) for c in cfg.data.classes}
        prompts, gens = evaluate.naive_requests(cfg.data, samples, cfg.seed, run.step, run.device)
        for label, h in prompts.items():
            alone = evaluate.generate(
                run.model_eval,
                h,
                cfg.data.resolution,
                steps=cfg.sample_steps,
                guidance=cfg.guidance,
                generator=gens[label],
                precision=cfg.precision,
            )
            np.testing.assert_allclose(drawn[id(run)][label], alone, atol=1e-5)
    run = runs[1]
    run.evaluate(images=drawn[id(run)])
    assert [p.step for p in run.logs.points] == [3] * len(run.cfg.data.classes)


def test_the_members_over_prompting_drawn_at_once_reads_as_each_run_alone(
    tmp_path, monkeypatch, smoke_probe
):
    """Over-prompting at a checkpoint (every setting's choosing draw, then the chosen one's scoring draw) made for
    every member in one sampler gives each member the readings its run alone makes (protocols.elicit_step), and
    the member logs them without drawing again."""
    from empirical.training import protocols, runlog

    runs, ens = trained_stacked(tmp_path, smoke_probe, "protocols=overprompt")
    elicited = ens.elicited()
    for run in runs:
        alone = protocols.elicit_step(
            run.model_eval, run.probe, run.cfg, run.step, "overprompt", run.cfg.data.held_out
        )
        together = elicited[id(run)]["overprompt"]
        assert together.keys() == alone.keys() == set(run.cfg.data.held_out)
        for label, (reading, _) in alone.items():
            got = together[label]
            assert (got.step, got.setting, got.samples) == (
                reading.step,
                reading.setting,
                reading.samples,
            )
            assert got.accuracy == pytest.approx(reading.accuracy, abs=1e-9)
            assert got.selection_accuracy == pytest.approx(reading.selection_accuracy, abs=1e-9)
            assert np.allclose(got.z, reading.z, atol=1e-3, equal_nan=True)
    run = runs[1]

    def drawn_again(*args, **kwargs):
        raise AssertionError("a member drew over-prompting again")

    monkeypatch.setattr(protocols, "elicit_step", drawn_again)
    run.evaluate(elicited=elicited[id(run)])
    logged = runlog.read_elicit(run.out, "overprompt")[3]
    assert {k: v.setting for k, v in logged.items()} == {
        k: v.setting for k, v in elicited[id(run)]["overprompt"].items()
    }


def test_a_member_whose_over_prompted_images_are_not_finite_draws_alone_and_the_others_go_on(
    tmp_path, smoke_probe
):
    """elicit_members: a member's NaN weights give it no readings (it draws alone, and fails there as a run
    alone does); the other members' readings are still each their own."""
    from empirical.training import protocols

    runs, ens = trained_stacked(tmp_path, smoke_probe, "protocols=overprompt")
    with torch.no_grad():
        for p in runs[0].model_eval.parameters():
            p.fill_(float("nan"))
    elicited = ens.elicited()
    assert elicited[id(runs[0])] == {}
    alone = protocols.elicit_step(
        runs[1].model_eval, runs[1].probe, runs[1].cfg, 3, "overprompt", ["11"]
    )
    assert elicited[id(runs[1])]["overprompt"]["11"].setting == alone["11"][0].setting


def test_a_run_saved_before_faces_existed_resumes(tmp_path):
    """config.json written before the celeba key: read as a synthetic run, the folder check passes."""
    from empirical.training.config import check_folder

    cfg = make_config("smoke")
    doc = {"train": {k: v for k, v in cfg.to_json().items() if k != "celeba"}}
    (tmp_path / "config.json").write_text(json.dumps(doc))
    check_folder(tmp_path, cfg)


def test_a_sweep_stopped_mid_save_is_summarized_by_its_furthest_member(tmp_path):
    """benchmarks/ensemble_summary.py: members saved one by one, some a checkpoint behind when the sweep was
    stopped; the rate is the furthest member's step over its own training time (not the least step over the
    most time, which understated an H200 sweep's rate by 14%)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "ensemble_summary.py"
    spec = importlib.util.spec_from_file_location("ensemble_summary", path)
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    for name, step, wall in (("seed=0", 2000, 200.0), ("seed=1", 1700, 170.0)):
        rows = [{"kind": "train", "step": s, "wall_s": wall * s / step} for s in (step // 2, step)]
        rows += [{"kind": "eval", "step": 0, "eval_s": 0.1}] * (3 if step == 2000 else 2)
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    doc = summary.summarize(tmp_path, "smoke", [], 260.0)
    assert doc["steps_reached"] == 2000 and doc["steps_per_s_a_run"] == 10.0
    assert doc["checkpoints_passed"] == 3 and doc["other_s_a_checkpoint"] == 20.0


def test_every_way_to_run_members_convolutions_equals_member_by_member(tmp_path):
    """benchmarks/member_conv.py times K members' convolutions written five ways (for a GPU session to choose
    the stacked engine's); a way that computed another convolution (members' channels mixed, the im2col's
    columns misordered, a stride or padding dropped) would time the wrong thing. In fp32 on the CPU every way
    equals K separate convolutions at every conv layer of smoke's net, to rounding; the JSON holds each way."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "member_conv.py"
    spec = importlib.util.spec_from_file_location("member_conv", path)
    member_conv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(member_conv)
    layers = member_conv.conv_layers("smoke")
    assert {lay["stride"] for lay in layers} == {1, 2} and len(layers) > 10
    batch = member_conv.tensors(layers, 3, torch.device("cpu"))
    worst = member_conv.largest_difference(batch, torch.device("cpu"))
    assert set(worst) == {"vmap", "grouped", "grouped_cl", "bmm", "loop"}
    assert max(worst.values()) < 1e-5
    out = tmp_path / "mc.json"
    assert (
        member_conv.main(["--preset", "smoke", "--ks", "2", "--reps", "1", "--json", str(out)]) == 0
    )
    row = json.loads(out.read_text())["rows"][0]
    assert row["k"] == 2 and set(row["seconds"]) == set(worst)
    with pytest.raises(SystemExit):
        member_conv.main(["--ks", "4,x"])
