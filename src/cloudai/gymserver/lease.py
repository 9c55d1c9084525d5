"""``LeaseClient``: sandboxes leased from a control plane, each recorded in the results dir while it is held.

The lease protocol (JSON over HTTP; ``cloudai serve --lease`` is one such control plane):

* ``POST {control}/sandboxes`` with ``{"environment"?: str, "options"?: {..}}`` ->
  ``{"id": str, "status": "pending" | "ready" | "failed", "url"?: str, "error"?: str, "idle_timeout_s"?: number}``.
* ``GET {control}/sandboxes/{id}`` -> the same object; polled with backoff until ``ready`` (then ``url`` speaks
  the OpenEnv protocol) or ``failed`` (``error`` says why), for at most ``lease_timeout_s``.
* ``DELETE {control}/sandboxes/{id}`` releases it (2xx; 404 means it is already gone, which is as good).
* A control plane that expires idle leases says so in ``idle_timeout_s``; ``keep_alive`` renews with a GET once a
  third of it has passed.

Guarantees: a lease is recorded as ``<record_dir>/leases/<name>.json`` the moment its id is known and the record is
removed once it is released, so ``release_recorded`` (``cloudai run --resume``) frees what a SIGKILLed run left.
``<name>`` is the id percent-escaped (``record_name``: two ids never share a record). An id is data from the
control plane: one that is empty, over ``MAX_ID`` bytes, holds ``/``, ``..`` or a control character is refused
(``GymServerError`` naming the control plane) and that sandbox is released.
``acquire`` releases what it took when it fails or is interrupted. A release is retried; one that still fails is a
``GymServerError`` naming the sandbox, the record and how to free it by hand; never a silent leak. The POST that
creates a sandbox is never retried (a lost reply may have created one); GETs and DELETEs are. ``Authorization:
Bearer <token>`` (from ``$token_var``) goes on every call; the token never appears in a message or a record.

Bounds (``cloudai.gymserver.bounded``): every call ends by a total deadline (``timeout_s``; ``acquire`` as a whole,
its POST included, by ``lease_timeout_s``), however slowly the control plane sends, and reads at most ``MAX_REPLY``
bytes. What the control plane says (an error, an id, a URL) reaches messages only through
``cloudai.untrusted.printable``: cut and without control characters.

Thread safety: one ``LeaseClient`` may serve many environments at once; ``acquire``/``release``/``close`` may be
called from any thread (the bookkeeping is under a lock, and httpx's client is thread-safe).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cloudai.atomicfile import atomic_write
from cloudai.errors import GymServerError
from cloudai.gymserver.bounded import Overdue, Reply, TooLarge, client_limits, fetch
from cloudai.untrusted import printable

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("cloudai.gymserver.lease")
RECORDS = "leases"  # <record_dir>/leases/<id>.json: the leases a run holds
_STATUSES = ("pending", "ready", "failed")
MAX_REPLY = 1 << 20  # a lease call's reply is one small JSON object
MAX_ID = 256  # bytes of a lease id (UTF-8)
POLL_MAX_S = 0.25  # a pending sandbox is polled at most this far apart: a 1-s doubling found it ready up to 1 s late
_NAME_MAX = 200  # characters of a record file's name before the id is hashed instead


@dataclass(frozen=True)
class Lease:
    """A sandbox held from ``control_url``: ``url`` speaks OpenEnv once it is ready."""

    id: str
    control_url: str
    url: str = ""
    idle_timeout_s: float | None = None


class LeaseClient:
    """Leases sandboxes from the control plane at ``control_url`` (see the module docstring)."""

    def __init__(
        self,
        control_url: str,
        *,
        token_var: str = "CLOUDAI_GYM_TOKEN",
        environment: str | None = None,
        options: Mapping[str, Any] | None = None,
        timeout_s: float = 30.0,
        lease_timeout_s: float = 120.0,
        record_dir: Path | None = None,
        release_tries: int = 3,
    ) -> None:
        self.control_url = control_url.rstrip("/")
        self._token_var = token_var
        self._token = os.environ.get(token_var) or None
        self._body: dict[str, Any] = {"environment": environment} if environment else {}
        if options:
            self._body["options"] = dict(options)
        self._timeout_s, self._lease_timeout_s = timeout_s, lease_timeout_s
        self._records = None if record_dir is None else record_dir / RECORDS
        self._release_tries = max(1, release_tries)
        self._lock = threading.Lock()
        self._held: dict[str, Lease] = {}
        self._touched: dict[str, float] = {}
        self._http: httpx.Client | None = None

    # -- the public contract ---------------------------------------------------------------------

    def acquire(self) -> Lease:
        """A ready sandbox: POST, then GET with backoff until ready. Failure or interrupt: released, then raised."""
        deadline = time.monotonic() + self._lease_timeout_s
        reply = self._call("POST", "/sandboxes", "lease", body=self._body, deadline=deadline)
        try:
            first = self._sandbox(reply, "lease")
        except GymServerError as exc:  # a sandbox may exist under that id: release it if the id can name it
            given = reply.get("id") if isinstance(reply, dict) else None
            if isinstance(given, str) and given and (note := self._release_after_failure(Lease(given, ""))):
                raise GymServerError(f"{exc}; {note}") from None
            raise
        lease = Lease(first["id"], self.control_url)
        try:
            self._hold(lease)
            ready = self._wait_ready(first, deadline)
            lease = Lease(lease.id, self.control_url, ready["url"], _number(ready.get("idle_timeout_s")))
            self._hold(lease)
        except BaseException as exc:  # an interrupt, a failed or slow start, a record that cannot be written
            note = self._release_after_failure(lease)
            if note and isinstance(exc, GymServerError):
                raise GymServerError(f"{exc}; {note}") from exc
            raise
        return lease

    def release(self, lease: Lease) -> None:
        """DELETE the sandbox (retried with backoff; 404 counts as released) and remove its record."""
        cause = ""
        for attempt in range(self._release_tries):
            if attempt:
                time.sleep(0.1 * 2 ** (attempt - 1))
            try:
                response = self._fetch("DELETE", _path(lease.id), None, time.monotonic() + self._timeout_s)
            except Exception as exc:  # transport errors, a reply too slow or too large: retried
                cause = _describe(exc)
                continue
            if response.status_code < 300 or response.status_code == 404:
                self._drop(lease)
                return
            cause = f"HTTP {response.status_code}: {_text(response)}"
        where = f"; its record stays in {self._record(lease)}" if self._records is not None else ""
        by_hand = printable(self.control_url + _path(lease.id))
        raise self._error(
            f"sandbox {printable(lease.id)} NOT released after {self._release_tries} tries (last: {cause}){where}; "
            f"`cloudai run --resume` retries it, or release it by hand: DELETE {by_hand}",
            "release",
        )

    def held(self) -> list[Lease]:
        """The leases taken and not yet released, oldest first."""
        with self._lock:
            return list(self._held.values())

    def alive(self, lease: Lease) -> bool:
        """Whether the sandbox still answers ``GET /health`` (one try, short timeout)."""
        try:
            response = fetch(self._client(), "GET", f"{lease.url}/health", deadline_s=min(2.0, self._timeout_s),
                             max_bytes=MAX_REPLY)  # fmt: skip
        except Exception:
            return False
        return response.status_code == 200

    def keep_alive(self, lease: Lease) -> None:
        """Renew the lease (a GET) once a third of the control plane's idle timeout has passed since the last."""
        if lease.idle_timeout_s is None:
            return
        with self._lock:
            last = self._touched.get(lease.id, 0.0)
            if time.monotonic() - last < lease.idle_timeout_s / 3:
                return
            self._touched[lease.id] = time.monotonic()
        try:
            self._call("GET", _path(lease.id), "renew")
        except GymServerError as exc:
            log.warning("renewing sandbox %s failed: %s", printable(lease.id), exc)

    def close(self) -> None:
        """Release every lease still held; raise one ``GymServerError`` listing those that could not be."""
        failures = []
        for lease in self.held():
            try:
                self.release(lease)
            except GymServerError as exc:
                failures.append(str(exc))
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()
        if failures:
            raise GymServerError("; ".join(failures))

    # -- the protocol ----------------------------------------------------------------------------

    def _wait_ready(self, sandbox: dict[str, Any], deadline: float) -> dict[str, Any]:
        delay, polled = 0.02, False  # polled at least once: a slow POST alone (a loaded machine) is no timeout
        while True:
            if sandbox["status"] == "ready":
                return sandbox
            if sandbox["status"] == "failed":
                error = printable(sandbox.get("error") or "no error given")
                raise self._error(f"sandbox {sandbox['id']} failed to start: {error}", "lease")
            remaining = deadline - time.monotonic()
            if remaining <= 0 and polled:
                raise self._error(
                    f"sandbox {sandbox['id']} not ready after {self._lease_timeout_s:g}s (still "
                    f"{sandbox['status']}); raise cmd_args.env_lease_timeout_s if it needs longer",
                    "lease",
                )
            time.sleep(max(0.0, min(delay, remaining)))
            delay = min(delay * 2, POLL_MAX_S)
            if time.monotonic() < deadline or not polled:  # else the loop says it is not ready
                polled, until = True, max(deadline, time.monotonic() + POLL_MAX_S)
                try:
                    reply = self._call("GET", _path(sandbox["id"]), "lease", deadline=until)
                except GymServerError:
                    if time.monotonic() < deadline:
                        raise
                    continue  # the deadline ran out during the poll (a loaded machine): the loop says not ready
                sandbox = self._sandbox(reply, "lease")

    def _call(
        self, method: str, path: str, call: str, body: dict[str, Any] | None = None, deadline: float | None = None
    ) -> Any:
        """One JSON call, ended by ``deadline`` (monotonic; each try by ``timeout_s`` at most); a GET is retried on
        transport errors and 5xx, a POST never. A reply over ``MAX_REPLY`` bytes is an error at once."""
        tries = 3 if method == "GET" else 1
        cause = ""
        for attempt in range(tries):
            if attempt:
                time.sleep(0.1 * 2 ** (attempt - 1))
            end = min(time.monotonic() + self._timeout_s, deadline or float("inf"))
            if end <= time.monotonic():
                break
            try:
                response = self._fetch(method, path, body, end)
            except TooLarge as exc:
                raise self._error(f"{method} {path}: {exc}: a lease reply is one small JSON object", call) from None
            except Exception as exc:
                cause = _describe(exc)
                continue
            if response.status_code >= 500 and attempt + 1 < tries:
                cause = f"HTTP {response.status_code}"
                continue
            return self._reply(response, f"{method} {path}", call)
        raise self._error(f"{method} {path} failed {tries} time(s) (last: {cause or 'out of time'})", call)

    def _fetch(self, method: str, path: str, body: dict[str, Any] | None, end: float) -> Reply:
        return fetch(self._client(), method, path, body=body, deadline_s=end - time.monotonic(), max_bytes=MAX_REPLY)

    def _reply(self, response: Reply, request: str, call: str) -> Any:
        status = response.status_code
        if status in (401, 403):
            var = self._token_var
            why = f"refused the token in ${var}" if self._token else f"wants a bearer token; set ${var}"
            raise self._error(f"{request}: HTTP {status}: the control plane {why}", call)
        if status == 429:
            raise self._error(f"{request}: HTTP 429: the control plane is at its lease limit ({_text(response)})", call)
        if status >= 300:
            raise self._error(f"{request}: HTTP {status}: {_text(response)}", call)
        try:
            return response.json()
        except ValueError:
            raise self._error(f"{request}: malformed JSON: {printable(repr(response.text), 200)}", call) from None

    def _sandbox(self, body: Any, call: str) -> dict[str, Any]:
        """A control plane's sandbox object, checked: an id, a known status, a URL when ready."""
        if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not body["id"]:
            raise self._error(f"malformed sandbox (no string 'id'): {printable(body, 200)}", call)
        if why := id_problem(body["id"]):
            raise self._error(f"the control plane gave a malformed lease id {printable(body['id'], 60)}: {why}", call)
        if body.get("status") not in _STATUSES:
            status = printable(repr(body.get("status")), 60)
            raise self._error(f"sandbox {body['id']}: status {status} is none of {_STATUSES}", call)
        url = body.get("url")
        if body["status"] == "ready" and (not isinstance(url, str) or not re.match(r"^https?://[^/\s]+\S*$", url)):
            raise self._error(f"sandbox {body['id']} is ready without an http(s) 'url': {printable(repr(url))}", call)
        return {**body, "url": url.rstrip("/") if isinstance(url, str) else ""}

    # -- bookkeeping -----------------------------------------------------------------------------

    def _hold(self, lease: Lease) -> None:
        with self._lock:
            self._held[lease.id] = lease
            self._touched[lease.id] = time.monotonic()
        if self._records is not None:
            record = {"id": lease.id, "control_url": lease.control_url, "url": lease.url, "token_var": self._token_var}
            atomic_write(self._record(lease), json.dumps(record) + "\n")

    def _drop(self, lease: Lease) -> None:
        with self._lock:
            self._held.pop(lease.id, None)
            self._touched.pop(lease.id, None)
        if self._records is not None:
            self._record(lease).unlink(missing_ok=True)

    def _release_after_failure(self, lease: Lease) -> str:
        """Release a lease whose start failed; a note for the error when that failed too."""
        try:
            self.release(lease)
        except GymServerError as exc:
            return f"and releasing it failed: {exc}"
        return ""

    def _record(self, lease: Lease) -> Path:
        assert self._records is not None
        return self._records / f"{record_name(lease.id)}.json"

    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
                self._http = httpx.Client(base_url=self.control_url, headers=headers, timeout=self._timeout_s,
                                          limits=client_limits())  # fmt: skip
            return self._http

    def _error(self, message: str, call: str) -> GymServerError:
        if self._token:
            message = message.replace(self._token, "***")
        return GymServerError(message, where=self.control_url, call=call)


def release_recorded(run_dir: Path) -> list[str]:
    """Release every lease recorded under ``run_dir`` (a run that was SIGKILLed left them); one line per lease."""
    lines = []
    for path in sorted(run_dir.rglob(f"{RECORDS}/*.json")):
        try:
            record = json.loads(path.read_text())
            lease = Lease(str(record["id"]), str(record["control_url"]), str(record.get("url", "")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            lines.append(f"warning: unreadable lease record {path}: {exc}")
            continue
        client = LeaseClient(lease.control_url, token_var=str(record.get("token_var", "CLOUDAI_GYM_TOKEN")),
                             record_dir=path.parent.parent)  # fmt: skip
        try:
            client.release(lease)
            path.unlink(missing_ok=True)  # a record an earlier cloudai named otherwise
            lines.append(f"released sandbox {printable(lease.id)} ({lease.control_url}), left by the earlier run")
        except GymServerError as exc:
            lines.append(f"warning: {exc}")
        finally:
            client.close()
    return lines


def id_problem(lease_id: str) -> str:
    """Why a control plane's lease id cannot be used as one ("" when it can): it names a record file and goes
    into URLs and messages, so it is short, printable, and no path."""
    if not lease_id:
        return "it is empty"
    if len(lease_id.encode(errors="surrogatepass")) > MAX_ID:
        return f"it is over {MAX_ID} bytes"
    if "/" in lease_id or "\\" in lease_id or ".." in lease_id:
        return "it holds '/', '\\' or '..'"
    if not lease_id.isprintable():
        return "it holds a control character"
    return ""


def record_name(lease_id: str) -> str:
    """The record file's name (no suffix) for ``lease_id``: the id percent-escaped (reversible, so two ids never
    share a name), or, past ``_NAME_MAX`` characters, ``%%`` and its SHA-256 (no escaped id holds ``%%``)."""
    name = quote(lease_id, safe="")
    if len(name) <= _NAME_MAX:
        return name
    return "%%" + hashlib.sha256(lease_id.encode(errors="surrogatepass")).hexdigest()


def _path(lease_id: str) -> str:
    """``/sandboxes/<id>``, the id quoted: a control plane's id is data, never a path of its own."""
    return f"/sandboxes/{quote(lease_id, safe='')}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _text(response: Reply) -> str:
    """A control plane's error, made printable: its JSON ``error``/``detail`` if it gave one, else the start of the
    body."""
    try:
        body = response.json()
    except ValueError:
        return printable(response.text, 200) or "(empty body)"
    if isinstance(body, dict) and (body.get("error") or body.get("detail")):
        return printable(body.get("error") or body.get("detail"))
    return printable(body, 200)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, Overdue):
        return str(exc)
    text = printable(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
