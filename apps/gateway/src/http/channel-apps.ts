import { collectApiDocs, type HttpServerShutdown, notFoundHandler } from '@switchboard/http';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';

const METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'];

/** A channel's app: its routes, and the path prefix they live under. */
interface Mounted {
  prefix: string;
  app: FastifyInstance;
}

/**
 * Each channel's routes in an app of its own that never listens, mounted under the channel's path
 * prefix on the gateway's server: the server hands a request under a prefix to its app, socket
 * and unread body included, before reading it. A reload puts a new app in a channel's place
 * while the server keeps listening (fastify adds no route to a server once it listens).
 */
export interface ChannelApps {
  /** A new app built like the server (its options, error answers, drain, API docs); add routes, then `mount`. */
  create(): Promise<FastifyInstance>;
  /**
   * Readies `app` and serves it for channel `id` under `prefix` from the next request on; returns
   * the app it replaced, whose requests under way finish there.
   */
  mount(id: string, prefix: string, app: FastifyInstance): Promise<FastifyInstance | undefined>;
  /** Takes channel `id`'s app out: its paths answer 404 from the next request on. Returns it. */
  unmount(id: string): FastifyInstance | undefined;
  /** The mounted apps, for the API document. */
  apps(): Iterable<FastifyInstance>;
}

/**
 * The prefixes `url`'s path falls under, longest first and none longer than `maxLength`: the path
 * cut after each of its segments (`/v1/a/messages?x` → `/v1/a/messages`, `/v1/a`, `/v1`). A prefix
 * is a whole number of segments. Cut to `maxLength` first, so that a long path of many segments
 * costs no more lookups than the longest prefix has segments, each of a bounded key.
 */
function* prefixesOf(url: string, maxLength: number): Generator<string> {
  const query = url.indexOf('?');
  let path = query < 0 ? url : url.slice(0, query);
  // A prefix of length L matches only where the path ends at L or goes on with `/`.
  if (path.length > maxLength) path = path.slice(0, Math.max(0, path.lastIndexOf('/', maxLength)));
  while (path.length > 1) {
    yield path;
    path = path.slice(0, path.lastIndexOf('/'));
  }
}

/**
 * Mounts channel apps on `server`: one catch-all route, which only the paths no other route
 * matches reach, hands a request to the app whose prefix it falls under (the longest) or answers
 * 404 in the gateway's shape. Call before `server.ready()`.
 */
export function mountChannelApps(
  server: FastifyInstance,
  options: {
    /** A fastify app with the server's options, never listening. */
    build(): FastifyInstance;
    shutdown: HttpServerShutdown;
    version: string;
  },
): ChannelApps {
  const mounted = new Map<string, Mounted>();
  /** The mounted apps by prefix: a request finds its own in as many lookups as its path has segments. */
  let byPrefix = new Map<string, Mounted>();
  let longest = 0;
  // Of two channels on one prefix (a reload swapping them), the one mounted last serves it.
  const reorder = () => {
    byPrefix = new Map([...mounted.values()].map((entry) => [entry.prefix, entry]));
    longest = Math.max(0, ...[...byPrefix.keys()].map((prefix) => prefix.length));
  };

  /** The app of the longest prefix `url` falls under, so that `/v1/a` wins over `/v1`. */
  function appFor(url: string): Mounted | undefined {
    for (const prefix of prefixesOf(url, longest)) {
      const entry = byPrefix.get(prefix);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  function handOver(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const target = appFor(request.raw.url ?? '');
    if (target === undefined) {
      done();
      return;
    }
    reply.hijack();
    target.app.routing(request.raw, reply.raw);
  }

  server.route({
    method: METHODS,
    url: '/*',
    schema: { hide: true },
    onRequest: handOver,
    handler: notFoundHandler,
  });

  return {
    async create() {
      const app = options.build();
      options.shutdown.closeConnectionsOf(app);
      await collectApiDocs(app, { title: 'Switchboard', version: options.version });
      return app;
    },
    async mount(id, prefix, app) {
      await app.ready();
      const previous = mounted.get(id)?.app;
      // Moved to the end: the channel mounted last wins a prefix two share during a reload.
      mounted.delete(id);
      const entry = { prefix, app };
      mounted.set(id, entry);
      if (previous !== undefined) {
        reorder();
        return previous;
      }
      // A channel mounted for the first time (each one at start) only adds its prefix: rebuilding
      // the index at every mount made a start with a thousand channels quadratic.
      byPrefix.set(prefix, entry);
      longest = Math.max(longest, prefix.length);
      return undefined;
    },
    unmount(id) {
      const previous = mounted.get(id)?.app;
      mounted.delete(id);
      reorder();
      return previous;
    },
    *apps() {
      for (const entry of mounted.values()) yield entry.app;
    },
  };
}
