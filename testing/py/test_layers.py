"""The Python tools' imports run one way: commands on top of the library, each library layer
on the ones below it (docs/python-tools.md). Read from every module's source with ast, so
an import inside a function counts as much as one at the top.

Fails when a module imports a higher layer (the library a command, the gate a page), a
command imports another command or any module the dispatcher (cli), imports close a
circle, a module uses another module's private name (`_x`), a perfscale module is imported
under another name, or the library touches argparse (imports it, declares, parses or
checks options, takes a `parser`): options are the command layer's, the library takes
typed values. And a command computes no statistics (imports no `statistics`): it parses
options, calls the library and prints.
"""

import ast
import os

import pytest

from conftest import REPO_ROOT

PACKAGE_DIR = os.path.join(REPO_ROOT, "tools", "py", "perfscale")

# Lowest first: a module may import its own layer and the layers before it. Every module
# must fall in one (a new package gets its row here, and a line in docs/python-tools.md).
LAYERS = (
    ("results", ("perfscale.results",         # Google Benchmark result files
                 "perfscale.machine")),       # and the machine they ran on (identity)
    ("store", ("perfscale.history",)),        # the history database
    ("gate", ("perfscale.gate",)),            # statistics and the gate's judgement
    ("pages", ("perfscale.plots",)),          # report pages, plots, the regression mail
    ("web", ("perfscale.web",)),              # the dashboard application (serve)
    ("runner", ("perfscale.suite", "perfscale.vm", "perfscale.parity",  # running things
                "perfscale.labs")),     # and the labs' own machinery (LAVA, KCIDB)
    ("commands", ("perfscale.commands", "perfscale.cli",  # main(argv) -> int each
                  "perfscale.options")),  # the options several commands share
)
COMMANDS = "perfscale.commands"
DISPATCHER = "perfscale.cli"
# What declares or parses command-line options: argparse's own calls.
_ARGPARSE_CALLS = {"ArgumentParser", "add_argument", "add_argument_group",
                   "add_mutually_exclusive_group", "add_subparsers", "add_parser",
                   "parse_known_args", "parse_intermixed_args"}
# What checks options on a parser (its usage error) or parses them: called on a `parser`.
_PARSER_METHODS = {"error", "parse_args", "print_usage", "print_help"}
TOP = ("perfscale",)  # the package's own __init__: documentation only


def layer_of(module):
    if module in TOP:
        return -1
    for index, (_name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def module_name(path):
    rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-len(".py")]
    parts = rel.split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules():
    found = {}
    for root, _dirs, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                found[module_name(path)] = path
    return found


MODULES = all_modules()


def is_module(name):
    return name in MODULES


class Imports(ast.NodeVisitor):
    """The perfscale modules one module imports, the local names they are bound to, the
    aliases used, and the private names it reaches for in them."""

    def __init__(self, module):
        self.module = module
        self.imported = set()   # perfscale modules
        self.bound = {}         # local name -> perfscale module
        self.problems = []
        self.argparse = []      # where it imports argparse, builds or takes a parser
        self.statistics = []    # where it imports the statistics module

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name == "statistics":
                self.statistics.append("line %d: import statistics" % node.lineno)
            if alias.name.split(".")[0] == "argparse":
                self.argparse.append("line %d: import argparse" % node.lineno)
            if alias.name.split(".")[0] != "perfscale":
                continue
            self.imported.add(alias.name)
            if alias.asname:
                self.problems.append("line %d: `import %s as %s`: import it under its own "
                                     "name" % (node.lineno, alias.name, alias.asname))
                self.bound[alias.asname] = alias.name

    def visit_ImportFrom(self, node):
        source = node.module or ""
        if source == "statistics":
            self.statistics.append("line %d: from statistics import ..." % node.lineno)
        if source.split(".")[0] == "argparse":
            self.argparse.append("line %d: from argparse import ..." % node.lineno)
        if node.level:
            self.problems.append("line %d: relative import: name the perfscale module"
                                 % node.lineno)
            return
        if source.split(".")[0] != "perfscale":
            return
        for alias in node.names:
            full = source + "." + alias.name
            target = full if is_module(full) else source
            self.imported.add(target)
            if alias.asname:
                self.problems.append("line %d: `from %s import %s as %s`: import it under "
                                     "its own name" % (node.lineno, source, alias.name,
                                                       alias.asname))
            if is_module(full):
                self.bound[alias.asname or alias.name] = full
            elif alias.name.startswith("_"):
                self.problems.append("line %d: %s imports the private %s of %s"
                                     % (node.lineno, self.module, alias.name, source))

    def visit_Call(self, node):
        name = (node.func.attr if isinstance(node.func, ast.Attribute) else
                node.func.id if isinstance(node.func, ast.Name) else "")
        if name in _ARGPARSE_CALLS:
            self.argparse.append("line %d: %s(...)" % (node.lineno, name))
        elif (name in _PARSER_METHODS and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "parser"):
            # Checking an option (parser.error) or parsing them, on a parser from anywhere.
            self.argparse.append("line %d: parser.%s(...)" % (node.lineno, name))
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        if any(a.arg == "parser" for a in arguments):
            self.argparse.append("line %d: %s takes a parser" % (node.lineno, node.name))
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if (isinstance(node.value, ast.Name) and node.value.id in self.bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            self.problems.append("line %d: %s uses %s's private %s"
                                 % (node.lineno, self.module, self.bound[node.value.id],
                                    node.attr))
        self.generic_visit(node)


def scan():
    graph, problems, argparse_uses, statistics_uses = {}, {}, {}, {}
    for module, path in sorted(MODULES.items()):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        visitor = Imports(module)
        visitor.visit(tree)
        # A package's __init__ is imported on the way to its modules: not an edge.
        graph[module] = {m for m in visitor.imported if m != module
                         and not module.startswith(m + ".")}
        problems[module] = visitor.problems
        argparse_uses[module] = visitor.argparse
        statistics_uses[module] = visitor.statistics
    return graph, problems, argparse_uses, statistics_uses


GRAPH, PROBLEMS, ARGPARSE, STATISTICS = scan()


def test_every_module_is_in_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_down_the_layers(module):
    own = layer_of(module)
    wrong = []
    for target in sorted(GRAPH[module]):
        theirs = layer_of(target)
        if theirs is None:
            wrong.append("%s: not a perfscale module" % target)
        elif theirs > own:
            wrong.append("%s (layer %s) is above %s (layer %s)"
                         % (target, LAYERS[theirs][0], module, LAYERS[own][0]))
        elif (module.startswith(COMMANDS + ".") and target.startswith(COMMANDS + ".")
              and target != COMMANDS):
            wrong.append("%s is a command: commands share library code, not each other"
                         % target)
        elif target == DISPATCHER:
            wrong.append("%s is the dispatcher: no module hands a command an argv" % target)
    assert wrong == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) is not None
                                          and 0 <= layer_of(m) < len(LAYERS) - 1))
def test_the_library_has_no_argparse(module):
    """Options are declared, parsed and checked in the command layer (perfscale.options
    holds the shared ones); the library gets typed values."""
    assert ARGPARSE[module] == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if m.startswith(COMMANDS + ".")))
def test_commands_compute_no_statistics(module):
    """A command holds option parsing and printing; what it computes from results lives in
    the library, where the other commands and the tests can reach it."""
    assert STATISTICS[module] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_names_across_modules_and_no_aliases(module):
    assert PROBLEMS[module] == []


def circles(graph):
    """Every import circle of `graph` ({module: {imported modules}}), each as a path."""
    found, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                found.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def test_no_circles():
    assert circles(GRAPH) == []


def test_a_circle_is_found():
    # The circles this test was written against: gate.calibrate -> history.nightly ->
    # plots.report -> gate.calibrate, and plots.cpus <-> plots.plot.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]
    assert circles({"cpus": {"plot"}, "plot": {"cpus"}}) == ["cpus -> plot -> cpus"]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_checks_see_what_they_must_refuse():
    """The visitor itself: an alias, a relative import and a private name are caught."""
    source = ("from perfscale.gate import stats as results_stats\n"
              "from perfscale.gate import stats\n"
              "from . import names\n"
              "x = stats._counter_moves\n")
    visitor = Imports("perfscale.vm.example")
    visitor.visit(ast.parse(source))
    problems = "\n".join(visitor.problems)
    assert len(visitor.problems) == 3, problems
    assert "stats as results_stats" in problems and "relative import" in problems
    assert "private _counter_moves" in problems
    # argparse in a library module: imported, a parser built, one taken.
    visitor = Imports("perfscale.vm.example")
    visitor.visit(ast.parse("import argparse\n"
                            "def add(parser):\n"
                            "    parser.add_argument('--x')\n"
                            "p = argparse.ArgumentParser()\n"))
    assert len(visitor.argparse) == 4, visitor.argparse
    # An option checked or parsed on a parser the library was handed some other way.
    visitor = Imports("perfscale.vm.example")
    visitor.visit(ast.parse("def check(settings):\n"
                            "    parser = settings.parser\n"
                            "    parser.error('--x must be positive')\n"
                            "    return parser.parse_args([])\n"))
    assert len(visitor.argparse) == 2, visitor.argparse
    # The statistics module in a command.
    visitor = Imports("perfscale.commands.example")
    visitor.visit(ast.parse("import statistics\nfrom statistics import median\n"))
    assert len(visitor.statistics) == 2, visitor.statistics
