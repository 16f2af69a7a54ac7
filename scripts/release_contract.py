"""Records the released toolwire.v1 contract as the baseline for `buf breaking`.

Writes proto/baseline/toolwire-v1.binpb with `buf build`: a Buf image of
proto/ as it is now. The contract tests (tests/contract/test_buf.py) run
`buf breaking` against that image, offline, so every change to the protos is
checked against what clients of the last release were built with.

When to run it: when you cut a release, after the release's protos are final,
and commit the new image with the release. Never run it to make a failing
breaking-change test pass: that failure means clients of the last release
would break. Fix the proto instead (new fields get new numbers, removed fields
are `reserved`, renames go through a new field); a contract that really must
break is a new package (toolwire.v2), not a new baseline for v1.

To keep it from being used that way, the script refuses to record a contract
that breaks the current baseline, and one that `buf lint` rejects.

    python scripts/release_contract.py
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUF = Path(sys.executable).parent / "buf"
BASELINE = REPO / "proto" / "baseline" / "toolwire-v1.binpb"


def buf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUF), *args], cwd=REPO, capture_output=True, text=True, check=False)


def main() -> int:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    lint = buf("lint")
    if lint.returncode != 0:
        print(f"buf lint fails; fix it before a release:\n{lint.stdout}{lint.stderr}")
        return 1
    if BASELINE.exists():
        breaking = buf("breaking", "--against", str(BASELINE))
        if breaking.returncode != 0:
            print(
                "The contract breaks the last release; a new baseline would hide that "
                "from every client.\nFix the proto (or start toolwire.v2) instead:\n"
                f"{breaking.stdout}{breaking.stderr}"
            )
            return 1
    BASELINE.parent.mkdir(parents=True, exist_ok=True)
    built = buf("build", "-o", str(BASELINE))
    if built.returncode != 0:
        print(f"buf build failed:\n{built.stdout}{built.stderr}")
        return 1
    digest = hashlib.sha256(BASELINE.read_bytes()).hexdigest()
    print(f"wrote {BASELINE.relative_to(REPO)} (sha256 {digest}); commit it with the release")
    return 0


if __name__ == "__main__":
    sys.exit(main())
