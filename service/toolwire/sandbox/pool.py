"""A small pool of Deno processes that have started and wait for their run.

Start-up (launching Deno, loading the runner, the bridge and the npm packages)
is most of a short run's time. A pooled process has done that and nothing else:
it has not seen any user code, and it serves exactly one run, then it is
discarded, so no state passes between runs. Its permissions (the run folder,
the network address) and heap are fixed when it starts, so the pool holds
processes for one `SpawnKey` at a time, the last one asked for; it refills in
the background after each run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from .process import DenoProcess, SpawnKey

__all__ = ["WarmPool"]

_log = logging.getLogger(__name__)

Spawner = Callable[[SpawnKey, float], Awaitable[DenoProcess]]
Discarder = Callable[[DenoProcess], Awaitable[None]]
Forgetter = Callable[[DenoProcess], None]


class WarmPool:
    def __init__(self, size: int, spawn: Spawner, discard: Discarder, forget: Forgetter) -> None:
        """`discard` kills a process and cleans up after it; `forget` does the same
        without awaiting (for processes of an event loop that is gone)."""
        self.size = max(0, size)
        self._spawn = spawn
        self._discard = discard
        self._forget = forget
        self._key: SpawnKey | None = None
        self._timeout = 30.0
        self._ready: deque[DenoProcess] = deque()
        self._filling: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def ready_count(self) -> int:
        return len(self._ready)

    async def acquire(self, key: SpawnKey, timeout: float) -> tuple[DenoProcess, bool]:
        """A process for `key`: a pooled one (True) or a freshly started one (False)."""
        self._adopt_loop()
        if key != self._key:
            await self._switch(key)
        self._timeout = timeout
        while self._ready:
            process = self._ready.popleft()
            if process.alive:
                return process, True
            await self._discard(process)
        return await self._spawn(key, timeout), False

    async def release(self, process: DenoProcess) -> None:
        """Take back a process that was acquired but not given a run."""
        if (
            self.size
            and process.alive
            and process.key == self._key
            and process.loop is asyncio.get_running_loop()
            and len(self._ready) < self.size
        ):
            self._ready.append(process)
        else:
            await self._discard(process)

    def refill(self) -> None:
        """Start filling the pool in the background (after a run: a process
        starting during a run would compete with it for the CPU)."""
        if self.size and self._key is not None and (self._filling is None or self._filling.done()):
            self._filling = asyncio.get_running_loop().create_task(self._fill(self._key))

    async def fill(self, key: SpawnKey, timeout: float) -> None:
        """Fill the pool for `key` and wait until it is full."""
        self._adopt_loop()
        if key != self._key:
            await self._switch(key)
        self._timeout = timeout
        if self._filling is not None and not self._filling.done():
            await self._filling
        await self._fill(key)

    async def aclose(self) -> None:
        self._key = None
        if self._filling is not None:
            self._filling.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._filling
            self._filling = None
        while self._ready:
            await self._discard(self._ready.popleft())

    async def _fill(self, key: SpawnKey) -> None:
        failures = 0
        while self._key == key and len(self._ready) < self.size:
            try:
                process = await self._spawn(key, self._timeout)
            except Exception as error:  # a pool that cannot fill just stays cold
                failures += 1
                _log.warning("could not start a pooled Deno process: %s", error)
                if failures >= 3:
                    return
                continue
            if self._key == key and len(self._ready) < self.size:
                self._ready.append(process)
            else:
                await self._discard(process)

    async def _switch(self, key: SpawnKey) -> None:
        self._key = key
        if self._filling is not None:
            self._filling.cancel()
            self._filling = None
        stale = list(self._ready)
        self._ready.clear()
        for process in stale:
            await self._discard(process)

    def _adopt_loop(self) -> None:
        """Processes belong to the event loop that started them; on another
        loop, forget the old ones (killed, their folders removed)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None:
            for process in self._ready:
                self._forget(process)
            self._ready.clear()
            self._filling = None
            self._key = None
        self._loop = loop
