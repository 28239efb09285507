/**
 * Server-sent events (`GET /v1/events`) read from a fetch body: the lines of the
 * stream in, one parsed message per blank line out (the WHATWG rules: `data:` lines
 * join with a newline, `id:` sets the last event id, `retry:` the reconnection
 * delay, lines starting with `:` are comments such as the server's keepalive).
 */

/** One complete message of the stream. */
export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/** Collects lines into messages; remembers the last id and the server's `retry`. */
export class SseParser {
  /** The id of the last message that carried one (sent back as `Last-Event-ID`). */
  lastEventId: string | undefined;
  /** The reconnection delay the server asked for, in milliseconds. */
  retry: number | undefined;
  private data: string[] = [];
  private event = "";
  private id: string | undefined;

  /** The message that `line` (without its line ending) completes, if any. */
  feed(line: string): SseMessage | undefined {
    if (line === "") {
      if (this.id !== undefined) this.lastEventId = this.id;
      const done = this.data.length
        ? { id: this.id, event: this.event || "message", data: this.data.join("\n") }
        : undefined;
      this.data = [];
      this.event = "";
      this.id = undefined;
      return done;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.data.push(value);
    else if (name === "event") this.event = value;
    else if (name === "id" && !value.includes("\0")) this.id = value;
    else if (name === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return undefined;
  }
}

/** The lines of a byte stream, split on `\n`, `\r\n` or `\r`. */
export async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buffer.search(/\r\n|\r|\n/)) !== -1) {
        // a lone \r at the very end may be the first half of \r\n: wait for more
        if (buffer[at] === "\r" && at === buffer.length - 1) break;
        yield buffer.slice(0, at);
        buffer = buffer.slice(at + (buffer.startsWith("\r\n", at) ? 2 : 1));
      }
    }
    buffer += decoder.decode();
    if (buffer) yield buffer;
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
