#!/usr/bin/env python3
"""An independent implementation of the OpenSSF model-signing format for
elliptic-curve keys, written from its specification for ptbundle's tests: it
signs a folder as model_signing does ("files" serialization) and verifies a
signature as model_signing does. It shares no code with ptbundle; it uses
Python's `cryptography` for the keys.

  model_signing_reference.py sign PRIVATE.pem FOLDER SIGNATURE_NAME
  model_signing_reference.py verify PUBLIC.pem FOLDER SIGNATURE_NAME

Exit 0 on success; otherwise one line on stderr and exit 1.
"""
import base64
import hashlib
import json
import os
import pathlib
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
GIT_PATHS = [".git", ".gitattributes", ".github", ".gitignore"]


def curve_hash(key):
    size = key.curve.key_size
    if size == 256:
        return hashes.SHA256()
    if size == 384:
        return hashes.SHA384()
    if size == 521:
        return hashes.SHA512()
    raise ValueError(f"unsupported curve {key.curve.name}")


def pae(payload):
    head = f"DSSEv1 {len(PAYLOAD_TYPE)} {PAYLOAD_TYPE} {len(payload)} "
    return head.encode() + payload


def key_hint(public_key):
    pem = public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(pem).hexdigest()


def is_ignored(relative, ignore):
    return any(relative == p or relative.is_relative_to(p) for p in ignore)


def hash_folder(folder, ignore):
    """{relative posix path: sha256 hex} of every regular file; links refused."""
    root = pathlib.Path(folder)
    ignore = [pathlib.PurePosixPath(p) for p in ignore]
    out = {}
    for path in root.glob("**/*"):
        relative = pathlib.PurePosixPath(path.relative_to(root).as_posix())
        if is_ignored(relative, ignore):
            continue
        if path.is_symlink():
            raise ValueError(f"{relative}: symbolic link")
        if path.is_file():
            out[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def sign(private_pem, folder, signature_name):
    key = serialization.load_pem_private_key(pathlib.Path(private_pem).read_bytes(), None)
    ignore = [signature_name] + GIT_PATHS
    digests = hash_folder(folder, ignore)
    root = hashlib.sha256()
    resources = []
    for path in sorted(digests):  # PurePosixPath order: by components
        root.update(bytes.fromhex(digests[path]))
        resources.append({"algorithm": "sha256", "digest": digests[path], "name": str(path)})
    name = pathlib.Path(folder).resolve().name
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": root.hexdigest()}}],
        "predicateType": PREDICATE_TYPE,
        # model_signing's protobuf Struct prints its keys in no fixed order;
        # this order differs from ptbundle's on purpose.
        "predicate": {
            "resources": resources,
            "serialization": {"allow_symlinks": False, "method": "files", "hash_type": "sha256", "ignore_paths": ignore},
        },
    }
    payload = json.dumps(statement, indent=2).encode()
    signature = key.sign(pae(payload), ec.ECDSA(curve_hash(key.public_key())))
    bundle = {
        "mediaType": MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": key_hint(key.public_key())}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(signature).decode(), "keyid": ""}],
        },
    }
    (pathlib.Path(folder) / signature_name).write_text(json.dumps(bundle, separators=(",", ":")))


def verify(public_pem, folder, signature_name):
    key = serialization.load_pem_public_key(pathlib.Path(public_pem).read_bytes())
    bundle = json.loads((pathlib.Path(folder) / signature_name).read_text())
    if bundle["mediaType"] != MEDIA_TYPE:
        raise ValueError("media type")
    hint = bundle["verificationMaterial"].get("publicKey", {}).get("hint")
    if hint and hint != key_hint(key):
        raise ValueError("key mismatch: the hint is not this key's")
    envelope = bundle["dsseEnvelope"]
    if envelope["payloadType"] != PAYLOAD_TYPE:
        raise ValueError("payload type")
    payload = base64.b64decode(envelope["payload"])
    try:
        key.verify(base64.b64decode(envelope["signatures"][0]["sig"]), pae(payload), ec.ECDSA(curve_hash(key)))
    except InvalidSignature:
        raise ValueError("the signature does not verify")
    statement = json.loads(payload)
    if statement["_type"] != STATEMENT_TYPE or statement["predicateType"] != PREDICATE_TYPE:
        raise ValueError("statement type")
    (subject,) = statement["subject"]
    root = hashlib.sha256()
    signed = {}
    for resource in statement["predicate"]["resources"]:
        if resource["algorithm"] != "sha256":
            raise ValueError("algorithm")
        root.update(bytes.fromhex(resource["digest"]))
        signed[pathlib.PurePosixPath(resource["name"])] = resource["digest"]
    if root.hexdigest() != subject["digest"]["sha256"]:
        raise ValueError("the resources do not hash to the subject digest")
    serialization_args = statement["predicate"]["serialization"]
    if serialization_args["method"] != "files" or serialization_args["hash_type"] != "sha256":
        raise ValueError("serialization")
    ignore = [signature_name] + GIT_PATHS + list(serialization_args.get("ignore_paths", []))
    actual = hash_folder(folder, ignore)
    if actual != signed:
        changed = sorted(str(p) for p in set(actual) ^ set(signed) | {p for p in actual if p in signed and actual[p] != signed[p]})
        raise ValueError("files differ from the signature: " + ", ".join(changed))


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("sign", "verify"):
        sys.exit(__doc__)
    try:
        (sign if sys.argv[1] == "sign" else verify)(*sys.argv[2:])
    except (ValueError, KeyError, TypeError) as error:
        sys.exit(f"model_signing_reference: {error}")


if __name__ == "__main__":
    main()
