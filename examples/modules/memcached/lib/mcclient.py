"""A client of memcached's text protocol over a Unix socket, the few
commands the service and its job use: standard library only."""

import socket
import urllib.parse

# Keys of owned objects: this prefix, then the object id.
OBJECT_PREFIX = "oarbank.obj."
MAX_KEY = 250  # memcached's limit, in bytes


class Error(Exception):
    """memcached answered with an error, or not as the protocol says."""


class Client:
    def __init__(self, path: str, timeout: float = 3.0):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Error(f"{self.path}: connection closed mid-answer")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Error(f"{self.path}: connection closed mid-value")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _send(self, line: str, payload: bytes | None = None) -> None:
        data = line.encode() + b"\r\n"
        if payload is not None:
            data += payload + b"\r\n"
        self.sock.sendall(data)

    def _check(self, line: bytes, cmd: str) -> bytes:
        if line == b"ERROR" or line.startswith((b"CLIENT_ERROR", b"SERVER_ERROR")):
            raise Error(f"{cmd}: {line.decode(errors='replace')}")
        return line

    def version(self) -> str:
        self._send("version")
        line = self._check(self._line(), "version")
        if not line.startswith(b"VERSION "):
            raise Error(f"version: {line!r}")
        return line[len(b"VERSION "):].decode()

    def stats(self) -> dict[str, str]:
        self._send("stats")
        out = {}
        while (line := self._check(self._line(), "stats")) != b"END":
            _, k, v = line.decode().split(" ", 2)
            out[k] = v
        return out

    def set(self, key: str, value: bytes) -> None:
        self._send(f"set {key} 0 0 {len(value)}", value)
        line = self._check(self._line(), f"set {key}")
        if line != b"STORED":
            raise Error(f"set {key}: {line!r}")

    def get(self, key: str) -> bytes | None:
        self._send(f"get {key}")
        line = self._check(self._line(), f"get {key}")
        if line == b"END":
            return None
        # VALUE <key> <flags> <bytes>, the value, END.
        n = int(line.split()[3])
        value = self._exactly(n + 2)[:-2]
        if self._line() != b"END":
            raise Error(f"get {key}: no END after the value")
        return value

    def delete(self, key: str) -> bool:
        self._send(f"delete {key}")
        line = self._check(self._line(), f"delete {key}")
        if line not in (b"DELETED", b"NOT_FOUND"):
            raise Error(f"delete {key}: {line!r}")
        return line == b"DELETED"

    def keys(self) -> list[str]:
        """Every key, from the LRU crawler's metadump (its keys are
        URL-encoded)."""
        self._send("lru_crawler metadump all")
        keys = []
        while True:
            line = self._check(self._line(), "lru_crawler metadump")
            if line == b"END":
                return keys
            if line.startswith(b"BUSY"):
                raise Error("lru_crawler metadump: the crawler is busy; try again")
            # The dump's lines end in \n alone, its last in END\r\n.
            for item in line.split(b"\n"):
                if item == b"END":
                    return keys
                if item.startswith(b"key="):
                    keys.append(urllib.parse.unquote(item.split(b" ", 1)[0][4:].decode()))
