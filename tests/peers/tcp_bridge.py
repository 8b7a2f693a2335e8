"""Byte-transparent stdio <-> TCP bridge: `python tcp_bridge.py HOST:PORT`.

Lets a stdio-only MCP client (the SDKs' stdio transports) talk to
`zenmode serve --transport tcp`. Copies stdin to the socket and the socket to
stdout, unchanged; exits when either side closes. Standard library only.
"""

import os
import socket
import sys
import threading


def main() -> int:
    host, _, port = sys.argv[1].rpartition(":")
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
    sock.settimeout(None)
    done = threading.Event()

    def upstream() -> None:
        try:
            while chunk := os.read(0, 65536):
                sock.sendall(chunk)
        except OSError:
            pass
        finally:
            try:
                sock.shutdown(socket.SHUT_WR)  # EOF to the server, like a closed stdin
            except OSError:
                pass

    def downstream() -> None:
        try:
            while chunk := sock.recv(65536):
                os.write(1, chunk)
        except OSError:
            pass
        finally:
            done.set()

    threading.Thread(target=upstream, daemon=True).start()
    threading.Thread(target=downstream, daemon=True).start()
    done.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
