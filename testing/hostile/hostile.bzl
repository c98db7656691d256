"""The hostile tests' one shape: a Python script run by hostile_test.sh against the suite."""

def hostile_test(name, script, size, args = [], data = [], tags = ["external"]):
    """An sh_test that runs `script` (with `args`) through hostile_test.sh.

    Args:
      name: the test's name.
      script: the Python file that holds the cases.
      size: Bazel's size (its timeout).
      args: more arguments for the script.
      data: what the script needs besides itself, the suite and perfscale's Python.
      tags: "external" by default: they look at the running kernel, so never cached.
    """
    native.sh_test(
        name = name,
        size = size,
        srcs = ["hostile_test.sh"],
        args = [script] + args,
        data = [script] + data + [
            "//benchmarks:suite",
            "//tools/py:python",
        ],
        tags = tags,
    )
