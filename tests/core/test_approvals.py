"""Approval tickets: one approved call, spent once, before it expires; and the
stream of approval requests an operator answers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from toolwire.approvals import (
    WATCH_QUEUE_SIZE,
    ApprovalBook,
    ApprovalWatchOverflowError,
    TicketNotFoundError,
    TicketStateError,
)
from toolwire.models import ApprovalState, ApprovalTicket, CallContext

ARGS = '{"command": "rm -rf build", "cwd": "/srv"}'


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def make_book(
    clock: FakeClock | None = None,
    *,
    ttl_seconds: float = 600.0,
    max_pending: int = 1000,
    keep_seconds: float = 3600.0,
) -> ApprovalBook:
    return ApprovalBook(
        clock=clock or FakeClock(),
        ttl_seconds=ttl_seconds,
        max_pending=max_pending,
        keep_seconds=keep_seconds,
    )


def ask(
    book: ApprovalBook, *, tool: str = "exec", args: str = ARGS, by: str = "agent-1"
) -> ApprovalTicket:
    return book.request(
        tool_name=tool,
        arguments_json=args,
        summary=f"run {tool}",
        requested_by=by,
        reason="privileged tool",
        context=CallContext(caller_id=by, session_id="s1"),
    )


def spend(
    book: ApprovalBook, ticket_id: str, *, tool: str = "exec", args: str = ARGS, by: str = "agent-1"
) -> ApprovalTicket | str:
    return book.spend(ticket_id, tool_name=tool, arguments_json=args, principal=by)


async def next_change(stream: AsyncIterator[ApprovalTicket]) -> ApprovalTicket:
    return await asyncio.wait_for(anext(stream), 5)


def test_request_creates_a_pending_ticket_with_an_expiry() -> None:
    clock = FakeClock()
    ticket = ask(make_book(clock, ttl_seconds=60))
    assert ticket.ticket_id.startswith("apv_") and len(ticket.ticket_id) > 12
    assert ticket.state is ApprovalState.PENDING
    assert (ticket.created_at, ticket.expires_at) == (1_000.0, 1_060.0)
    assert (ticket.tool_name, ticket.requested_by, ticket.context.session_id) == (
        "exec",
        "agent-1",
        "s1",
    )


def test_an_approved_ticket_is_spent_exactly_once() -> None:
    book = make_book()
    ticket = ask(book)
    approved = book.approve(ticket.ticket_id, by="ops", reason="looks fine")
    assert (approved.state, approved.decided_by, approved.decision_reason) == (
        ApprovalState.APPROVED,
        "ops",
        "looks fine",
    )
    used = spend(book, ticket.ticket_id)
    assert isinstance(used, ApprovalTicket) and used.state is ApprovalState.USED
    assert book.get(ticket.ticket_id).state is ApprovalState.USED
    again = spend(book, ticket.ticket_id)
    assert isinstance(again, str) and "has already been used" in again
    assert "dispatch without a ticket" in again


def test_a_denied_ticket_says_who_denied_it_and_why() -> None:
    book = make_book()
    ticket = ask(book)
    book.deny(ticket.ticket_id, by="ops", reason="not on production")
    refused = spend(book, ticket.ticket_id)
    assert refused == (
        f"approval ticket '{ticket.ticket_id}' was denied by 'ops': not on production"
    )


def test_a_pending_ticket_cannot_be_spent_yet() -> None:
    book = make_book()
    ticket = ask(book)
    refused = spend(book, ticket.ticket_id)
    assert refused == (
        f"approval ticket '{ticket.ticket_id}' is still pending; ask an operator to approve it"
    )
    assert book.get(ticket.ticket_id).state is ApprovalState.PENDING


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"tool": "write_file"}, "was issued for 'exec', not 'write_file'"),
        ({"args": '{"command": "rm -rf /", "cwd": "/srv"}'}, "with other arguments"),
        ({"args": "not json"}, "with other arguments"),
        ({"by": "agent-2"}, "belongs to another principal"),
    ],
)
def test_a_ticket_covers_only_its_own_call(call: dict[str, str], message: str) -> None:
    book = make_book()
    ticket = ask(book)
    book.approve(ticket.ticket_id, by="ops")
    refused = spend(book, ticket.ticket_id, **call)
    assert isinstance(refused, str) and message in refused
    assert book.get(ticket.ticket_id).state is ApprovalState.APPROVED
    assert isinstance(spend(book, ticket.ticket_id), ApprovalTicket)


def test_argument_key_order_and_spacing_do_not_matter() -> None:
    book = make_book()
    ticket = ask(book)
    book.approve(ticket.ticket_id, by="ops")
    reordered = '{ "cwd":"/srv",\n "command": "rm -rf build" }'
    assert isinstance(spend(book, ticket.ticket_id, args=reordered), ApprovalTicket)


def test_arguments_that_are_not_json_compare_as_text() -> None:
    book = make_book()
    ticket = ask(book, args="{broken")
    book.approve(ticket.ticket_id, by="ops")
    assert isinstance(spend(book, ticket.ticket_id, args="{ broken"), str)
    assert isinstance(spend(book, ticket.ticket_id, args="{broken"), ApprovalTicket)


def test_an_unknown_ticket() -> None:
    book = make_book()
    refused = spend(book, "apv_nope")
    assert isinstance(refused, str) and refused.startswith("no approval ticket 'apv_nope'")
    for lookup in (
        book.get,
        lambda i: book.approve(i, by="ops"),
        lambda i: book.deny(i, by="ops"),
    ):
        with pytest.raises(TicketNotFoundError, match="apv_nope"):
            lookup("apv_nope")


def test_pending_tickets_expire() -> None:
    clock = FakeClock()
    book = make_book(clock, ttl_seconds=60)
    ticket = ask(book)
    clock.now += 59.9
    assert book.expire() == [] and book.pending() == [ticket]
    clock.now += 0.1
    expired = book.expire()
    assert [(t.ticket_id, t.state) for t in expired] == [(ticket.ticket_id, ApprovalState.EXPIRED)]
    assert book.expire() == [] and book.pending() == []
    with pytest.raises(TicketStateError, match="is expired, not pending"):
        book.approve(ticket.ticket_id, by="ops")


def test_approved_tickets_expire_unspent() -> None:
    clock = FakeClock()
    book = make_book(clock, ttl_seconds=60)
    ticket = ask(book)
    book.approve(ticket.ticket_id, by="ops")
    clock.now += 60
    refused = spend(book, ticket.ticket_id)
    assert isinstance(refused, str) and "has expired" in refused
    assert book.get(ticket.ticket_id).state is ApprovalState.EXPIRED


def test_settled_tickets_are_forgotten_after_the_keep_time() -> None:
    clock = FakeClock()
    book = make_book(clock, ttl_seconds=60, keep_seconds=100)
    used, denied = ask(book), ask(book, tool="other")
    book.approve(used.ticket_id, by="ops")
    spend(book, used.ticket_id)
    book.deny(denied.ticket_id, by="ops")
    clock.now += 99
    assert book.get(used.ticket_id).state is ApprovalState.USED
    clock.now += 1
    for ticket in (used, denied):
        with pytest.raises(TicketNotFoundError):
            book.get(ticket.ticket_id)


@pytest.mark.parametrize("decided", [ApprovalState.APPROVED, ApprovalState.DENIED])
def test_a_decision_is_final(decided: ApprovalState) -> None:
    book = make_book()
    ticket = ask(book)
    if decided is ApprovalState.APPROVED:
        book.approve(ticket.ticket_id, by="ops")
    else:
        book.deny(ticket.ticket_id, by="ops")
    for decide in (book.approve, book.deny):
        with pytest.raises(TicketStateError, match=f"is {decided.value}, not pending"):
            decide(ticket.ticket_id, by="someone-else")
    assert book.get(ticket.ticket_id).decided_by == "ops"


def test_a_retried_request_gets_the_same_pending_ticket() -> None:
    book = make_book()
    first = ask(book)
    assert ask(book, args='{"cwd": "/srv", "command": "rm -rf build"}') == first
    assert ask(book, by="agent-2") != first
    assert ask(book, tool="other") != first
    assert ask(book, args="{}") != first
    assert len(book.pending()) == 4
    book.approve(first.ticket_id, by="ops")
    assert ask(book).ticket_id != first.ticket_id


def test_the_oldest_pending_ticket_makes_room() -> None:
    book = make_book(max_pending=3)
    tickets = [ask(book, args=f'{{"n": {i}}}') for i in range(3)]
    book.approve(tickets[1].ticket_id, by="ops")
    newer = [ask(book, args='{"n": 3}'), ask(book, args='{"n": 4}')]
    assert book.get(tickets[0].ticket_id).state is ApprovalState.EXPIRED
    assert book.get(tickets[1].ticket_id).state is ApprovalState.APPROVED
    assert book.pending() == [tickets[2], *newer]
    ask(book, args='{"n": 5}')
    assert book.get(tickets[2].ticket_id).state is ApprovalState.EXPIRED
    assert len(book.pending()) == 3


def test_concurrent_spends_from_threads_let_exactly_one_through() -> None:
    book = make_book()
    ticket = ask(book)
    book.approve(ticket.ticket_id, by="ops")
    threads = 16
    barrier = threading.Barrier(threads)
    results: list[ApprovalTicket | str] = []
    results_lock = threading.Lock()

    def race() -> None:
        barrier.wait()
        outcome = spend(book, ticket.ticket_id)
        with results_lock:
            results.append(outcome)

    workers = [threading.Thread(target=race) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    spent = [r for r in results if isinstance(r, ApprovalTicket)]
    assert len(results) == threads and len(spent) == 1
    assert all("already been used" in r for r in results if isinstance(r, str))


async def test_watch_starts_with_pending_tickets_then_follows_changes() -> None:
    book = make_book()
    first, second = ask(book), ask(book, tool="other")
    book.approve(first.ticket_id, by="ops")
    third = ask(book, tool="third")
    stream = book.watch()
    assert await next_change(stream) == second
    # Changes made after the snapshot was taken, including to tickets already
    # shown, arrive once each and in order.
    book.deny(second.ticket_id, by="ops", reason="no")
    spend(book, first.ticket_id)
    assert await next_change(stream) == third
    changes = [await next_change(stream) for _ in range(2)]
    assert [(c.ticket_id, c.state) for c in changes] == [
        (second.ticket_id, ApprovalState.DENIED),
        (first.ticket_id, ApprovalState.USED),
    ]
    fourth = ask(book, tool="fourth")
    assert await next_change(stream) == fourth
    await stream.aclose()


async def test_watch_has_no_gap_and_no_duplicate_at_the_snapshot() -> None:
    book = make_book()
    before = ask(book)
    stream = book.watch()
    assert await next_change(stream) == before
    after = ask(book, tool="after")
    assert ask(book, tool="after") == after  # a retry publishes nothing
    book.close()
    assert [t async for t in stream] == [after]


async def test_watch_sees_changes_made_on_other_threads() -> None:
    clock = FakeClock()
    book = make_book(clock, ttl_seconds=60)
    stream = book.watch()
    waiting = asyncio.ensure_future(next_change(stream))
    await asyncio.sleep(0)
    ticket = await asyncio.to_thread(ask, book)
    assert await waiting == ticket
    clock.now += 60
    expired = await asyncio.to_thread(book.expire)
    assert await next_change(stream) == expired[0]
    assert expired[0].state is ApprovalState.EXPIRED
    await stream.aclose()


async def test_an_evicted_ticket_is_published_as_expired() -> None:
    book = make_book(max_pending=1)
    old = ask(book)
    stream = book.watch()
    assert await next_change(stream) == old
    new = ask(book, tool="new")
    evicted = await next_change(stream)
    assert (evicted.ticket_id, evicted.state) == (old.ticket_id, ApprovalState.EXPIRED)
    assert await next_change(stream) == new
    await stream.aclose()


async def test_a_watcher_that_falls_behind_is_told_to_start_again() -> None:
    book = make_book(max_pending=WATCH_QUEUE_SIZE * 2)
    stream = book.watch()
    first = ask(book, args='{"n": -1}')
    assert await next_change(stream) == first
    for i in range(WATCH_QUEUE_SIZE + 1):
        ask(book, args=f'{{"n": {i}}}')
    with pytest.raises(ApprovalWatchOverflowError, match="start a new watch"):
        await next_change(stream)
    fresh = book.watch()
    assert (await next_change(fresh)) == first
    await fresh.aclose()


async def test_close_ends_every_watch() -> None:
    book = make_book()
    ticket = ask(book)
    streams = [book.watch(), book.watch()]
    for stream in streams:
        assert await next_change(stream) == ticket
    waiting = [asyncio.ensure_future(anext(s, None)) for s in streams]
    await asyncio.sleep(0)
    book.close()
    assert await asyncio.wait_for(asyncio.gather(*waiting), 5) == [None, None]
    assert [t async for t in book.watch()] == []
