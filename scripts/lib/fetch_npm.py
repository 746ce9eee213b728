#!/usr/bin/env python3
"""fetch_npm.py NAME VERSION INTEGRITY DEST - fetches an npm package's tarball
from the npm registry (registry.npmjs.org, or $NPM_REGISTRY) without npm,
checks it against the registry's published integrity (sha512-BASE64, as
`npm view NAME@VERSION dist.integrity` prints it) and unpacks its package/
folder as DEST. Used by scripts/test.sh for test-only tools (speedscope's
importer); nothing it fetches enters the repository. Exit 0, or 1 with one
line on stderr (no network, a checksum that differs, a bad tarball)."""
import base64
import hashlib
import io
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request


def main():
    name, version, integrity, dest = sys.argv[1:5]
    registry = os.environ.get("NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")
    url = f"{registry}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data = r.read(64 << 20)
    except OSError as e:
        sys.exit(f"fetch_npm: {url}: {e}")
    algo, _, want = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        sys.exit(f"fetch_npm: {url}: expected {integrity}, found {algo}-{got}")
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
            t.extractall(tmp, filter="data")
        os.replace(os.path.join(tmp, "package"), dest)
    except (OSError, tarfile.TarError) as e:
        sys.exit(f"fetch_npm: {url}: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
