import autocannon from 'autocannon';
import { type Agent, request } from 'node:http';

let nextSession = 0;

/** A `POST /v1/messages` body with a session nobody used before. */
export function newSessionBody(): string {
  nextSession += 1;
  return JSON.stringify({ session_id: `bench-${nextSession}`, user_id: 'bench-user', text: 'hello' });
}

/** How long a load lasts: seconds, or a number of messages (each answered before it ends). */
export type LoadLength = { durationS: number } | { messages: number };

/**
 * autocannon against `POST {url}/v1/messages` for `length`, each request in a new session. Throws
 * when any answer is not 2xx, errs or times out: the figures would not be comparable.
 */
export async function loadMessages(
  url: string,
  length: LoadLength,
  connections: number,
): Promise<autocannon.Result> {
  const result = await autocannon({
    url: `${url}/v1/messages`,
    method: 'POST',
    connections,
    ...('messages' in length ? { amount: length.messages } : { duration: length.durationS }),
    headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (req) => ({ ...req, body: newSessionBody() }) }],
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors, ${result.timeouts} timeouts — the figures would not be comparable`,
    );
  }
  return result;
}

/** One POST of a new session's message to `url` over `agent`; resolves its status once the body has been read. */
export function postNewSession(agent: Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(newSessionBody());
  });
}
