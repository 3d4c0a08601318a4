"""A pure, incremental server-sent-events parser (WHATWG event-stream format)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its `event:` name (None when absent) and joined `data:`."""

    event: str | None
    data: str


class SSEParser:
    """Feed decoded lines (without their line terminator), or raw text chunks; get events.

    Comment lines (`:` prefix), `id:` and `retry:` fields are ignored; multiple `data:`
    lines join with `\\n`; a blank line dispatches the event.
    """

    __slots__ = ("_buffer", "_data", "_event")

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []
        self._buffer = ""

    def feed_line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._event = None
            self._data = []
            return event
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def feed(self, chunk: str) -> list[SSEEvent]:
        """Feed an arbitrary piece of the stream (lines may be split across chunks)."""
        self._buffer += chunk
        events: list[SSEEvent] = []
        lines = self._buffer.splitlines(keepends=True)
        self._buffer = ""
        last = len(lines) - 1
        for i, raw in enumerate(lines):
            # An unterminated last line, or a lone "\r" that may be half of "\r\n", waits.
            if not raw.endswith(("\n", "\r")) or (i == last and raw.endswith("\r")):
                self._buffer = raw
                break
            event = self.feed_line(raw.rstrip("\r\n"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> SSEEvent | None:
        """End of stream: dispatch a pending event that lacked its blank line."""
        if self._buffer:
            line, self._buffer = self._buffer, ""
            self.feed_line(line)
        return self.feed_line("")
