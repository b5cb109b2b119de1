"""Bad input to python -m empirical.convert: arrays saved elsewhere, read into a log."""

from __future__ import annotations

from badinputs.fixtures import Case, write, no_file, exists, array_file, malicious_points, points

CV = "empirical.convert"


def _npy_bytes() -> bytes:
    """A .npy file of a (4, 5, 2) array, as bytes."""
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.full((4, 5, 2), 0.5))
    return buf.getvalue()


axes = [
    "--layout",
    "class,step,concept",
    "--concepts",
    "color,size",
    "--classes",
    "00,01,10,11",
]
out = ["--out", "{c}/t.csv"]
steps = ["--steps", "0,1,2,3,4"]

CASES = [
    Case("missing input", CV, ["{c}/none.npy", *axes, *steps, *out], "no such file"),
    Case(
        "bad name",
        CV,
        ["{c}/z.txt", *axes, *steps, *out],
        "valid: .npy, .npz, .pth",
        setup=write("z.txt", "1"),
    ),
    Case(
        "injection",
        CV,
        ["{c}/z.npy", *axes, *steps, *out],
        "holds Python objects",
        setup=array_file("z.npy", lambda: __import__("numpy").array([{"a": 1}], dtype=object)),
        check=no_file("t.csv"),
    ),
    Case(
        "injection",
        CV,
        ["{c}/points.pth", "--key", "data", *axes, *steps, *out],
        "without unpickling arbitrary objects",
        setup=malicious_points,
        check=lambda c, w: "the payload ran" if (c / "ran").exists() else no_file("t.csv")(c, w),
    ),
    Case(
        "bad flag",
        CV,
        ["{c}/z.npz", *axes, *steps, *out],
        "name one with --key",
        setup=array_file("z.npz", lambda: {"a": points(), "b": points()}),
    ),
    Case(
        "bad flag",
        CV,
        ["{c}/z.npz", "--key", "data", *axes, *steps, *out],
        "has no entry 'data'",
        setup=array_file("z.npz", lambda: {"a": points()}),
    ),
    Case(
        "bad value",
        CV,
        ["{c}/z.npy", *axes, "--steps", "0,1,2,3", *out],
        "steps: 4 given",
        setup=array_file("z.npy", points),
    ),
    Case(
        "bad value",
        CV,
        ["{c}/z.npy", *axes, "--steps", "0,1,1,3,4", *out],
        "increasing",
        setup=array_file("z.npy", points),
    ),
    Case(
        "bad number",
        CV,
        ["{c}/z.npy", *axes, *steps, *out],
        "lies outside [0, 1]",
        setup=array_file("z.npy", lambda: points() * 3),
        check=no_file("t.csv"),
    ),
    Case(
        "bad flag",
        CV,
        [
            "{c}/z.npy",
            "--layout",
            "class,step",
            "--concepts",
            "color,size",
            "--classes",
            "00,01,10,11",
            *steps,
            *out,
        ],
        "name the axes of the array in order",
        setup=array_file("z.npy", points),
    ),
    Case(
        "output path",
        CV,
        ["{c}/z.npy", *axes, *steps, "--out", "{c}/t.json"],
        "must end in .csv",
        setup=array_file("z.npy", points),
    ),
    Case(
        "smoke",
        CV,
        ["{c}/z.npy", *axes, *steps, *out],
        expect="ok",
        setup=array_file("z.npy", points),
        check=exists("t.csv"),
    ),
    Case(  # issue #51: reported as "holds Python objects"
        "unreadable log",
        CV,
        ["{c}/cut.npy", *axes, *steps, *out],
        "not a whole .npy file",
        setup=write("cut.npy", _npy_bytes()[:200]),
        check=no_file("t.csv"),
    ),
]
