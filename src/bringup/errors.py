"""The one exception tree of bringup.

Failed trials are data (:class:`bringup.verdict.TrialResult`), never exceptions.
Exceptions are for misuse and for conditions the user must fix before anything runs::

    BringupError
    ├── SpecError            the spec file is malformed (names file, line, field)
    ├── ModelNotFoundError   the model path does not exist
    ├── EngineError
    │   ├── UnknownEngineError       no adapter is registered under that name
    │   └── EngineNotInstalledError  the adapter exists but its binary/package is missing
    ├── PortBusyError        a pinned port already serves something we did not start
    └── StoreError           the results database cannot be opened or migrated, or is
                             another program's or a newer bringup's (left untouched)

Every message is one sentence that says what to fix; the CLI prints it and exits non-zero.

Apart from that tree, :class:`RequestError` is a request the server under test failed: its
failure, not the user's. Inside a trial it becomes a verdict; the CLI prints any that
escapes a command as one sentence and exits 1.
"""

from __future__ import annotations


class BringupError(Exception):
    """Base of every error bringup raises on purpose."""

    exit_code = 2


class SpecError(BringupError):
    pass


class ModelNotFoundError(BringupError):
    pass


class EngineError(BringupError):
    pass


class UnknownEngineError(EngineError):
    pass


class EngineNotInstalledError(EngineError):
    pass


class TrialFailedError(BringupError):
    """The trial ran and failed: a verdict on the configuration, not a user mistake."""

    exit_code = 1


class PortBusyError(BringupError):
    exit_code = 3


class StoreError(BringupError):
    pass


class RequestError(Exception):
    """The server answered with an error, answered nonsense, or did not answer in time.

    ``kind`` says which, set where the failure was seen (the exception's type or the HTTP
    status), so no caller reads the message's wording: ``timeout`` and ``connection`` (no
    HTTP answer), ``server_error`` (5xx), ``client_error`` (4xx), ``malformed`` (an answer
    that is not the expected JSON).
    """

    def __init__(self, message: str, status: int = 0, body: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        if not kind:
            kind = "server_error" if status >= 500 else "client_error" if status >= 400 else ""
        self.kind = kind or "malformed"
