import { connect } from 'node:net';

/** True when an SMTP server greets (220) on the port of 127.0.0.1; false when nothing listens there yet. */
export function smtpGreets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('data', (data) => {
      socket.end('QUIT\r\n');
      resolve(data.toString().startsWith('220 '));
    });
    socket.once('error', () => resolve(false));
  });
}
