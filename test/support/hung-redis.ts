import { AddressInfo, createServer } from 'node:net';

/** A server that answers the connection handshake like Redis, then never answers a command: a hung Redis. */
export interface HungRedis {
  url: string;
  close(): Promise<void>;
}

export async function startHungRedis(): Promise<HungRedis> {
  const server = createServer((socket) =>
    socket.on('data', (data) => {
      for (const [, command] of data.toString().matchAll(/\*\d+\r\n\$\d+\r\n(\w+)/g)) {
        if (/^client$/i.test(command)) socket.write('+OK\r\n');
        if (/^info$/i.test(command)) socket.write('$9\r\nloading:0\r\n');
      }
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
