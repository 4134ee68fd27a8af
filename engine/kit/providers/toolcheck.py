"""Does the server render the tool list? A chat template that cannot render tools makes
llama.cpp drop them without a word: the request succeeds, the model answers as if no tools
were sent, and Kit's tools are silently out of reach (tests/data/llamacpp/tools-dropped*.json).

Two ways to tell, both measured against the real server:
- `probe_template(base_url)`: llama.cpp's `POST /apply-template` returns the prompt it would
  build; a probe tool's name is in it only if the template renders tools. Definitive, cheap (no
  generation), llama.cpp only (None elsewhere).
- `dropped_by_usage(...)`: the server's `prompt_tokens` against Kit's estimate with and without
  the tool schemas. Only decided when the tools are a large part of the request (at least half
  the messages' estimate), since Kit's estimate is off by up to ~40 % across tokenizers.
"""

from __future__ import annotations

import json

PROBE_TOOL = "kit_probe_tool_renders"
PROBE = {"type": "function", "function": {
    "name": PROBE_TOOL, "description": "Kit checks whether the chat template renders tools.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
MIN_TOOLS_SHARE = 0.5  # tools ÷ messages (Kit's estimates) below this: the usage cannot tell

FIX = ("serve it with a chat template that renders tools (llama.cpp: start the server with `--jinja`, "
       "and `--chat-template-file` with a tools template if the model's own has none), or use a model "
       "whose template supports tools")


def dropped_message(target: str) -> str:
    return (f"{target}: the server's chat template dropped the tool list (the model answered as if no "
            f"tools were sent), so it cannot use Kit's tools. To fix: {FIX}")


def server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def userinfo_as_header(url: str) -> tuple[str, dict[str, str]]:
    """urllib takes `user:pw@host` for the host name (doctor said "Name or service not known" of a
    server that answers): the credentials go in an Authorization header, as httpx sends them."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    creds, _, host = parts.netloc.rpartition("@")
    token = base64.b64encode(unquote(creds).encode()).decode()
    return urlunsplit(parts._replace(netloc=host)), {"Authorization": f"Basic {token}"}


def probe_template(base_url: str, timeout: float = 2.0) -> bool | None:
    """True/False from llama.cpp's /apply-template; None when the server has no such endpoint
    or does not answer."""
    import http.client  # ~0.1 s of imports (http, email, ssl): only when a server is asked
    import urllib.error
    import urllib.request

    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": [PROBE]}).encode()
    # no proxy: this is only asked of servers on this machine
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        # a base_url urllib cannot send (no scheme: ValueError; a space: http.client.InvalidURL)
        # is no answer either: the request itself then fails with a classified error
        url, auth = userinfo_as_header(server_root(base_url) + "/apply-template")
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json", **auth})
        with opener.open(request, timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return None
    prompt = data.get("prompt") if isinstance(data, dict) else None
    if not isinstance(prompt, str):
        return None
    return PROBE_TOOL in prompt


def dropped_by_usage(prompt_tokens: int, messages_estimate: int, tools_estimate: int) -> bool | None:
    """True when the server counted about the messages alone, False when it counted the tools
    too, None when the tools are too small a part of the request to tell."""
    if prompt_tokens <= 0 or messages_estimate <= 0 or tools_estimate < MIN_TOOLS_SHARE * messages_estimate:
        return None
    # halfway between "messages only" and "messages and tools", with room for the estimate's error
    return prompt_tokens < 0.9 * (messages_estimate + tools_estimate / 2)
