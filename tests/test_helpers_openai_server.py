"""The fake OpenAI server itself: a client that resets its connection must not print into the
test's captured stderr (a CliRunner run in another thread read it as part of `--json` output)."""

from __future__ import annotations

import socket
import struct
import time

from helpers_openai_server import FakeLLMServer


def test_a_reset_connection_is_recorded_not_printed(capsys):
    with FakeLLMServer() as server:
        conn = socket.create_connection(("127.0.0.1", server.port))
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # half a request
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # RST while the server reads the headers
        deadline = time.monotonic() + 10
        while not server.server_errors and time.monotonic() < deadline:
            time.sleep(0.01)
    assert [type(e) for e in server.server_errors] == [ConnectionResetError]
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")
