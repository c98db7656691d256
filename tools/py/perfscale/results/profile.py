"""The `--profile` side file of a run: each benchmark's top kernel and user symbols.

A run made with `--profile` (or `tools/perfscale run --profile`) names its profile file in
the JSON context (`profile_file`). The file holds, per benchmark, the share of cpu-clock
samples whose leaf is in each symbol (self) and whose stack holds it anywhere (children),
as `perf report --children` shows them. This module finds the file, checks it and puts
the top symbols on the report page, the way the seed mails quote a profile.
"""

import json
import os

_LINES = 8  # symbols per table


class ProfileError(Exception):
    pass


def find_profile(results):
    """The path of `results`' profile file, None when the run was not profiled."""
    named = results.context.get("profile_file")
    if not isinstance(named, str) or not named:
        return None
    source_dir = os.path.dirname(os.path.abspath(results.source))
    # As written by the binary, then beside the results (the folder may have moved).
    for candidate in (named, os.path.join(source_dir, os.path.basename(named))):
        if os.path.isfile(candidate):
            return candidate
    raise ProfileError("profile file %s (named in the run's context) is missing" % named)


def load_profile(path):
    """The parsed file; ProfileError when it is not what --profile writes."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as err:
        raise ProfileError("cannot read profile file %s: %s" % (path, err)) from err
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        raise ProfileError("%s is not a perfscale profile (no 'benchmarks' list)" % path)
    for entry in document["benchmarks"]:
        if (not isinstance(entry, dict) or not isinstance(entry.get("name"), str)
                or not isinstance(entry.get("symbols"), list)):
            raise ProfileError("%s: a benchmark entry without name or symbols" % path)
        for symbol in entry["symbols"]:
            if not isinstance(symbol, dict) or not all(
                    isinstance(symbol.get(k), (int, float)) for k in ("self", "children")):
                raise ProfileError("%s: %s: a symbol without self/children shares"
                                   % (path, entry["name"]))
    return document


# The results file names a benchmark with the time it reports (BM_X/real_time); its
# profile, with the name it ran under (BM_X).
_TIME_SUFFIXES = ("/real_time", "/manual_time", "/process_time")


def benchmark_profile(document, name):
    """The profile entry of benchmark `name` (as the results file names it) in a loaded
    profile document, or None."""
    if not document:
        return None
    wanted = {name} | {name[:-len(s)] for s in _TIME_SUFFIXES if name.endswith(s)}
    return next((b for b in document["benchmarks"] if b["name"] in wanted), None)


def share_moves(base, head):
    """What moved between two profiles of one benchmark (entries of load_profile's
    benchmarks): [(symbol, is kernel, (base self, head self), (base children, head
    children))], the largest move of either share first. A symbol one side lacks has
    share 0 there (below that side's top symbols, or not run at all)."""
    shares = {}
    for side, entry in ((0, base), (1, head)):
        for s in entry["symbols"]:
            key = str(s.get("symbol", "?"))
            found = shares.setdefault(key, [bool(s.get("kernel")), [0.0, 0.0], [0.0, 0.0]])
            found[0] = found[0] or bool(s.get("kernel"))
            found[1][side] = float(s.get("self", 0.0))
            found[2][side] = float(s.get("children", 0.0))
    moves = [(symbol, kernel, tuple(own), tuple(children))
             for symbol, (kernel, own, children) in shares.items()]
    return sorted(moves, key=lambda m: (-max(abs(m[2][1] - m[2][0]), abs(m[3][1] - m[3][0])),
                                        m[0]))


def _rows(symbols, key, kernel_only=False):
    ranked = sorted((s for s in symbols if s[key] > 0 and (s.get("kernel") or not kernel_only)),
                    key=lambda s: -s[key])[:_LINES]
    return [["%.2f%%" % (100 * s["self"]), "%.2f%%" % (100 * s["children"]),
             "[k]" if s.get("kernel") else "[.]", _short(str(s.get("symbol", "?"))),
             str(s.get("dso", ""))] for s in ranked]


def _short(symbol, width=90):
    return symbol if len(symbol) <= width else symbol[:width - 3] + "..."


def add_profile_section(page, results):
    """A 'Profiles' section when `results` was profiled; a note when its file is bad."""
    try:
        path = find_profile(results)
        if path is None:
            return
        document = load_profile(path)
    except ProfileError as err:
        page.heading("Profiles")
        page.text(str(err))
        return
    page.heading("Profiles")
    page.text("cpu-clock samples at %s Hz of each benchmark's own tasks during its timed "
              "region, kernel and user callchains (%s). self: the sample's leaf is in the "
              "symbol; children: the symbol is anywhere on its stack (perf report "
              "--children). Kernel symbols: %s."
              % (document.get("frequency_hz", "?"), os.path.basename(path),
                 document.get("kernel_symbols", "?")))
    header = ["self", "children", "", "symbol", "dso"]
    for entry in document["benchmarks"]:
        page.heading(entry["name"], 3)
        line = "%s samples" % entry.get("samples", 0)
        if entry.get("lost"):
            line += ", %s lost" % entry["lost"]
        if entry.get("note"):
            line += "; %s" % entry["note"]
        page.text(line)
        page.text("By self:")
        page.table(header, _rows(entry["symbols"], "self"))
        # Above the work, main and the benchmark runner hold 100% and explain nothing.
        page.text("Kernel frames by children:")
        page.table(header, _rows(entry["symbols"], "children", kernel_only=True))
