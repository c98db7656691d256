"""google/benchmark built from Debian's source package, kept in perfscale's cache.

Debian 12's libbenchmark-dev (1.7.1) is built without NDEBUG: every run printed
"Library was built as DEBUG" and recorded library_build_type: debug. tools/setup fetches
the source package of the version named in WORKSPACE (from Debian's archive, through
tools/debian-archive) into PERFSCALE_CACHE/src/benchmark-VERSION; this rule only links that
folder in, so a build reads nothing from the network, and once fetched works offline.
"""

def _cache_dir(rctx):
    cache = rctx.os.environ.get("PERFSCALE_CACHE", "")
    if not cache:
        cache = rctx.os.environ.get("HOME", "/root") + "/.cache/perfscale"
    return cache

def _benchmark_source_impl(rctx):
    source = rctx.path("%s/src/benchmark-%s" % (_cache_dir(rctx), rctx.attr.version))
    header = source.get_child("include").get_child("benchmark").get_child("benchmark.h")
    if not header.exists:
        fail("google/benchmark %s source not found at %s: run tools/setup run, which fetches " %
             (rctx.attr.version, source) + "Debian's source package into perfscale's cache")
    for entry in ("include", "src", "LICENSE"):
        rctx.symlink(source.get_child(entry), entry)
    rctx.template("BUILD.bazel", rctx.attr.build_file, {"@VERSION@": rctx.attr.version})
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

benchmark_source = repository_rule(
    implementation = _benchmark_source_impl,
    attrs = {
        "version": attr.string(mandatory = True),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
    },
    # Where the cache is; a changed PERFSCALE_CACHE or HOME re-links the source.
    environ = ["PERFSCALE_CACHE", "HOME"],
    local = True,
)
