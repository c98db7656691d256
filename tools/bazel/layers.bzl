"""The C++ layers as Bazel visibility (docs/architecture.md, "The C++ layers").

Dependencies run one way: benchmarks/<family>/ -> benchmarks/harness/ -> lib/, with
testing/common/ for tests only. Each layer's BUILD file sets its package's
default_visibility to the list below that names who may depend on it (abseil's model:
what is internal is visible only to the packages that are meant to use it), so a
dependency that reaches up or sideways fails to build, with Bazel's "is not visible"
error, instead of building quietly. testing/common/'s libraries are also testonly, so
code that is not a test cannot depend on them even where visibility allows it.

layers_refused_test plants such dependencies and passes only if Bazel refuses each one:
the check that the rules above hold (and that a later `//visibility:public` would be
noticed).
"""

# lib/: the families, the harness, the tests and the fuzz targets, and tools/inject
# (the syscall injector as a program). lib's own targets see each other (same package).
LIB_VISIBILITY = [
    "//benchmarks:__subpackages__",
    "//testing:__subpackages__",
    "//tools/inject:__pkg__",
]

# benchmarks/harness/: the families (and //benchmarks, whose suite links main), the test
# support and the tests and fuzz targets under testing/. Not lib/.
HARNESS_VISIBILITY = [
    "//benchmarks:__subpackages__",
    "//testing:__subpackages__",
]

# benchmarks/<family>/: its own package, //benchmarks (the suite and the aliases), the
# fuzz targets (a family's parsers) and the hostile tests (its binary). No other family,
# not the harness, not lib/.
FAMILY_VISIBILITY = [
    "//benchmarks:__pkg__",
    "//testing/fuzz:__pkg__",
    "//testing/hostile:__pkg__",
]

# testing/common/: tests anywhere in the C++ tree (its libraries are testonly as well).
TEST_SUPPORT_VISIBILITY = [
    "//benchmarks:__subpackages__",
    "//lib:__pkg__",
    "//testing:__subpackages__",
]

def _refused_impl(ctx):
    # A transition on the attribute makes it a list of one.
    target = ctx.attr.target_under_test[0]
    if AnalysisFailureInfo not in target:
        return [AnalysisTestResultInfo(
            success = False,
            message = "%s built, but it depends on %s, which the layers forbid (%s)" % (
                target.label,
                ctx.attr.dep,
                ctx.attr.why,
            ),
        )]
    messages = [cause.message for cause in target[AnalysisFailureInfo].causes.to_list()]
    refused = [m for m in messages if ctx.attr.expect in m]
    return [AnalysisTestResultInfo(
        success = bool(refused),
        message = "\n".join(refused) if refused else (
            "%s failed, but not with '%s':\n%s" % (target.label, ctx.attr.expect, "\n".join(messages))
        ),
    )]

_allow_analysis_failures = analysis_test_transition(
    settings = {"//command_line_option:allow_analysis_failures": "True"},
)

_refused_test = rule(
    implementation = _refused_impl,
    attrs = {
        "target_under_test": attr.label(cfg = _allow_analysis_failures, mandatory = True),
        "dep": attr.string(),
        "why": attr.string(),
        "expect": attr.string(),
    },
    analysis_test = True,
    test = True,
)

def layers_refused_test(name, planted):
    """Plants each upward dependency in this package; passes when Bazel refuses them all.

    For each entry a library `name`_<i> (tagged manual, so `//...` never builds it) depends
    on the label, and a test `name`_<i>_refused passes only when analysing that library fails
    with the expected error; `name` is a test_suite of them.

    Args:
      name: the test suite.
      planted: label -> (why the layers forbid it, the error Bazel must give): "visibility"
        ("is not visible from target") or "testonly" (a non-test target on a testonly one).
    """
    expected = {
        "visibility": "is not visible from target",
        "testonly": "depends on testonly target",
    }
    tests = []
    for i, (dep, (why, kind)) in enumerate(sorted(planted.items())):
        library = "%s_%d" % (name, i)
        native.cc_library(
            name = library,
            deps = [dep],
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
        _refused_test(
            name = library + "_refused",
            size = "small",
            target_under_test = ":" + library,
            dep = dep,
            why = why,
            expect = expected[kind],
        )
        tests.append(":" + library + "_refused")
    native.test_suite(name = name, tests = tests)
