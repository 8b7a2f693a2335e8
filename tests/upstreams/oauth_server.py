#!/usr/bin/env python3
"""An MCP server behind OAuth, with its own authorization server, in one
process (standard library only), for tests/gateway_oauth.rs.

  oauth_server.py [--lifetime SECONDS] [--machine-id ID --machine-secret SECRET]
                  [--refresh-delay SECONDS] [--reuse-detection] [--tenant-issuer]

Prints `listening PORT` on stdout once it serves on 127.0.0.1.

Authorization server: RFC 8414 metadata, dynamic registration (public
clients), the authorization-code grant with PKCE S256 (the /authorize
endpoint approves at once and redirects back), refresh tokens, and client
credentials for the one machine client (HTTP Basic or form). Access tokens
live --lifetime seconds.

Resource: /mcp answers JSON-RPC (initialize, tools/list, tools/call of
`echo`) only with a live bearer token; otherwise 401 with a challenge that
points at its protected-resource metadata.

Tools besides `echo`, for what a hostile or careless server sends back:
`whoami` quotes the request's Authorization header in its text and
structured content, `leak` quotes it in a JSON-RPC error, `leak_all` lists
every token and refresh token issued and the machine secret; `admin` always
answers 403 insufficient_scope (scope "admin"); `described` quotes the
header in its description. The resource `secret://auth`
and the prompt `auth` quote the header too.

--refresh-delay: the refresh grant answers only after that many seconds.
--reuse-detection: a refresh token used a second time revokes every token
of its client (as Auth0 and Okta do).
--tenant-issuer: no protected-resource metadata; the origin's metadata names
the issuer <origin>/tenant (which rmcp refuses, so zenmode's own discovery
fallback reads it again), and every second read (the fallback's) is padded
to 2 MiB.

POST /revoke-all: every access token stops working at once.
POST /revoke-refresh: every refresh token is forgotten (a lost sign-in).
POST /fail-refresh: from then on the refresh grant answers 503.

GET /stats: what happened, for the test to check: every token issued with
its grant and time, and how many requests came with an expired or unknown
token.
"""

import argparse
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
CLIENTS = {}  # client_id -> registration
CODES = {}  # code -> (client_id, challenge, redirect_uri)
ACCESS = {}  # token -> expiry (monotonic)
ACCESS_CLIENT = {}  # token -> client_id
REFRESH = {}  # refresh token -> client_id
USED_REFRESH = {}  # refresh token used once -> client_id
FLAGS = {"fail_refresh": False, "metadata_reads": 0}
STATS = {"issued": [], "stale_token_requests": 0, "no_token_requests": 0, "calls": 0,
         "refresh_requests": 0, "reuse_detected": 0, "refused_refresh": 0}


def now():
    return time.monotonic()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def reply(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        base = self.base()
        if url.path.startswith("/.well-known/oauth-protected-resource"):
            if self.server.tenant_issuer:
                return self.reply(404, {"error": "not found"})
            return self.reply(200, {"resource": base + "/mcp", "authorization_servers": [base]})
        if url.path == "/.well-known/oauth-authorization-server":
            issuer = base
            padding = {}
            if self.server.tenant_issuer:
                issuer = base + "/tenant"
                with LOCK:
                    FLAGS["metadata_reads"] += 1
                    # Even reads: those of zenmode's fallback, each after
                    # rmcp's own read was refused for the issuer.
                    if FLAGS["metadata_reads"] % 2 == 0:
                        padding = {"padding": "x" * (2 * 1024 * 1024)}
            return self.reply(200, {
                **padding,
                "issuer": issuer,
                "authorization_endpoint": base + "/authorize",
                "token_endpoint": base + "/token",
                "registration_endpoint": base + "/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            })
        if url.path == "/authorize":
            query = dict(urllib.parse.parse_qsl(url.query))
            client = CLIENTS.get(query.get("client_id"))
            redirect = query.get("redirect_uri", "")
            if not client or redirect not in client["redirect_uris"] or query.get("code_challenge_method") != "S256":
                return self.reply(400, {"error": "invalid_request"})
            code = secrets.token_urlsafe(16)
            with LOCK:
                CODES[code] = (query["client_id"], query["code_challenge"], redirect)
            target = redirect + "?" + urllib.parse.urlencode({"code": code, "state": query.get("state", "")})
            return self.reply(302, None, {"Location": target})
        if url.path == "/stats":
            with LOCK:
                return self.reply(200, STATS)
        if url.path == "/mcp":
            return self.reply(405, None, {"Allow": "POST"})
        return self.reply(404, {"error": "not found"})

    def issue(self, client_id, grant, with_refresh):
        token = "at-" + secrets.token_urlsafe(24)
        body = {"access_token": token, "token_type": "Bearer", "expires_in": self.server.lifetime}
        with LOCK:
            ACCESS[token] = now() + self.server.lifetime
            ACCESS_CLIENT[token] = client_id
            record = {"grant": grant, "at": time.time(), "token": token}
            if with_refresh:
                refresh = "rt-" + secrets.token_urlsafe(24)
                REFRESH[refresh] = client_id
                body["refresh_token"] = refresh
                record["refresh"] = refresh
            STATS["issued"].append(record)
        return self.reply(200, body, {"Cache-Control": "no-store"})

    def auth_header(self):
        return self.headers.get("Authorization", "")

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        raw = self.body()
        if url.path == "/revoke-all":
            # Every live access token stops working (refresh tokens stay).
            with LOCK:
                ACCESS.clear()
            return self.reply(200, {})
        if url.path == "/revoke-refresh":
            with LOCK:
                REFRESH.clear()
            return self.reply(200, {})
        if url.path == "/fail-refresh":
            with LOCK:
                FLAGS["fail_refresh"] = True
            return self.reply(200, {})
        if url.path == "/register":
            request = json.loads(raw or b"{}")
            client_id = "dyn-" + secrets.token_urlsafe(8)
            registration = {"client_id": client_id, "redirect_uris": request.get("redirect_uris", []),
                            "token_endpoint_auth_method": "none"}
            with LOCK:
                CLIENTS[client_id] = registration
            return self.reply(201, registration)
        if url.path == "/token":
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            grant = form.get("grant_type")
            if grant == "authorization_code":
                with LOCK:
                    found = CODES.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "").encode()
                digest = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
                if not found or found[1] != digest or found[2] != form.get("redirect_uri"):
                    return self.reply(400, {"error": "invalid_grant"})
                return self.issue(found[0], grant, True)
            if grant == "refresh_token":
                with LOCK:
                    STATS["refresh_requests"] += 1
                if self.server.refresh_delay:
                    time.sleep(self.server.refresh_delay)
                if FLAGS["fail_refresh"]:
                    return self.reply(503, {"error": "temporarily_unavailable"})
                presented = form.get("refresh_token", "")
                with LOCK:
                    client_id = REFRESH.pop(presented, None)
                    if client_id is not None:
                        USED_REFRESH[presented] = client_id
                    else:
                        STATS["refused_refresh"] += 1
                        reused = USED_REFRESH.get(presented)
                        if reused is not None and self.server.reuse_detection:
                            # A stolen refresh token is assumed: the whole
                            # family is signed out.
                            STATS["reuse_detected"] += 1
                            for token in [t for t, c in ACCESS_CLIENT.items() if c == reused]:
                                ACCESS.pop(token, None)
                            for token in [t for t, c in REFRESH.items() if c == reused]:
                                REFRESH.pop(token, None)
                if client_id is None:
                    return self.reply(400, {"error": "invalid_grant"})
                return self.issue(client_id, grant, True)
            if grant == "client_credentials":
                client_id, secret = form.get("client_id"), form.get("client_secret")
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    pair = base64.b64decode(auth[6:]).decode()
                    client_id, _, secret = pair.partition(":")
                    client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
                if client_id != self.server.machine_id or secret != self.server.machine_secret:
                    return self.reply(401, {"error": "invalid_client"})
                return self.issue(client_id, grant, False)
            return self.reply(400, {"error": "unsupported_grant_type"})
        if url.path == "/mcp":
            auth = self.headers.get("Authorization", "")
            token = auth[7:] if auth.startswith("Bearer ") else None
            with LOCK:
                expiry = ACCESS.get(token) if token else None
                if token is None:
                    STATS["no_token_requests"] += 1
                elif expiry is None or expiry < now():
                    STATS["stale_token_requests"] += 1
            if expiry is None or expiry < now():
                if self.server.tenant_issuer:
                    challenge = 'Bearer realm="mcp"'
                else:
                    challenge = 'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % self.base()
                if token:
                    challenge += ', error="invalid_token"'
                return self.reply(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
            message = json.loads(raw or b"{}")
            params = message.get("params") or {}
            if message.get("method") == "tools/call" and params.get("name") == "admin":
                challenge = ('Bearer error="insufficient_scope", scope="admin", '
                             'resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % self.base())
                return self.reply(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge})
            if "id" not in message:
                return self.reply(202)
            method = message.get("method")
            if method == "initialize":
                wanted = message.get("params", {}).get("protocolVersion")
                version = wanted if wanted in ("2025-06-18", "2025-11-25") else "2025-11-25"
                result = {"protocolVersion": version,
                          "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                          "serverInfo": {"name": "oauth-test", "version": "1.0.0"}}
            elif method == "tools/list":
                bare = {"type": "object", "properties": {}}
                result = {"tools": [{"name": "echo", "description": "Returns its text.",
                                     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                                     "required": ["text"]}},
                                    {"name": "whoami", "description": "Quotes the Authorization header.",
                                     "inputSchema": bare},
                                    {"name": "leak", "description": "Fails, quoting the Authorization header.",
                                     "inputSchema": bare},
                                    {"name": "leak_all", "description": "Lists every secret issued.",
                                     "inputSchema": bare},
                                    {"name": "admin", "description": "Wants the admin scope.",
                                     "inputSchema": bare},
                                    {"name": "described", "inputSchema": bare,
                                     "description": "Listed for " + self.auth_header()}]}
            elif method == "tools/call" and params.get("name") == "whoami":
                header = self.auth_header()
                result = {"content": [{"type": "text", "text": "you sent " + header}],
                          "structuredContent": {"authorization": header, header: "as a name"}}
            elif method == "tools/call" and params.get("name") == "leak":
                return self.reply(200, {"jsonrpc": "2.0", "id": message["id"],
                                        "error": {"code": -32001, "message": "bad request: " + self.auth_header(),
                                                  "data": {"authorization": self.auth_header()}}})
            elif method == "tools/call" and params.get("name") == "leak_all":
                with LOCK:
                    everything = [t["token"] for t in STATS["issued"]]
                    everything += [t["refresh"] for t in STATS["issued"] if "refresh" in t]
                everything.append(self.server.machine_secret)
                result = {"content": [{"type": "text", "text": " ".join(everything)}]}
            elif method == "tools/call":
                with LOCK:
                    STATS["calls"] += 1
                text = params.get("arguments", {}).get("text", "")
                result = {"content": [{"type": "text", "text": "echo: " + text}]}
            elif method == "resources/list":
                result = {"resources": [{"uri": "secret://auth", "name": "auth"}]}
            elif method == "resources/read":
                result = {"contents": [{"uri": params.get("uri", ""), "mimeType": "text/plain",
                                        "text": "read with " + self.auth_header()}]}
            elif method == "prompts/list":
                result = {"prompts": [{"name": "auth", "description": "Quotes the header."}]}
            elif method == "prompts/get":
                result = {"messages": [{"role": "user", "content": {
                    "type": "text", "text": "prompt for " + self.auth_header()}}]}
            elif method == "ping":
                result = {}
            else:
                return self.reply(200, {"jsonrpc": "2.0", "id": message["id"],
                                        "error": {"code": -32601, "message": "method not found"}})
            return self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        return self.reply(404, {"error": "not found"})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up mid-reply (zenmode ending) is no error here.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=int, default=2)
    parser.add_argument("--machine-id", default="machine")
    parser.add_argument("--machine-secret", default="machine-secret-0123456789")
    parser.add_argument("--refresh-delay", type=float, default=0.0)
    parser.add_argument("--reuse-detection", action="store_true")
    parser.add_argument("--tenant-issuer", action="store_true")
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.lifetime = args.lifetime
    server.machine_id = args.machine_id
    server.machine_secret = args.machine_secret
    server.refresh_delay = args.refresh_delay
    server.reuse_detection = args.reuse_detection
    server.tenant_issuer = args.tenant_issuer
    print("listening %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
