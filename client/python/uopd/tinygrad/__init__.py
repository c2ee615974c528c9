"""uopd as a tinygrad (0.12 or 0.14) device: ``Device["UOPD"]`` runs every kernel tinygrad schedules on a
uopd server.

    import uopd.tinygrad                      # makes tinygrad.runtime.ops_uopd importable
    from tinygrad import Tensor
    t = (Tensor([1.0, 2.0], device="UOPD") + 1).numpy()

or, without changing the program (see README.md, "tinygrad backend")::

    UOPD=127.0.0.1:50051 python -m uopd.tinygrad prog.py args...
    DEV=UOPD python -m uopd.tinygrad prog.py          # the default address
    python -m uopd.tinygrad --install-pth             # then UOPD=host:port python prog.py works

Buffers live in the daemon (one UINT8 buffer per tinygrad allocation, typed views for kernel
slots); kernels go as their scheduled AST (the SINK tinygrad's scheduler produces, encoded by
``uopd.tinygrad.ir``), never as rendered source, and the daemon compiles each once (it caches by
AST hash). Importing this module does not import tinygrad: it installs an import hook that
provides ``tinygrad.runtime.ops_uopd`` (``uopd.tinygrad.device``) when tinygrad asks for it, and
imports that module at once when tinygrad is already imported.

It speaks tinygrad 0.12 and 0.14 (``SUPPORTED``; ``uopd.tinygrad.device`` and
``uopd.tinygrad.device14``). With another tinygrad installed it stays out of the way:
``import tinygrad`` works as without uopd, and only asking for the UOPD device (``Device["UOPD"]``,
``DEV=UOPD``, ``UOPD=...``, ``python -m uopd.tinygrad``) fails, with one sentence that names both
versions (``unsupported_reason()``).
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

MODULE = "tinygrad.runtime.ops_uopd"
IMPLS = {"0.12": "uopd.tinygrad.device", "0.14": "uopd.tinygrad.device14"}

__all__ = ["install", "select_from_env", "unsupported_reason", "MODULE", "SUPPORTED"]

# The tinygrad releases whose device interface and kernel ASTs this module speaks.
SUPPORTED = ("0.12", "0.14")


def _impl() -> str:
    """The device module for the installed tinygrad (0.12's when it has no metadata)."""
    found = tinygrad_version() or "0.12"
    return next((m for v, m in IMPLS.items() if found == v or found.startswith(v + ".")), IMPLS["0.12"])


class UnsupportedTinygradError(ImportError):
    """The installed tinygrad is one this version of uopd.tinygrad does not speak."""


@functools.lru_cache(maxsize=None)
def tinygrad_version() -> Optional[str]:
    """The installed tinygrad's version, read once from its package metadata without importing
    it; None when there is none (not installed, or a source checkout on sys.path)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("tinygrad")
    except PackageNotFoundError:
        return None


def unsupported_reason() -> Optional[str]:
    """One sentence saying why the UOPD device cannot run on the installed tinygrad, or None when
    it can (a tinygrad without metadata is assumed to be one it speaks)."""
    found = tinygrad_version()
    if found is None or any(found == v or found.startswith(v + ".") for v in SUPPORTED):
        return None
    wanted = " and ".join(f"{v}.x" for v in SUPPORTED)
    return (f"uopd.tinygrad {_package_version()} runs on tinygrad {wanted}, and this Python has "
            f"tinygrad {found}: install a supported tinygrad "
            f"(pip install 'tinygrad>={SUPPORTED[-1]},<{_next_minor(SUPPORTED[-1])}') "
            f"to use the UOPD device.")


def _package_version() -> str:
    from uopd import __version__
    return __version__


def _next_minor(release: str) -> str:
    major, minor = release.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        reason = unsupported_reason()
        if reason is not None:
            raise UnsupportedTinygradError(reason)
        return importlib.import_module(_impl())

    def exec_module(self, module: ModuleType) -> None:
        pass  # uopd.tinygrad.device ran when it was imported


class _AfterTinygrad(importlib.abc.Loader):
    """tinygrad's own loader, then the UOPD device module (whose import wraps tinygrad's kernel
    lowering), so the hook is in place before tinygrad lowers its first kernel."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        sys.modules[MODULE] = importlib.import_module(_impl())


class _Finder(importlib.abc.MetaPathFinder):
    """Answers tinygrad's ``importlib.import_module("tinygrad.runtime.ops_uopd")`` with
    uopd.tinygrad.device (tinygrad looks devices up by that module name), and imports that module
    as soon as tinygrad itself has been imported."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname == MODULE:
            return importlib.util.spec_from_loader(fullname, _Loader())
        if fullname == "tinygrad" and unsupported_reason() is None:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    if spec.loader is not None:
                        spec.loader = _AfterTinygrad(spec.loader)
                    return spec
        return None


def install() -> None:
    """Makes ``Device["UOPD"]`` work: the import hook, and the device module itself when tinygrad
    is already imported. Idempotent."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    if "tinygrad" in sys.modules and MODULE not in sys.modules and unsupported_reason() is None:
        sys.modules[MODULE] = importlib.import_module(_impl())


def select_from_env() -> bool:
    """``UOPD=host:port`` (or ``UOPD=1``: the default address) without ``DEV`` selects the UOPD
    device as tinygrad's default (``DEV=UOPD``); returns whether UOPD is the default device."""
    want = os.environ.get("UOPD", "")
    if want and want != "0" and not os.environ.get("DEV"):
        os.environ["DEV"] = "UOPD"
    return os.environ.get("DEV", "").upper().split(":")[0] == "UOPD"


def _pth_hook() -> None:
    """What the optional .pth file runs at interpreter start, only when UOPD or DEV=UOPD is set
    (so other Python processes do not even import this package)."""
    reason = unsupported_reason()
    if reason is not None:
        # Every Python process of this environment runs this: a .pth cannot end the program (it
        # would end pip too), and UOPD=... does not make UOPD the default device; an explicit
        # DEV=UOPD meets the reason again in tinygrad's error.
        print(f"{reason} (UOPD is ignored)", file=sys.stderr)
        install()
        return
    if select_from_env():
        install()


install()


def __getattr__(name: str) -> Any:  # uopd.tinygrad.UopdDevice etc. without importing tinygrad early
    if name in ("UopdDevice", "UopdRunner", "UopdAllocator", "client_for"):
        return getattr(importlib.import_module(_impl()), name)
    raise AttributeError(name)
