#!/usr/bin/env python3
"""Validates a JSON document against one of schemas/*.schema.json.

  validate_schema.py SCHEMA DOCUMENT [REFERENCED_SCHEMA ...]

Schemas that SCHEMA refers to by $id are given after the document. Works with
jsonschema 4.10 (Debian 12's python3-jsonschema, through RefResolver) and with
newer ones (through the referencing registry). Exit 0 when valid; otherwise
the first error on stderr and exit 1.
"""
import json
import sys

import jsonschema


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        document = json.load(f)
    referenced = []
    for path in sys.argv[3:]:
        with open(path) as f:
            referenced.append(json.load(f))
    jsonschema.Draft202012Validator.check_schema(schema)
    try:
        import referencing

        registry = referencing.Registry()
        for other in referenced:
            registry = registry.with_resource(other["$id"], referencing.Resource.from_contents(other))
        validator = jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:
        store = {other["$id"]: other for other in referenced}
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
        validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    try:
        validator.validate(document)
    except jsonschema.ValidationError as error:
        sys.exit(f"{sys.argv[2]}: {error.message} (at {'/'.join(map(str, error.absolute_path))})")


if __name__ == "__main__":
    main()
