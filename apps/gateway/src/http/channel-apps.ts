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

/** `url`'s path is `prefix` or below it. */
function under(url: string, prefix: string): boolean {
  if (!url.startsWith(prefix)) return false;
  const next = url.charCodeAt(prefix.length);
  // End, `/`, `?`: the prefix is a whole number of path segments of the URL.
  return Number.isNaN(next) || next === 47 || next === 63;
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
  /** Longest prefix first, so that `/v1/a` wins over `/v1`. */
  let byPrefix: Mounted[] = [];
  const reorder = () => {
    byPrefix = [...mounted.values()].sort((a, b) => b.prefix.length - a.prefix.length);
  };

  function handOver(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const target = byPrefix.find((entry) => under(request.raw.url ?? '', entry.prefix));
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
