"""Shared fixtures of the Python tests: the pipec binary, small chess data in a temporary folder, and
specs written by the tests.

Run by ctest as `python_tests` (PYTHONPATH=build/python, PIPEC=build/pipec); by hand:
    PYTHONPATH=build/python PIPEC=build/pipec python -m pytest tests/python
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPEC = os.environ.get("PIPEC") or os.path.join(REPO, "build", "pipec")
CHESS_RECORDS = 4096  # 8 files of 512 records

import pipec  # noqa: E402  (PYTHONPATH points at the package)


def run_pipec(*args, cwd=None):
    """Runs the pipec binary; fails the test with its stderr when it fails."""
    r = subprocess.run([PIPEC, *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"pipec {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


@pytest.fixture(scope="session")
def chess_dir(tmp_path_factory):
    """A copy of examples/chess with CHESS_RECORDS positions in data/ (same format as the seed's)."""
    d = tmp_path_factory.mktemp("chess")
    for name in ("chess.pipe", "make_data.pipe"):
        shutil.copy(os.path.join(REPO, "examples", "chess", name), d / name)
    run_pipec("run", d / "make_data.pipe", "-D", f"RECORDS={CHESS_RECORDS}", "--quiet")
    assert len(list((d / "data").glob("chess-*.tfrecord"))) == 8
    return d


@pytest.fixture(scope="session")
def chess_spec(chess_dir):
    return pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 64})


@pytest.fixture
def write_spec(tmp_path):
    """write_spec(text, name="spec.pipe") -> path of a spec written in the test's folder."""
    def write(text, name="spec.pipe"):
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip())
        return p
    return write


def numpy_batch(batch):
    """{field: np.ndarray} copies of a batch (so they outlive the pipeline's buffers' reuse)."""
    import numpy as np
    return {k: np.from_dlpack(v).copy() for k, v in batch.items()}
