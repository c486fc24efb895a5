"""Every ```python block of docs/python.md runs, in a folder laid out like the repository with small
sample data (examples/chess: 4,096 positions; examples/deblur: its 32 pairs). Blocks that import torch
or jax are skipped when those are not installed."""
import importlib.util
import os
import re
import shutil

import pytest

from conftest import REPO, run_pipec

DOC = os.path.join(REPO, "docs", "python.md")


def python_blocks():
    text = open(DOC).read()
    blocks = []
    heading = "top"
    for m in re.finditer(r"^(#+ [^\n]*)$|^```python\n(.*?)^```$", text, re.M | re.S):
        if m.group(1):
            heading = m.group(1).lstrip("# ").strip()
        else:
            blocks.append(pytest.param(m.group(2), id=re.sub(r"\W+", "_", heading).strip("_").lower()))
    return blocks


def test_the_doc_has_examples():
    ids = [p.id for p in python_blocks()]
    assert len(ids) >= 4 and any("pytorch" in i for i in ids) and any("jax" in i for i in ids)


@pytest.fixture(scope="module")
def doc_workspace(tmp_path_factory, chess_dir):
    root = tmp_path_factory.mktemp("docs")
    chess = root / "examples" / "chess"
    shutil.copytree(chess_dir, chess)
    deblur = root / "examples" / "deblur"
    deblur.mkdir(parents=True)
    for name in ("deblur.pipe", "make_data.pipe"):
        shutil.copy(os.path.join(REPO, "examples", "deblur", name), deblur / name)
    run_pipec("run", deblur / "make_data.pipe", "--quiet")
    # The served model of "Serving a trained model": a few steps are enough for a library to open.
    (root / "out").mkdir()
    run_pipec("run", chess / "chess.pipe", "--steps", "2", "--save", root / "out" / "chess.safetensors", "--quiet")
    run_pipec("build", chess / "chess.pipe", "--train", "chess", "--weights", root / "out" / "chess.safetensors",
              "-o", root / "out" / "libchess_model.so", "--quiet")
    return root


@pytest.mark.parametrize("code", python_blocks())
def test_doc_example_runs(code, doc_workspace, monkeypatch):
    for module in ("torch", "jax"):
        if re.search(rf"^\s*(import|from) {module}\b", code, re.M) and importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    monkeypatch.chdir(doc_workspace)
    exec(compile(code, DOC, "exec"), {"__name__": "__doc_example__"})
