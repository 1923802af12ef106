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
 * The prefixes `url`'s path falls under, longest first: the path cut after each of its segments
 * (`/v1/a/messages?x` → `/v1/a/messages`, `/v1/a`, `/v1`). A prefix is a whole number of segments.
 */
function* prefixesOf(url: string): Generator<string> {
  const query = url.indexOf('?');
  let path = query < 0 ? url : url.slice(0, query);
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
  const reorder = () => {
    byPrefix = new Map([...mounted.values()].map((entry) => [entry.prefix, entry]));
  };

  /** The app of the longest prefix `url` falls under, so that `/v1/a` wins over `/v1`. */
  function appFor(url: string): Mounted | undefined {
    for (const prefix of prefixesOf(url)) {
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
      mounted.set(id, { prefix, app });
      reorder();
      return previous;
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
