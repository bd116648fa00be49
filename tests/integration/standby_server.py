"""A Prefect server of its own home, built and waiting, that binds its port when told.

    PREFECT_HOME=HOME python -m tests.integration.standby_server PORT

It prints ``ready`` once its app is built (Prefect's imports take seconds).
After a line on stdin it binds 127.0.0.1:PORT as soon as the port is free
(the server there stopping), and serves until stopped: another Prefect home's
server taking the port within moments of the one there closing it, as a
restart on the same port would, without the seconds of its imports in
between. It listens before its app has started (its database, its services):
connections wait for it meanwhile, as they would for any server that binds
its port early.
"""

from __future__ import annotations

import socket
import sys
import time

import uvicorn
from prefect.server.api.server import create_app


def main(port: int) -> None:
    app = create_app(final=True)  # what `prefect server start` serves, on this home's database
    print("ready", flush=True)
    sys.stdin.readline()
    listening = socket.socket()
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    while True:  # until the server there has closed the port (the test stops it; a bounded wait is the test's)
        try:
            listening.bind(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.01)
    listening.listen(128)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])


if __name__ == "__main__":
    main(int(sys.argv[1]))
