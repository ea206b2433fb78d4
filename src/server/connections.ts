// Every open connection of a server, so a shutdown can end them all: idle keep-alive and
// half-sent requests at once, busy ones when their response ends, the rest at a deadline.
// Connections are keyed by the client's address and port, which the raw TCP socket and
// (under TLS) the TLS socket a request arrives on share.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

const keyOf = (s: Socket): string => `${s.remoteAddress}|${s.remotePort}`;

export class Connections {
  private readonly sockets = new Map<string, Socket>();
  /** responses not yet ended, per connection */
  private readonly busy = new Map<string, number>();
  private draining = false;

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      const key = keyOf(socket);
      this.sockets.set(key, socket);
      socket.once('close', () => {
        this.sockets.delete(key);
        this.busy.delete(key);
      });
      if (this.draining) socket.destroy();
    });
    server.on('request', (req, res) => {
      const key = keyOf(req.socket);
      this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
      res.once('close', () => {
        const left = (this.busy.get(key) ?? 1) - 1;
        this.busy.set(key, left);
        if (this.draining && left === 0) this.sockets.get(key)?.end();
      });
    });
  }

  get size(): number {
    return this.sockets.size;
  }

  /** Ends every connection without a response under way now, the others as theirs end. */
  drain(): void {
    this.draining = true;
    for (const [key, socket] of this.sockets) if (!this.busy.get(key)) socket.destroy();
  }

  destroyAll(): void {
    for (const socket of this.sockets.values()) socket.destroy();
  }
}
