/** Reading `text/event-stream` answers in tests. */

/** Reads a fetch body as text until `done(text)` holds; fails after `timeoutMs`. */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  done: (text: string) => boolean,
  timeoutMs = 2000,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  const deadline = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    while (!done(text)) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`stream ended before the expected data; got:\n${text}`);
      text += decoder.decode(chunk.value, { stream: true });
    }
    return text;
  } finally {
    clearTimeout(deadline);
  }
}

/** The data of every event named `name` in `text`, parsed, in order. */
function eventData(text: string, name: string): unknown[] {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith(`event: ${name}\n`))
    .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 'data: '.length)));
}

/** The data of every `event: reply` in `text`, parsed. */
export function replyEvents(text: string): unknown[] {
  return eventData(text, 'reply');
}

/** The data of every `event: reply.delta` in `text`, parsed. */
export function replyDeltaEvents(text: string): unknown[] {
  return eventData(text, 'reply.delta');
}

/** The data of every `event: reply.omitted` in `text`, parsed. */
export function replyOmittedEvents(text: string): unknown[] {
  return eventData(text, 'reply.omitted');
}

/** The names of the events in `text`, in order (comments left out). */
export function eventNames(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => block.slice('event: '.length, block.indexOf('\n')));
}
