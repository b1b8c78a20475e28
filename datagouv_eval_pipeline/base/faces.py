"""The lazy ``__getattr__`` every package face installs (PEP 562).

A face (a package's ``__init__.py``) lists its public names and the submodule defining each in
``_MODULE_OF``; importing the face imports none of them, and a name's submodule is imported on
first use. The real imports sit under ``TYPE_CHECKING`` in the face, so mypy sees the types.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the face ``package``.

    Args:
        package: The face's ``__name__``.
        module_of: Each public name and the submodule defining it, relative (``".keys"``).

    Returns:
        A function that imports the defining submodule, keeps the value on the face (so the
        next access is a plain attribute) and returns it; an unknown name is an
        ``AttributeError``.
    """

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
