"""docs/runtime.md's example program runs as it is written, from the repository root."""

import re
import subprocess
import sys

from bench.builds import REPO


def test_the_example_of_the_runtime_guide_runs(tmp_path):
    text = (REPO / "docs" / "runtime.md").read_text()
    example = re.search(r"## Use\n.*?```python\n(.*?)```", text, re.S).group(1)
    (tmp_path / "example.py").write_text(example)
    result = subprocess.run([sys.executable, str(tmp_path / "example.py")], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"docs/runtime.md's example failed:\n{result.stderr[-3000:]}"
    assert "'body.weight': 'gbinary'" in result.stdout and "'head.weight': 'fp32'" in \
        result.stdout, f"the example's routes: {result.stdout}"
