"""A TCP relay that holds every HTTP GET for two seconds before passing it on.

    slow_get_proxy.py BIN URL

Starts the relay in front of URL's port, then runs `BIN upstream probe` on
the relayed URL and exits with the probe's status. Used by client.sh to
replay a slow standing GET stream: a server that elicits outside the call's
own stream must still be answered when that stream opens late.
"""

import asyncio
import re
import socket
import sys

DELAY_SECONDS = 2


async def relay(reader, writer, hold_gets):
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            if hold_gets and chunk.startswith(b"GET "):
                await asyncio.sleep(DELAY_SECONDS)
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main(binary, url):
    match = re.match(r"^(https?://[^/:]+):(\d+)(/.*)?$", url)
    if not match:
        print(f"slow_get_proxy: cannot read a port in {url!r}", file=sys.stderr)
        return 2
    host, port, path = match.group(1), int(match.group(2)), match.group(3) or "/"

    async def handle(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("localhost", port)
        await asyncio.gather(
            relay(client_reader, server_writer, True),
            relay(server_reader, client_writer, False),
        )

    server = await asyncio.start_server(handle, "127.0.0.1", 0, family=socket.AF_INET)
    relay_port = server.sockets[0].getsockname()[1]
    relayed = f"http://127.0.0.1:{relay_port}{path}"
    probe = await asyncio.create_subprocess_exec(binary, "upstream", "probe", relayed)
    status = await probe.wait()
    server.close()
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
