import { type Socket, connect, createServer } from 'node:net';

/**
 * A TCP proxy on a free loopback port forwarding to `127.0.0.1:<targetPort>`: the one address
 * clients know, as a managed Redis endpoint or a virtual IP is. `retarget` points it elsewhere and
 * cuts every open connection, as a failover of such an endpoint does.
 */
export async function startTcpProxy(targetPort: number) {
  let target = targetPort;
  let held = false;
  const open = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
    if (held) upstream.pause();
  });
  const listen = (on: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(on, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const cutAll = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    port,
    /**
     * Stops passing on what the target sends (the client's side still flows): it waits in this
     * process, lost if the connections are cut, as bytes in flight are when a host dies.
     */
    hold(): void {
      held = true;
      for (const upstream of upstreams) upstream.pause();
    },
    /**
     * Cuts every open connection, as a host dying does: what `hold` kept is lost. New connections
     * pass everything on again.
     */
    cut(): void {
      held = false;
      cutAll();
    },
    /**
     * Cuts every open connection and stops listening, so that new ones are refused, as while the
     * host behind restarts; `accept` listens on the same port again.
     */
    async refuse(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cutAll();
      await closed;
    },
    async accept(): Promise<void> {
      await listen(port);
    },
    /** New connections go to `port` from now on; open ones are cut. */
    retarget(port: number): void {
      target = port;
      cutAll();
    },
    close(): Promise<void> {
      cutAll();
      // Resolves when refusing too (the server then reports it was not listening).
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
