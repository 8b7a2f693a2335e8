#!/usr/bin/env python3
"""An MCP server behind OAuth, with its own authorization server, in one
process (standard library only), for tests/gateway_oauth.rs.

  oauth_server.py [--lifetime SECONDS] [--machine-id ID --machine-secret SECRET]

Prints `listening PORT` on stdout once it serves on 127.0.0.1.

Authorization server: RFC 8414 metadata, dynamic registration (public
clients), the authorization-code grant with PKCE S256 (the /authorize
endpoint approves at once and redirects back), refresh tokens, and client
credentials for the one machine client (HTTP Basic or form). Access tokens
live --lifetime seconds.

Resource: /mcp answers JSON-RPC (initialize, tools/list, tools/call of
`echo`) only with a live bearer token; otherwise 401 with a challenge that
points at its protected-resource metadata.

POST /revoke-all: every access token stops working at once.

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
REFRESH = {}  # refresh token -> client_id
STATS = {"issued": [], "stale_token_requests": 0, "no_token_requests": 0, "calls": 0}


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
            return self.reply(200, {"resource": base + "/mcp", "authorization_servers": [base]})
        if url.path == "/.well-known/oauth-authorization-server":
            return self.reply(200, {
                "issuer": base,
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
            STATS["issued"].append({"grant": grant, "at": time.time(), "token": token})
            if with_refresh:
                refresh = "rt-" + secrets.token_urlsafe(24)
                REFRESH[refresh] = client_id
                body["refresh_token"] = refresh
        return self.reply(200, body, {"Cache-Control": "no-store"})

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        raw = self.body()
        if url.path == "/revoke-all":
            # Every live access token stops working (refresh tokens stay).
            with LOCK:
                ACCESS.clear()
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
                    client_id = REFRESH.pop(form.get("refresh_token", ""), None)
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
                challenge = 'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % self.base()
                if token:
                    challenge += ', error="invalid_token"'
                return self.reply(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
            message = json.loads(raw or b"{}")
            if "id" not in message:
                return self.reply(202)
            method = message.get("method")
            if method == "initialize":
                wanted = message.get("params", {}).get("protocolVersion")
                version = wanted if wanted in ("2025-06-18", "2025-11-25") else "2025-11-25"
                result = {"protocolVersion": version, "capabilities": {"tools": {}},
                          "serverInfo": {"name": "oauth-test", "version": "1.0.0"}}
            elif method == "tools/list":
                result = {"tools": [{"name": "echo", "description": "Returns its text.",
                                     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                                     "required": ["text"]}}]}
            elif method == "tools/call":
                with LOCK:
                    STATS["calls"] += 1
                text = message.get("params", {}).get("arguments", {}).get("text", "")
                result = {"content": [{"type": "text", "text": "echo: " + text}]}
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
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.lifetime = args.lifetime
    server.machine_id = args.machine_id
    server.machine_secret = args.machine_secret
    print("listening %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
