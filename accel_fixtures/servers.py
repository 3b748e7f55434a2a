"""Servers on 127.0.0.1 that are not what a command expects: a scheduler address that answers HTTP,
accepts and never answers, or sends garbage (the hostile table's ``--scheduler`` cases and the tests'
own)."""

from __future__ import annotations

import http.server
import os
import socket
import threading


class NotDaskServer:
    """A TCP server on 127.0.0.1 in a thread: ``http``, ``silent`` (accepts, never answers) or ``garbage``."""

    def __init__(self, kind: str):
        self.kind = kind
        self.held: list[socket.socket] = []
        if kind == "http":
            self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
            self.port = self.httpd.server_address[1]
            threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
            return
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.kind == "garbage":
                try:
                    conn.sendall(os.urandom(64) + b"\xff" * 8 + os.urandom(4096))
                except OSError:
                    pass

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def close(self) -> None:
        if self.kind == "http":
            self.httpd.shutdown()
            self.httpd.server_close()
            return
        self.stopped = True
        self.sock.close()
        for conn in self.held:
            conn.close()
