"""Run a tinygrad program with the UOPD device, without changing it.

    python -m uopd.tinygrad [--address HOST:PORT] [--device NAME] prog.py args...
    python -m uopd.tinygrad [--address ...] -m package.module args...
    python -m uopd.tinygrad --install-pth | --uninstall-pth

The program runs with UOPD as tinygrad's default device (unless DEV names another) on the server
at --address (else $UOPD when it is an address, else $UOPD_ADDRESS, else 127.0.0.1:50051).

--install-pth writes uopd_tinygrad.pth into this interpreter's site-packages: from then on
``UOPD=host:port python prog.py`` (or ``DEV=UOPD``) selects the device in any program run by that
interpreter; the .pth imports nothing unless one of those variables is set.
"""
from __future__ import annotations

import os
import runpy
import sys
import sysconfig
from pathlib import Path
from typing import Optional

PTH_NAME = "uopd_tinygrad.pth"
PTH_LINE = ("import os; (os.environ.get('UOPD', '0') not in ('', '0') or "
            "os.environ.get('DEV', '').upper().startswith('UOPD')) and "
            "__import__('uopd.tinygrad').tinygrad._pth_hook()\n")


def pth_path() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / PTH_NAME


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--install-pth"]:
        pth_path().write_text(PTH_LINE)
        print(f"wrote {pth_path()}")
        return 0
    if args[:1] == ["--uninstall-pth"]:
        pth_path().unlink(missing_ok=True)
        print(f"removed {pth_path()}")
        return 0
    while args and args[0] in ("--address", "--device"):
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        os.environ["UOPD" if args[0] == "--address" else "UOPD_DEVICE"] = args[1]
        args = args[2:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 0 if args else 2
    os.environ.setdefault("UOPD", "1")
    import uopd.tinygrad as hook
    reason = hook.unsupported_reason()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    hook.select_from_env()
    hook.install()
    if args[0] == "-m" and len(args) > 1:
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, str(Path(args[0]).resolve().parent))
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
