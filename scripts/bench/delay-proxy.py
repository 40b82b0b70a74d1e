#!/usr/bin/env python3
# A TCP proxy on loopback that adds a fixed delay to every byte in each direction (the
# PostgreSQL-over-a-network benchmark, DESIGN §9): the round trip through it is the server's plus 2 x DELAY_MS.
# It stands in for `tc netem` where the kernel has no sch_netem (scripts/bench/bench-pg.sh tries netem
# first: it cannot here). Prints "listening PORT" once it accepts connections; runs until killed.
# Usage: delay-proxy.py LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS
import socket, sys, threading, time

CHUNK_BYTES = 65536


def pump(src, dst, delay_s):
    """One thread per direction: what arrives is sent on DELAY after it arrived. Data that arrives
    while earlier data waits is read (stamped) when the earlier is sent, so in a stream it may wait
    longer; a request/response protocol (PostgreSQL's, one statement at a time) has one in flight."""
    def run():
        while True:
            try:
                data = src.recv(CHUNK_BYTES)
            except OSError:
                data = b''
            time.sleep(delay_s)
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                dst.sendall(data)
            except OSError:
                return
    threading.Thread(target=run, daemon=True).start()


def main():
    listen_port, host, port, delay_ms = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(('127.0.0.1', listen_port))
    server.listen(64)
    print('listening', server.getsockname()[1], flush=True)
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection((host, port))
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pump(client, upstream, delay_ms / 1000)
        pump(upstream, client, delay_ms / 1000)


if __name__ == '__main__':
    main()
