"""A copy of a test binary that an unprivileged user can execute: the Bazel output tree
lives under /root, out of nobody's reach."""

import os
import shutil
import tempfile


def executable_copy(binary, prefix):
    """(directory, path of the copy); the caller removes the directory."""
    directory = tempfile.mkdtemp(prefix=prefix)
    os.chmod(directory, 0o755)
    path = os.path.join(directory, os.path.basename(binary))
    shutil.copy(binary, path)
    os.chmod(path, 0o755)
    return directory, path
