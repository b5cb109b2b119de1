"""The figure of ``python -m fitting.predict``: drawn from prediction.json and the trajectories only.

Left: the held-out runs in concept space, observed (dots) and predicted by the law (line). Then the
law's covariate-to-parameter curves (speed, switch time, bias) with each training run's own eq1 fit
over them (fitting.fit's estimates; a switch that was not identified is not drawn). Under ``--model
memorize`` and ``coupled`` the per-run eq1 fits are not drawn: they assume the other order (bias first),
so their parameters do not measure the law's. The coupled model's switch has no time: its panel draws the
switch against the other concepts' progress.
"""

from __future__ import annotations

import matplotlib
import numpy as np

from fitting.leave_out import gap_text
from theory import plot
from theory.trajectory import Trajectory


def _switch_time(ax, c, fits, cov, grid, x_ref, concepts, colors, label, memorize) -> None:
    """eq1's clock-timed switch: the law's switch step against the covariate, per-run fits over it."""
    on = c.get("t_on", 0.0)  # the switch in the log's steps: the law's clock starts at the onset
    ax.plot(
        grid,
        on + c["t_ref"] * (grid / x_ref) ** c["b_t"],
        "-",
        color="k",
        label=f"law: exponent {c['b_t']:.2f}" + (f", from the onset {on:,.0f}" if on else ""),
    )
    for i, name in enumerate(concepts):
        pts = [
            (cov[r][i], f["t_switch"][i])
            for r, f in fits.items()
            if f and "t_switch" in f and f["t_switch"][i] is not None
        ]
        if pts:
            ax.plot(*zip(*pts), "o", color=colors[i % 10], label=f"per-run switch: {name}")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel=label,
        ylabel="switch step",
        title="switch time (to memorizing)" if memorize else "switch time",
    )
    ax.legend(fontsize=7)


def _switch_gate(ax, c) -> None:
    """The coupled model's switch: how far it has gone against the other concepts' progress (no clock)."""
    progress = np.linspace(0, 1, 200)
    ax.plot(
        progress,
        1 / (1 + np.exp(-c["kappa"] * (progress - c["theta"]))),
        "-",
        color="k",
        label=f"law: threshold {c['theta']:.2f}, sharpness {c['kappa']:.3g}",
    )
    ax.axvline(c["theta"], color="0.6", lw=1, ls=":")
    ax.set(
        xlabel="the other concepts' progress 1 - (z_j - ẑ_j)²",
        ylabel="switch to the memorized bias",
        ylim=(-0.03, 1.03),
        title="switch (thrown by the other concepts)",
    )
    ax.legend(fontsize=7)


def figure(
    doc: dict, observed: dict[str, Trajectory], predicted: dict[str, Trajectory], path
) -> None:
    concepts, c = doc["concepts"], doc["law"]["coefficients"]
    x_ref, colors = doc["law"]["x_ref"], matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    two = len(concepts) == 2
    fig, axes = plot.subplots(
        1, 3 + two, figsize=(4.8 * (3 + two), 4.4), squeeze=False, layout="constrained"
    )
    axes = list(axes[0])
    if two:
        ax = axes.pop(0)
        for j, (run, obs) in enumerate(observed.items()):
            col = colors[j % 10]
            ax.plot(obs.z[:, 0], obs.z[:, 1], "o", ms=3, color=col, alpha=0.6)
            pred = predicted[run].z
            ax.plot(pred[:, 0], pred[:, 1], "-", lw=2, color=col, label=f"{run}: predicted")
        plot.square(ax, concepts, f"held-out runs, class {doc['class']} (dots: observed)")
        ax.legend(fontsize=6, loc="best")
    cov = {r: np.array([v["covariates"][k] for k in concepts]) for r, v in doc["train"].items()}
    memorize = doc["model"] in ("memorize", "coupled")
    fits = {} if memorize else doc.get("per_run_fits") or {}
    xs = np.array(list(cov.values()))
    grid = np.geomspace(xs.min() * 0.7, xs.max() * 1.4, 100)
    label = f"{doc['covariate']} (covariate)"
    ax = axes.pop(0)
    if (
        "c_lam" in c
    ):  # the speed follows the signal's lead over the other concepts too: one curve per concept
        for i, name in enumerate(concepts):
            pts = sorted((cov[r][i], v["parameters"]["lam"][i]) for r, v in doc["train"].items())
            ax.plot(
                *zip(*pts),
                "-",
                color=colors[i % 10],
                label=f"law: {name} (lead exponent {c['c_lam']:.2f})",
            )
    else:
        ax.plot(
            grid,
            c["lam_ref"] * (grid / x_ref) ** c["b_lam"],
            "-",
            color="k",
            label=f"law: exponent {c['b_lam']:.2f}",
        )
    for i, name in enumerate(concepts):
        pts = [(cov[r][i], f["lam"][i]) for r, f in fits.items() if f and "lam" in f]
        if pts:
            ax.plot(*zip(*pts), "o", color=colors[i % 10], label=f"per-run fit: {name}")
    ax.set(xscale="log", yscale="log", xlabel=label, ylabel="speed λ (1/step)", title="speed")
    ax.legend(fontsize=7)
    ax = axes.pop(0)
    if "t_ref" in c:
        _switch_time(ax, c, fits, cov, grid, x_ref, concepts, colors, label, memorize)
    else:
        _switch_gate(ax, c)
    ax = axes.pop(0)
    lead = np.linspace(-2.5, 2.5, 200)
    ax.plot(
        lead,
        c["m"] * (1 - 1 / (1 + np.exp(-c["gamma"] * lead))),
        "-",
        color="k",
        label=f"law: depth {c['m']:.2f}, sharpness {c['gamma']:.1f}",
    )
    for i, name in enumerate(concepts):
        pts = []
        for r, f in fits.items():
            if f and "z_bias" in f:
                ell = np.log(cov[r])
                others = np.delete(ell, i).max() if len(ell) > 1 else ell[i]
                pts.append(
                    (ell[i] - others, abs(f["z_bias"][i] - 1.0))
                )  # distance from the target 1 (class 11)
        if pts:
            ax.plot(*zip(*pts), "o", color=colors[i % 10], label=f"per-run fit: {name}")
    ax.set(
        xlabel="log signal lead over the other concept",
        ylabel="bias |z̃ - ẑ|",
        ylim=(-0.03, 1.03),
        title=(
            "memorized bias after the switch"
            if memorize
            else "bias toward the stronger concept's training class"
        ),
    )
    ax.legend(fontsize=7)
    for ax in fig.axes:
        ax.grid(alpha=0.25)
    delta = doc["law"].get("discrepancy")
    extra = (
        f"; + the {'shared' if delta['kind'] == 'mean' else 'local'} discrepancy, mean rms "
        + ", ".join(f"{k} {v:.3f}" for k, v in delta["rms"].items())
        if delta
        else ""
    )
    fig.suptitle(f"pooled {doc['model']} law: {doc['law']['text']}{extra}", fontsize=9)
    plot.save(fig, path)


def leave_out_figure(doc: dict, path) -> None:
    """leave_out.png: per left-out level, the RMSE of the law, of the baselines, the seed floor and the law's
    ceiling (lines: the level's mean; dots: the law on each held-out run); shaded: the levels outside the
    training range). The law is scored at the points of the baseline it is compared with: interpolation's
    inside the range, the nearest level's outside it."""
    levels = doc["levels"]

    def paired(row: dict) -> float | None:
        # a summary written before the paired scoring (docs/results/study/dcolor-preliminary) has the law on every point
        return row.get(
            "law_at_interpolation" if row["interpolation"] is not None else "law_at_nearest",
            row["law"],
        )

    fig, ax = plot.subplots(figsize=(8.6, 4.2), layout="constrained")
    x = np.arange(len(levels))
    law = f"{doc.get('model', '')} law" + "".join(
        f" + {k}" for k in ("onset", "compete") if doc.get(k)
    )
    if doc.get("discrepancy"):
        law += " + " + ("local " if doc["discrepancy"] == "local" else "") + "discrepancy"
    for key, style, label in (
        ("law", "o-", law),
        ("interpolation", "s--", "interpolation"),
        ("nearest", "^:", "nearest level"),
        ("mean", "v:", "mean of all training runs (no covariates)"),
        ("seed_floor", "x-.", "seed floor (other seeds, same level)"),
        ("ceiling", "d-", "ceiling (the law fitted to the held-out runs)"),
    ):
        y = np.array(
            [
                np.nan if (v := paired(lv) if key == "law" else lv.get(key)) is None else v
                for lv in levels
            ],
            dtype=float,
        )
        ax.plot(
            x, y, style, label=label, ms=6, lw=1.5, color={"law": "k", "ceiling": "0.6"}.get(key)
        )
    for i, lv in enumerate(levels):
        runs = [v for r in lv["per_run"] if (v := paired(r)) is not None]
        ax.plot(np.full(len(runs), i), runs, ".", color="0.55", ms=5, zorder=0)
        if lv["interpolation"] is None:
            ax.axvspan(i - 0.4, i + 0.4, color="0.92", zorder=-1)
    gaps = [
        f"law - {what} {gap_text(g)}"
        for what, key in (
            ("interpolation inside", "law_minus_interpolation_inside"),
            ("nearest outside", "law_minus_nearest_outside"),
        )
        if (g := doc.get("differences", {}).get(key)) is not None
    ]
    note = "".join("\n" + g for g in gaps)
    k = doc.get("train_per_level")
    scarce = (
        ""
        if not k
        else f"\ntrained on {k} run{'s' if k > 1 else ''} a level (mean of {doc['draws']} draws)"
    )
    ax.set(
        xticks=x,
        xticklabels=[lv["left_out"] for lv in levels],
        ylabel="RMSE of the held-out path\n(the law's at its baseline's points)",
        title=f"leave one {doc['column']} out (grey band: outside the training range){scarce}{note}",
    )
    ax.title.set_fontsize(9)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plot.save(fig, path)
