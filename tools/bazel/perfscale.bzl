"""The stanzas every perfscale package repeats, written once.

- perfscale_cc_library: one component, `foo.h` + `foo.cc` (docs/architecture.md: one header, one job).
- perfscale_cc_tests: every `*_test.cc` of a package as a cc_test (google/benchmark's
  test/BUILD style): a new test needs no BUILD line unless it needs more than the
  component it tests.
- perfscale_family: a benchmark family (fleetbench's shape): its alwayslink library, its
  binary on the shared main, and that binary's smoke test.
- perfscale_fuzz: a fuzz target, replayed on its corpus by `bazel test` and built with
  libFuzzer under --config=fuzz (tools/fuzz).
"""

load("//tools/bazel:copts.bzl", "PERFSCALE_COPTS")

# The one library every component and test uses (absl::Status and friends, from Debian).
_ABSL = "@com_google_absl//:absl"
_GTEST = "@com_google_googletest//:gtest"

# What every family file includes: the registry, the suite plan, the meter, --profile,
# Google Benchmark and absl.
_FAMILY_DEPS = [
    "//benchmarks/harness:bench_support",
    "//benchmarks/harness:family",
    "//benchmarks/harness:profile_support",
    "//benchmarks/harness:suite_plan",
    "@com_github_google_benchmark//:benchmark",
    _ABSL,
]

def perfscale_cc_library(name, deps = [], srcs = None, hdrs = None, **kwargs):
    """A component: `name`.h and `name`.cc, our copts, its dependencies plus absl.

    Args:
      name: the component; its files are name.h and name.cc unless srcs/hdrs say otherwise.
      deps: what it includes besides absl (spelled out: nothing else is implied).
      srcs: defaults to [name + ".cc"].
      hdrs: defaults to [name + ".h"].
      **kwargs: any other cc_library attribute (linkopts, testonly, visibility, ...).
    """
    native.cc_library(
        name = name,
        srcs = [name + ".cc"] if srcs == None else srcs,
        hdrs = [name + ".h"] if hdrs == None else hdrs,
        copts = PERFSCALE_COPTS,
        deps = deps + ([] if _ABSL in deps else [_ABSL]),
        **kwargs
    )

def perfscale_cc_tests(
        size = "small",
        external = [],
        deps = {},
        data = {},
        sizes = {},
        tags = {},
        own_main = [],
        visibility = {},
        exclude = []):
    """One cc_test per `*_test.cc` in the package (minus `exclude`).

    Each test `foo_test` is built from foo_test.cc and depends on the package's component
    `:foo` when there is one (declare components before calling this), absl and GoogleTest's
    main. The dicts hold what differs from that, keyed by test name.

    Args:
      size: the size of the package's tests unless `sizes` says otherwise.
      external: tests whose result depends on the running kernel, mounts, sysctls, limits
        or privileges: tagged `external`, never cached (docs/architecture.md).
      deps: test name -> what it depends on beyond its component.
      data: test name -> data dependencies.
      sizes: test name -> its size.
      tags: test name -> further tags (e.g. noasan).
      own_main: tests that bring their own main() (GoogleTest without gtest_main).
      visibility: test name -> visibility (e.g. for fresh_machine_test, which runs it).
      exclude: *_test.cc files that are not gtest tests of this kind.
    """
    named = list(deps) + list(data) + list(sizes) + list(tags) + list(visibility)
    for key in named + external + own_main:
        if not native.glob([key + ".cc"]):
            fail("perfscale_cc_tests: no %s.cc in %s" % (key, native.package_name()))
    for src in native.glob(["*_test.cc"], exclude = exclude):
        name = src[:-len(".cc")]
        component = name[:-len("_test")]
        own = [":" + component] if native.existing_rule(component) else []
        native.cc_test(
            name = name,
            size = sizes.get(name, size),
            srcs = [src],
            copts = PERFSCALE_COPTS,
            data = data.get(name, []),
            tags = (["external"] if name in external else []) + tags.get(name, []),
            visibility = visibility.get(name),
            deps = own + deps.get(name, []) + [
                _ABSL,
                _GTEST if name in own_main else _GTEST + "_main",
            ],
        )

def perfscale_family(name, deps, smoke_args = []):
    """A benchmark family in benchmarks/`name`/, from its file `name`.cc.

    Makes `name`_lib (alwayslink: the family registers itself from a static initializer the
    linker would otherwise drop), the binary `name` on the shared main (tagged
    perfscale_family: `bazel query 'attr(tags, "\\bperfscale_family\\b", //benchmarks/...)'`
    lists the families), and `name`_smoke_test, which checks that the binary parses its
    flags, registers benchmarks and prints its help. Add the family to FAMILIES in
    benchmarks/BUILD.bazel to put it into //benchmarks:suite and make //benchmarks:`name`.

    Args:
      name: the family, its folder and its binary.
      deps: what `name`.cc includes besides what every family does (_FAMILY_DEPS: the
        harness's family, suite_plan, bench_support, profile_support; Google Benchmark;
        absl): its own components and the lib/ ones it uses.
      smoke_args: flags the smoke test passes to the binary as well.
    """
    native.cc_library(
        name = name + "_lib",
        srcs = [name + ".cc"],
        copts = PERFSCALE_COPTS,
        alwayslink = True,
        deps = deps + [d for d in _FAMILY_DEPS if d not in deps],
    )
    native.cc_binary(
        name = name,
        tags = ["perfscale_family"],
        deps = [
            ":" + name + "_lib",
            "//benchmarks/harness:main",
        ],
    )
    native.sh_test(
        name = name + "_smoke_test",
        size = "small",
        srcs = ["//testing/common:family_smoke_test.sh"],
        args = ["$(rootpath :%s)" % name] + smoke_args,
        data = [":" + name],
        # What registers depends on the machine (CPUs, breakpoint slots, tracefs).
        tags = ["external"],
    )

def perfscale_fuzz(name, deps):
    """A fuzz target from `name`_fuzz.cc and its corpus in corpus/`name`/.

    `name`_fuzz_replay (a test) feeds every corpus file to the target with the default
    compiler; `name`_fuzz is the libFuzzer binary, built only with --config=fuzz (clang,
    in an output base of its own: see tools/fuzz), so it is tagged manual and left out of
    `//...`.

    Args:
      name: the target.
      deps: the parsers it feeds.
    """
    native.cc_test(
        name = name + "_fuzz_replay",
        size = "small",
        srcs = [name + "_fuzz.cc"],
        args = ["%s/corpus/%s" % (native.package_name(), name)],
        copts = PERFSCALE_COPTS,
        data = native.glob(["corpus/%s/**" % name]),
        deps = deps + [":replay_main"],
    )
    native.cc_binary(
        name = name + "_fuzz",
        srcs = [name + "_fuzz.cc"],
        copts = PERFSCALE_COPTS,
        linkopts = ["-fsanitize=fuzzer"],
        tags = [
            "manual",
            "perfscale_fuzz",
        ],
        deps = deps,
    )
