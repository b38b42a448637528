#!/usr/bin/env python3
"""A registry that lies, for ptbundle pull's hostile-registry tests.

  hostile_registry.py BUNDLE MODE PORT_FILE [SECONDS]

Serves the files of the bundle folder BUNDLE as one ModelPack artifact under
any repository and tag (the Distribution API's GET manifest and GET blob), on
127.0.0.1 at a free port written to PORT_FILE, misbehaving as MODE says:

  ok                 a correct registry (the tests' control)
  wrong_digest       a part file's blob with one byte changed
  truncated          a part file's blob cut to half, then the connection closed
  long               a part file's blob with bytes past its recorded size
  dotdot             a layer whose filepath is ../<name>
  absolute           a layer whose filepath is /tmp/<name>
  many_layers        a manifest listing 10^6 layers (about 150 MB of JSON)
  manifest_redirect  the manifest answered with a redirect to another host
  blob_redirect      every blob redirected to http://localhost:PORT (another
                     host than 127.0.0.1:PORT); the registry asks for Basic
                     credentials, and the redirect target records in
                     PORT_FILE.auth whether it received an Authorization header
  bearer             the registry asks for a Bearer token from its /token
                     endpoint, which wants Basic credentials user:secret
  slow_drip          a part file's blob sent one byte a second
  errors             the manifest answered 404 with two Distribution API errors
  flaky              the first two manifest requests answered 503

It exits after SECONDS (default 60) so that a test that dies never leaves it
running; the tests also stop it.
"""
import base64
import hashlib
import http.server
import json
import os
import socketserver
import sys
import threading
import time

bundle, mode, port_file = sys.argv[1], sys.argv[2], sys.argv[3]
lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
threading.Timer(lifetime, lambda: os._exit(0)).start()

files = []
for root, _, names in os.walk(bundle):
    for name in sorted(names):
        full = os.path.join(root, name)
        rel = os.path.relpath(full, bundle)
        if name.startswith("."):
            continue
        with open(full, "rb") as f:
            data = f.read()
        files.append((rel, data))
files.sort(key=lambda item: (item[0] != "bundle.json", item[0]))
blobs = {}


def digest_of(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def media_type(path):
    if path == "bundle.json":
        return "application/vnd.ptbundle.manifest.v1+json"
    if path.endswith(".sig"):
        return "application/vnd.dev.sigstore.bundle.v0.3+json"
    return "application/vnd.cncf.model.weight.v1.raw"


layers = []
for rel, data in files:
    d = digest_of(data)
    blobs[d] = data
    layers.append({"mediaType": media_type(rel), "digest": d, "size": len(data),
                   "annotations": {"org.cncf.model.filepath": rel}})
# The part file the blob modes spoil: the first .ptd, else the first non-json file.
victim = next((l for l in layers if l["annotations"]["org.cncf.model.filepath"].endswith(".ptd")), layers[-1])
if mode == "dotdot":
    victim["annotations"]["org.cncf.model.filepath"] = "../" + os.path.basename(victim["annotations"]["org.cncf.model.filepath"])
if mode == "absolute":
    victim["annotations"]["org.cncf.model.filepath"] = "/tmp/ptbundle-hostile-absolute.ptd"
config = json.dumps({"descriptor": {"name": "hostile"}, "modelfs": {"type": "layers", "diffIds": [l["digest"] for l in layers]},
                     "config": {"format": "executorch"}}).encode()
blobs[digest_of(config)] = config
manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": "application/vnd.cncf.model.manifest.v1+json",
            "config": {"mediaType": "application/vnd.cncf.model.config.v1+json", "digest": digest_of(config), "size": len(config)},
            "layers": layers}
manifest_bytes = json.dumps(manifest).encode()
# many_layers: the manifest streamed in pieces, never whole in memory.
many_head = (json.dumps({k: v for k, v in manifest.items() if k != "layers"})[:-1] + ', "layers": [').encode()
many_one = json.dumps(layers[0]).encode()
many_count = 1000000
many_size = len(many_head) + len(many_one) * many_count + (many_count - 1) + 2
counts = {"manifest": 0}
state = {"port": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self):
        auth = self.headers.get("Authorization", "")
        if mode == "blob_redirect":
            if auth == "Basic " + base64.b64encode(b"user:secret").decode():
                return True
            self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                       [("WWW-Authenticate", 'Basic realm="hostile"')])
            return False
        if mode == "bearer":
            if auth == "Bearer the-token":
                return True
            realm = "http://127.0.0.1:%d/token" % state["port"]
            self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                       [("WWW-Authenticate", 'Bearer realm="%s",service="hostile",scope="repository:x:pull"' % realm)])
            return False
        return True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path
        if path.startswith("/token"):
            if self.headers.get("Authorization", "") == "Basic " + base64.b64encode(b"user:secret").decode():
                return self.reply(200, b'{"token": "the-token"}')
            return self.reply(401, b"{}")
        if path.startswith("/direct/"):
            with open(port_file + ".auth", "w") as f:
                f.write("present" if "Authorization" in self.headers else "absent")
            return self.reply(200, blobs.get(path[len("/direct/"):], b""))
        if not self.authorized():
            return
        if path == "/v2/":
            return self.reply(200, b"{}")
        if "/manifests/" in path:
            counts["manifest"] += 1
            if mode == "manifest_redirect":
                return self.reply(302, b"", [("Location", "http://localhost:%d/elsewhere" % state["port"])])
            if mode == "errors":
                return self.reply(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"},'
                                       b'{"code":"NAME_UNKNOWN","message":"repository name not known"}]}',
                                  [("Content-Type", "application/json")])
            if mode == "many_layers":
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                self.send_header("Content-Length", str(many_size))
                self.end_headers()
                try:
                    self.wfile.write(many_head)
                    piece = b",".join([many_one] * 1000)
                    for i in range(many_count // 1000):
                        self.wfile.write((b"," if i else b"") + piece)
                    self.wfile.write(b"]}")
                except OSError:
                    pass
                return
            if mode == "flaky" and counts["manifest"] <= 2:
                return self.reply(503, b'{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}')
            return self.reply(200, manifest_bytes, [("Content-Type", "application/vnd.oci.image.manifest.v1+json")])
        if "/blobs/" in path:
            d = path.rsplit("/", 1)[1]
            data = blobs.get(d)
            if data is None:
                return self.reply(404, b'{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}')
            if mode == "blob_redirect":
                return self.reply(307, b"", [("Location", "http://localhost:%d/direct/%s" % (state["port"], d))])
            if d == victim["digest"]:
                if mode == "wrong_digest":
                    data = bytes([data[0] ^ 0x5A]) + data[1:]
                elif mode == "long":
                    data = data + b"\0" * 4096
                elif mode == "truncated":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                elif mode == "slow_drip":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(1.0)
                    return
            return self.reply(200, data)
        self.reply(404, b"{}")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
state["port"] = server.server_address[1]
with open(port_file + ".tmp", "w") as f:
    f.write(str(state["port"]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
