"""The torch-free parts (theory, fitting, figures, the data-generating process) import and run without torch."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# As if torch were not installed: any 'import torch' raises ImportError (sys.modules stays clean).
BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch' (blocked by the layering test)")
sys.meta_path.insert(0, _NoTorch())
"""


def run(code: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK_TORCH + code], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_theory_fitting_and_data_run_without_torch(tmp_path):
    code = f"""
import theory.simulate, theory.integrate, fitting.fit, fitting.model_fit, fitting.capability, figures.training
import empirical.data, empirical.signal
from theory.simulate import main as simulate
from fitting.fit import main as fit
assert simulate(['--preset', 'fig9b', '--out', r'{tmp_path}']) == 0
assert fit([r'{tmp_path / "trajectories.csv"}', '--model', 'eq2', '--no-figures']) == 0
"""
    proc = run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_the_probe_does_need_torch(tmp_path):
    proc = run("import empirical.probe", tmp_path)
    assert proc.returncode != 0 and "torch" in proc.stderr


def test_empirical_never_imports_fitting(tmp_path):
    """Training and elicitation stand on their own: block fitting and import every empirical module."""
    block = BLOCK_TORCH.replace('name == "torch" or name.startswith("torch.")', 'name == "fitting" or name.startswith("fitting.")')
    modules = sorted(p.stem for p in (ROOT / "empirical").glob("*.py") if p.stem != "__init__")
    code = block + "import importlib\n" + "".join(f"importlib.import_module('empirical.{m}')\n" for m in modules)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
