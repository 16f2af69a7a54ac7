"""The book of approval tickets: calls that wait for a person's yes or no.

A ticket covers exactly one call (tool, arguments, requester) and can be spent
once, before it expires. Expiry is lazy — every operation first settles the
clock — so the book needs no background task. Changes stream to watchers the
way registry events do: each watcher has a bounded buffer and is woken on its
own event loop, so the book may be used from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable

from .errors import ToolwireError
from .models import ApprovalState, ApprovalTicket, CallContext

WATCH_QUEUE_SIZE = 1000
TICKET_PREFIX = "apv_"

_OPEN = (ApprovalState.PENDING, ApprovalState.APPROVED)
"""States that still expire; every other state is final."""

_Call = tuple[str, str, str]
"""Requester, tool and canonical arguments: what makes two requests the same."""


class TicketNotFoundError(ToolwireError):
    def __init__(self, ticket_id: str) -> None:
        super().__init__(
            f"no approval ticket '{ticket_id}'; it never existed or expired and was "
            "forgotten — dispatch the call again to request a new approval"
        )
        self.ticket_id = ticket_id


class TicketStateError(ToolwireError):
    """Only a pending ticket can be decided; a decision is never revised."""

    def __init__(self, ticket: ApprovalTicket) -> None:
        super().__init__(
            f"approval ticket '{ticket.ticket_id}' is {ticket.state.value}, not pending; "
            "only a pending ticket can be approved or denied"
        )
        self.ticket = ticket


class ApprovalWatchOverflowError(ToolwireError):
    def __init__(self) -> None:
        super().__init__(
            f"this approval watcher fell more than {WATCH_QUEUE_SIZE} changes behind; "
            "start a new watch (it begins with every pending ticket)"
        )


def canonical_arguments(arguments_json: str) -> str:
    """One spelling per argument object, so key order and spacing never decide
    whether an approval covers a call. Text that is not JSON compares as is."""
    try:
        return json.dumps(json.loads(arguments_json), sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        return arguments_json


def refusal(ticket: ApprovalTicket, *, tool_name: str, arguments_json: str, principal: str) -> str:
    """Why `ticket` cannot pay for this call, or "" if it can.

    The principal is checked first so that a ticket's tool and fate are told
    only to the one who asked for it.
    """
    name = f"approval ticket '{ticket.ticket_id}'"
    again = "dispatch without a ticket to request a new approval"
    if ticket.requested_by != principal:
        return f"{name} belongs to another principal; {again}"
    if ticket.state is ApprovalState.PENDING:
        return f"{name} is still pending; ask an operator to approve it"
    if ticket.state is ApprovalState.DENIED:
        why = f": {ticket.decision_reason}" if ticket.decision_reason else ""
        return f"{name} was denied by '{ticket.decided_by}'{why}"
    if ticket.state is ApprovalState.USED:
        return f"{name} has already been used; {again}"
    if ticket.state is ApprovalState.EXPIRED:
        return f"{name} has expired; {again}"
    exact = "approval covers exactly the call it was requested for"
    if ticket.tool_name != tool_name:
        return f"{name} was issued for '{ticket.tool_name}', not '{tool_name}'; {exact}"
    if canonical_arguments(ticket.arguments_json) != canonical_arguments(arguments_json):
        return f"{name} was issued for '{ticket.tool_name}' with other arguments; {exact}"
    return ""


class _Watcher:
    """One watch's buffer of changes; filled under the book's lock from any
    thread, drained on the watcher's own loop."""

    def __init__(self, lock: threading.Lock, loop: asyncio.AbstractEventLoop) -> None:
        self._lock = lock
        self._loop = loop
        self._wake = asyncio.Event()
        self._changes: deque[ApprovalTicket] = deque()
        self._overflowed = False
        self._closed = False

    def push(self, ticket: ApprovalTicket) -> None:
        """Called with the book's lock held."""
        if self._overflowed or self._closed:
            return
        if len(self._changes) >= WATCH_QUEUE_SIZE:
            self._changes.clear()
            self._overflowed = True
        else:
            self._changes.append(ticket)
        self._signal()

    def close(self) -> None:
        """Called with the book's lock held; changes already buffered are still
        delivered."""
        self._closed = True
        self._signal()

    def _signal(self) -> None:
        with contextlib.suppress(RuntimeError):  # the watcher's loop closed
            self._loop.call_soon_threadsafe(self._wake.set)

    async def next(self) -> ApprovalTicket | None:
        """The next change, or None once the book is closed."""
        while True:
            self._wake.clear()
            with self._lock:
                if self._overflowed:
                    raise ApprovalWatchOverflowError()
                if self._changes:
                    return self._changes.popleft()
                if self._closed:
                    return None
            await self._wake.wait()


class ApprovalBook:
    def __init__(
        self,
        *,
        ttl_seconds: float = 600.0,
        clock: Callable[[], float] = time.time,
        max_pending: int = 1000,
        keep_seconds: float = 3600.0,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        if keep_seconds < 0:
            raise ValueError("keep_seconds must not be negative")
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_pending = max_pending
        self._keep = keep_seconds
        self._lock = threading.Lock()
        self._tickets: dict[str, ApprovalTicket] = {}
        """In order of creation, so the first pending ticket is the oldest."""
        self._settled_at: dict[str, float] = {}
        """When each ticket reached a final state: the start of its keep time."""
        self._calls: dict[str, _Call] = {}
        self._pending_calls: dict[_Call, str] = {}
        """The pending ticket of each call, so a retry finds it without a scan."""
        self._watchers: set[_Watcher] = set()
        self._closed = False

    def request(
        self,
        *,
        tool_name: str,
        arguments_json: str,
        summary: str,
        requested_by: str,
        reason: str,
        context: CallContext,
    ) -> ApprovalTicket:
        """A pending ticket for this call. A model that retries gets the ticket
        it already has, so an operator sees one request, not a pile."""
        call = (requested_by, tool_name, canonical_arguments(arguments_json))
        with self._lock:
            now = self._clock()
            self._settle(now)
            if (same := self._pending_calls.get(call)) is not None:
                return self._tickets[same]
            pending = self._pending()
            for oldest in pending[: max(0, len(pending) - self._max_pending + 1)]:
                self._finish(oldest, ApprovalState.EXPIRED, now)
            ticket = ApprovalTicket(
                ticket_id=TICKET_PREFIX + secrets.token_urlsafe(12),
                tool_name=tool_name,
                arguments_json=arguments_json,
                summary=summary,
                requested_by=requested_by,
                reason=reason,
                created_at=now,
                expires_at=now + self._ttl,
                context=context,
            )
            self._calls[ticket.ticket_id] = call
            return self._put(ticket)

    def approve(self, ticket_id: str, *, by: str, reason: str = "") -> ApprovalTicket:
        return self._decide(ticket_id, ApprovalState.APPROVED, by, reason)

    def deny(self, ticket_id: str, *, by: str, reason: str = "") -> ApprovalTicket:
        return self._decide(ticket_id, ApprovalState.DENIED, by, reason)

    def spend(
        self, ticket_id: str, *, tool_name: str, arguments_json: str, principal: str
    ) -> ApprovalTicket | str:
        """The ticket, now used, if it pays for exactly this call; otherwise a
        message the caller can act on, and the ticket is left as it was."""
        with self._lock:
            now = self._clock()
            self._settle(now)
            ticket = self._tickets.get(ticket_id)
            if ticket is None:
                return (
                    f"no approval ticket '{ticket_id}'; dispatch without a ticket "
                    "to request a new approval"
                )
            why = refusal(
                ticket, tool_name=tool_name, arguments_json=arguments_json, principal=principal
            )
            if why:
                return why
            return self._finish(ticket, ApprovalState.USED, now)

    def get(self, ticket_id: str) -> ApprovalTicket:
        with self._lock:
            self._settle(self._clock())
            return self._find(ticket_id)

    def pending(self) -> list[ApprovalTicket]:
        """Oldest first."""
        with self._lock:
            self._settle(self._clock())
            return self._pending()

    def expire(self) -> list[ApprovalTicket]:
        """Expire what is due and forget what has been kept long enough; the
        newly expired tickets."""
        with self._lock:
            return self._settle(self._clock())

    async def watch(self) -> AsyncGenerator[ApprovalTicket, None]:
        """Every pending ticket, oldest first, then every change as it happens.

        The snapshot and the subscription are taken under one lock, when the
        first item is requested, so no change falls between them or shows twice.
        """
        watcher = _Watcher(self._lock, asyncio.get_running_loop())
        with self._lock:
            self._settle(self._clock())
            if self._closed:
                return
            snapshot = self._pending()
            self._watchers.add(watcher)
        try:
            for ticket in snapshot:
                yield ticket
            while (change := await watcher.next()) is not None:
                yield change
        finally:
            with self._lock:
                self._watchers.discard(watcher)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for watcher in self._watchers:
                watcher.close()
            self._watchers.clear()

    # The helpers below run with the lock held.

    def _settle(self, now: float) -> list[ApprovalTicket]:
        """Forget first, then expire: a ticket that expires now is still there
        to say so."""
        for ticket_id, settled_at in list(self._settled_at.items()):
            if now - settled_at >= self._keep:
                del self._settled_at[ticket_id], self._tickets[ticket_id], self._calls[ticket_id]
        return [
            self._finish(ticket, ApprovalState.EXPIRED, now)
            for ticket in list(self._tickets.values())
            if ticket.state in _OPEN and now >= ticket.expires_at
        ]

    def _pending(self) -> list[ApprovalTicket]:
        return [t for t in self._tickets.values() if t.state is ApprovalState.PENDING]

    def _find(self, ticket_id: str) -> ApprovalTicket:
        ticket = self._tickets.get(ticket_id)
        if ticket is None:
            raise TicketNotFoundError(ticket_id)
        return ticket

    def _decide(self, ticket_id: str, state: ApprovalState, by: str, reason: str) -> ApprovalTicket:
        with self._lock:
            now = self._clock()
            self._settle(now)
            ticket = self._find(ticket_id)
            if ticket.state is not ApprovalState.PENDING:
                raise TicketStateError(ticket)
            update = {"decided_by": by, "decision_reason": reason}
            if state is ApprovalState.APPROVED:
                return self._put(ticket.model_copy(update={"state": state, **update}))
            return self._finish(ticket, state, now, **update)

    def _finish(
        self, ticket: ApprovalTicket, state: ApprovalState, now: float, **update: str
    ) -> ApprovalTicket:
        self._settled_at[ticket.ticket_id] = now
        return self._put(ticket.model_copy(update={"state": state, **update}))

    def _put(self, ticket: ApprovalTicket) -> ApprovalTicket:
        self._tickets[ticket.ticket_id] = ticket
        call = self._calls[ticket.ticket_id]
        if ticket.state is ApprovalState.PENDING:
            self._pending_calls[call] = ticket.ticket_id
        elif self._pending_calls.get(call) == ticket.ticket_id:
            del self._pending_calls[call]
        for watcher in self._watchers:
            watcher.push(ticket)
        return ticket
