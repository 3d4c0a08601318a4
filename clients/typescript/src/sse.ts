// Server-sent events, read off a response body: lines (LF, CRLF or CR), then messages; a
// complete message's `data` is a run event (heartbeat comments and messages without data
// are skipped; `id` and `event` repeat what the data holds).

import type { Event } from "./types.js";

export class SSEDecoder {
  private data: string[] = [];

  /** One line without its end; a complete event when `line` ends a message. */
  feed(line: string): Event | undefined {
    if (line === "") {
      const data = this.data;
      this.data = [];
      return data.length ? (JSON.parse(data.join("\n")) as Event) : undefined;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.data.push(value);
    return undefined;
  }
}

/** The lines of a byte stream, decoded as UTF-8; each `read` of the stream is awaited
 * through `onRead` (the caller's read timeout). */
export async function* lines(
  body: ReadableStream<Uint8Array>,
  onRead: () => void,
): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let lastWasCR = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      onRead();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer[i];
        if (ch === "\n" && lastWasCR && i === start) {
          start = i + 1; // the LF of a CRLF split across reads
          lastWasCR = false;
          continue;
        }
        lastWasCR = false;
        if (ch === "\n" || ch === "\r") {
          yield buffer.slice(start, i);
          if (ch === "\r") {
            if (buffer[i + 1] === "\n") i++;
            else if (i + 1 === buffer.length) lastWasCR = true;
          }
          start = i + 1;
        }
      }
      buffer = buffer.slice(start);
    }
  } finally {
    reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
