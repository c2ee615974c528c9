"""Sessions: a lease on the buffers and plans a client makes, which ends when the client goes.

A client holds one ``OpenSession`` call open (opened on its first ``CreateBuffer`` or
``Prepare``) and names the session in those calls (the ``uopd-session`` metadata; over the local
socket, ``LocalCall.session``). When the call ends (``close()``, or the process exits or is
killed and its connection closes) the daemon frees everything made in the session at once,
instead of keeping it until it is freed or idle past the daemon's ``--idle_ttl``. What the sync
and asyncio clients share is here; each opens and ends the call its own way.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import grpc

from uopd._errors import UopdError

#: The methods whose resources belong to the session they name.
SESSION_METHODS = frozenset({"CreateBuffer", "Prepare"})
#: The metadata that names the session in a gRPC call.
METADATA_KEY = "uopd-session"


class SessionState:
    """One client's session: ``wanted`` until the client is closed, or the daemon turns out not
    to have sessions; ``id`` and ``call`` (the open ``OpenSession`` call) once opened. ``lock``
    (a ``threading.Lock``, or an ``asyncio.Lock`` made in the loop that needs it) keeps two
    calls from opening two sessions."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.id: Optional[str] = None
        self.call: Any = None
        self.lock: Any = None

    def open_id(self) -> Optional[str]:
        """The session's id while its call is open, else None."""
        call = self.call
        return self.id if call is not None and not call.done() else None

    def ended(self, session: str) -> bool:
        """Whether ``session`` (named by a call that then failed) is no longer open: a new one
        then takes its place, and the call is made again in it."""
        return self.open_id() != session


def metadata_with(metadata: tuple[tuple[str, str], ...],
                  session: Optional[str]) -> tuple[tuple[str, str], ...]:
    return metadata if session is None else (*metadata, (METADATA_KEY, session))


def go_on_without(state: SessionState, error: UopdError) -> bool:
    """Whether the client goes on without a session after ``OpenSession`` failed with ``error``
    (and from then on makes no more: the call would fail again); False: the error is the call's
    to raise, as the call itself would have failed the same way (no right, no server, ...)."""
    if error.code == grpc.StatusCode.UNIMPLEMENTED:
        state.wanted = False  # a daemon from before sessions: resources live as they did there
        return True
    if error.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        state.wanted = False
        warnings.warn(f"uopd: no session ({error.message}); this client's buffers and plans "
                      "stay on the daemon until freed or idle past its --idle_ttl",
                      RuntimeWarning, stacklevel=4)
        return True
    return False
