#!/usr/bin/env python3
"""Writes an OCI image layout holding one ModelPack model, as a tool other than
ptbundle would, following the OCI image-layout and ModelPack specifications
(no code of ptbundle's): skopeo then copies it into a registry.

  write_layout.py LAYOUT TAG FOLDER [--bundle-json-type TYPE]

Every regular file under FOLDER becomes one raw layer (its digest the file's
SHA-256, its path in org.cncf.model.filepath): files ending in .json as
ModelPack weight configs (bundle.json included, unless --bundle-json-type
names another type for it), *.sig as Sigstore bundles, the rest as weights.
"""
import hashlib
import json
import os
import sys


def main():
    layout, tag, folder = sys.argv[1:4]
    bundle_json_type = None
    if len(sys.argv) > 5 and sys.argv[4] == "--bundle-json-type":
        bundle_json_type = sys.argv[5]
    blobs = os.path.join(layout, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)

    def put(data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, digest), "wb") as f:
            f.write(data)
        return "sha256:" + digest, len(data)

    layers = []
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            if name.startswith("."):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, folder)
            with open(full, "rb") as f:
                digest, size = put(f.read())
            if rel == "bundle.json" and bundle_json_type:
                media = bundle_json_type
            elif name.endswith(".json"):
                media = "application/vnd.cncf.model.weight.config.v1.raw"
            elif name.endswith(".sig"):
                media = "application/vnd.dev.sigstore.bundle.v0.3+json"
            else:
                media = "application/vnd.cncf.model.weight.v1.raw"
            layers.append({"mediaType": media, "digest": digest, "size": size,
                           "annotations": {"org.cncf.model.filepath": rel}})
    config = {"descriptor": {"name": os.path.basename(os.path.abspath(folder)), "vendor": "write_layout.py"},
              "modelfs": {"type": "layers", "diffIds": [layer["digest"] for layer in layers]},
              "config": {"format": "safetensors"}}
    config_digest, config_size = put(json.dumps(config).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": "application/vnd.cncf.model.manifest.v1+json",
                "config": {"mediaType": "application/vnd.cncf.model.config.v1+json", "digest": config_digest,
                           "size": config_size},
                "layers": layers}
    manifest_digest, manifest_size = put(json.dumps(manifest).encode())
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
                            "size": manifest_size, "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)


if __name__ == "__main__":
    main()
