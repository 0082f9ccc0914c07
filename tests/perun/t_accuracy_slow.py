"""Attribution accuracy, the quick subset of `make accuracy`: real perun
over the emulated RAPL sensor (known power per phase), libanchor preloaded,
anchorpost phases vs truth.json.  Asserts the DESIGN.md targets on it:
<= 2 % for phases >= 5 sensor periods, <= 10 % for phases <= period/5 with
>= 200 repetitions (with exact perun alignment and with execution_dt +
offset fit), 95 % intervals covering the truth in >= 90 % of rows."""
import os
import subprocess
import sys

root = os.environ["ANCHOR_ROOT"]
r = subprocess.run([os.environ["PYTHON"], os.path.join(root, "bench", "accuracy.py"), "--quick",
                    "--out", os.environ["ANCHOR_TEST_TMP"]], capture_output=True, text=True)
print(r.stdout[-6000:])
print(r.stderr[-2000:], file=sys.stderr)
sys.exit(r.returncode)
