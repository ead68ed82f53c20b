#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole lit suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
set +e
/usr/lib/llvm-22/bin/lit -sv build/test --xunit-xml-output build/test-results.xml
status=$?
set -e
# One closing line with the counts, in the plain form CI reads.
.venv/bin/python - <<'PY'
import xml.etree.ElementTree as ET
root = ET.parse("build/test-results.xml").getroot()
cases = root.iter("testcase")
passed = failed = skipped = 0
for c in cases:
    if c.find("failure") is not None or c.find("error") is not None:
        failed += 1
    elif c.find("skipped") is not None:
        skipped += 1
    else:
        passed += 1
print(f"memfit: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
