"""Reading Google Benchmark JSON (NaN tokens included), name parsing, strict writing."""

import json
import math

import pytest

from conftest import data
from perfscale.results import (comparepy as results_comparepy, io as results_io,
                               names as results_names)


def _strict(text):
    def refuse(token):
        raise AssertionError("non-strict JSON token %s" % token)
    return json.loads(text, parse_constant=refuse)


def test_bare_nan_and_infinity_tokens_are_read():
    results = results_io.load_results(data("nan.json"))
    pipe = results.entries["BM_PipePingPong/set:none/callchain:0/real_time"]
    assert len(pipe.real_ns) == 10
    # Non-finite counters are left out, finite ones kept.
    assert "samples/op" not in pipe.counters and "lost" not in pipe.counters
    assert len(pipe.counters["usecs/op"]) == 10
    # A repetition with a NaN time is no sample at all.
    enable = results.entries["BM_BreakpointEnable/passive:0/active:0/placement:0/real_time"]
    assert len(enable.real_ns) == 9 and all(math.isfinite(v) for v in enable.real_ns)


def test_what_we_write_is_strict_json():
    text = results_io.dumps({"a": math.nan, "b": [math.inf, -math.inf, 1.5]})
    assert _strict(text) == {"a": None, "b": [None, None, 1.5]}
    cleaned = _strict(results_comparepy.clean_document(data("nan.json")))
    names = {b["name"] for b in cleaned["benchmarks"]}
    assert "BM_PipePingPong/set:lockdep/callchain:0/real_time" not in names  # error entry


def test_context_gives_host_and_online_cpus():
    results = results_io.load_results(data("base.json"))
    assert (results.host, results.cpus) == ("perfscale-ci-1", 2)
    assert results.context["kernel_release"] == "6.1.0-27-amd64"


def test_entries_keep_registration_order_despite_interleaving():
    names = list(results_io.load_results(data("base.json")).entries)
    assert names[0].startswith("BM_BreakpointThread/breakpoints:0/")
    assert names[-1] == "BM_PipePingPong/set:lockdep/callchain:0/real_time"


def test_times_are_kept_in_nanoseconds_whatever_the_unit():
    text = json.dumps({"context": {}, "benchmarks": [
        {"name": "BM_A", "run_type": "iteration", "real_time": 2.0, "cpu_time": 1.0,
         "time_unit": "ms", "iterations": 3, "items/op": 4}]})
    entry = results_io.parse_results(text).entries["BM_A"]
    assert entry.real_ns == [2e6] and entry.cpu_ns == [1e6]
    assert entry.counters == {"items/op": [4.0]} and entry.time_unit == "ms"


def test_aggregates_only_files_still_give_one_value():
    text = json.dumps({"context": {}, "benchmarks": [
        {"name": "BM_A_median", "run_name": "BM_A", "run_type": "aggregate",
         "aggregate_name": "median", "real_time": 5.0, "cpu_time": 5.0, "time_unit": "us"}]})
    entry = results_io.parse_results(text).entries["BM_A"]
    assert entry.real_ns == [5000.0] and entry.aggregates_only


@pytest.mark.parametrize("name,family,params,flags", [
    ("BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time",
     "BM_BreakpointThread", {"breakpoints": "4", "parallelism": "2", "threads": "20"},
     ("real_time",)),
    ("BM_EventOpen/strategy:cpu_major/events:700/min_time:0.100/real_time", "BM_EventOpen",
     {"strategy": "cpu_major", "events": "700"}, ("real_time",)),
    ("BM_memcpy/8/64", "BM_memcpy", {"arg0": "8", "arg1": "64"}, ()),
    ("BM_Plain", "BM_Plain", {}, ()),
    ("BM_Odd//key:/:v/x:1:2", "BM_Odd", {"key": "", "x": "1:2"}, (":v",)),
])
def test_names_parse_tolerantly(name, family, params, flags):
    parsed = results_names.parse_name(name)
    assert (parsed.family, parsed.params, parsed.flags) == (family, params, flags)


def test_siblings_group_on_the_other_parameters():
    a = results_names.parse_name("BM_X/b:0/t:5")
    b = results_names.parse_name("BM_X/b:4/t:5")
    assert a.without("b") == b.without("b") == (("t", "5"),)


@pytest.mark.parametrize("context,cpus", [
    ({"num_online_cpus": "2", "online_cpus": "0-1", "num_cpus": 4}, 2),
    ({"online_cpus": "0-3,8,10-11", "num_cpus": 16}, 7),
    ({"online_cpus": "3"}, 3),
    ({"online_cpus": "garbage-x", "num_cpus": 4}, 4),
    ({}, 0),
])
def test_cpu_count_prefers_online_cpus(context, cpus):
    results = results_io.ResultSet("x.json", context, {})
    assert results.cpus == cpus


def test_synthesize_vanished_tasks_are_a_counter_not_a_skip():
    # Google Benchmark writes "skipped" for a skipped benchmark; synthesize's count of tasks
    # that exited mid-read is "tasks_vanished", a counter like any other.
    row = {"name": "BM_Synthesize/workload:system/real_time", "run_type": "iteration",
           "iterations": 3, "real_time": 120.0, "cpu_time": 40.0, "time_unit": "us",
           "records": 900.0, "tasks_vanished": 2.0}
    results = results_io.parse_results(json.dumps({"context": {}, "benchmarks": [row]}))
    entry = results.entries["BM_Synthesize/workload:system/real_time"]
    assert entry.errors == [] and len(entry.real_ns) == 1
    assert entry.counters["tasks_vanished"] == [2.0]


@pytest.mark.parametrize("row", [
    # Google Benchmark 1.8+ (SkipWithMessage): a skip of its own.
    {"skipped": True, "skip_message": "no breakpoint PMU"},
    # 1.7 and before: perfscale's skips were errors whose message said SKIPPED.
    {"error_occurred": True, "error_message": "SKIPPED: no breakpoint PMU"},
])
def test_a_skip_reads_the_same_in_the_old_and_the_new_format(row):
    row = dict(row, name="BM_X/a:1/real_time", run_type="iteration", iterations=0,
               real_time=0.0, cpu_time=0.0, time_unit="us")
    results = results_io.parse_results(json.dumps({"context": {}, "benchmarks": [row]}))
    entry = results.entries["BM_X/a:1/real_time"]
    assert entry.errors == ["SKIPPED: no breakpoint PMU"] and entry.real_ns == []
    assert entry.skipped


def test_an_error_is_not_a_skip():
    row = {"name": "BM_X", "run_type": "iteration", "error_occurred": True,
           "error_message": "ERROR: INTERNAL: read failed", "real_time": 0.0, "cpu_time": 0.0}
    results = results_io.parse_results(json.dumps({"context": {}, "benchmarks": [row]}))
    assert results.entries["BM_X"].errors == ["ERROR: INTERNAL: read failed"]
    assert not results.entries["BM_X"].skipped


LOCK_ROW = ("BM_PipePingPong/set:lock/callchains:off/scope:task/tasks:processes/"
            "placement:same_cpu/sink:discard/real_time")
KERNEL_LIST_ROWS = [
    LOCK_ROW,
    "BM_PipePingPong/set:lock/recorder:bpf/scope:cpu/tasks:processes/placement:same_cpu/real_time",
    "BM_PipePingPong/set:none/tasks:processes/placement:same_cpu/real_time",
    "BM_TracedSyscall/syscall:openat/tracepoints:syscalls/real_time",
    "BM_TracedSyscall/syscall:openat/tracepoints:raw_syscalls/real_time",
]
CONTENTION = {"lock_tracepoints": "lock:contention_begin,lock:contention_end",
              "syscall_user_fields": "none"}
LOCKDEP = {"lock_tracepoints": "lock:contention_begin,lock:contention_end,lock:lock_acquire,"
                               "lock:lock_release",
           "syscall_user_fields": "syscalls:sys_enter_openat:__filename_val"}


def test_a_kernel_that_gained_tracepoints_or_copies_is_named_with_the_rows_it_moves():
    lock, copies = results_io.kernel_list_lines(CONTENTION, LOCKDEP, KERNEL_LIST_ROWS)
    assert lock == (
        "kernel changed lock tracepoints (context lock_tracepoints): the new run's kernel has "
        "lock:lock_acquire, lock:lock_release, which the base run's lacks; the set:lock rows "
        "record every one, so 1 of these rows may have moved for that alone")
    assert "syscalls:sys_enter_openat:__filename_val, which the base run's lacks" in copies
    assert "tracepoints:syscalls rows' records carry it, so 1 of these rows" in copies
    # The other way round: what the new kernel no longer has.
    lock, _ = results_io.kernel_list_lines(LOCKDEP, CONTENTION, KERNEL_LIST_ROWS)
    assert ("the new run's kernel lacks lock:lock_acquire, lock:lock_release, which the base "
            "run's had") in lock
    # Both at once.
    (both,) = results_io.kernel_list_lines({"lock_tracepoints": "lock:a,lock:b"},
                                           {"lock_tracepoints": "lock:b,lock:c"})
    assert "has lock:c, which the base run's lacks; the new run's kernel lacks lock:a" in both
    assert "so 0 of these rows" in both


def test_equal_absent_or_unlistable_kernel_lists():
    assert results_io.kernel_list_lines(CONTENTION, dict(CONTENTION), KERNEL_LIST_ROWS) == []
    # Order and spacing are not differences.
    assert results_io.kernel_list_lines({"lock_tracepoints": "lock:b,lock:a"},
                                        {"lock_tracepoints": " lock:a, lock:b"}) == []
    # Runs from before the lists (or without the rows that list them) say nothing.
    assert results_io.kernel_list_lines({}, LOCKDEP, KERNEL_LIST_ROWS) == []
    assert results_io.kernel_list_lines({}, {}) == []
    # A run that could not list them is said to be not compared, never a difference.
    unlisted = {"lock_tracepoints": "unavailable: cannot read /sys/kernel/tracing/available_events"}
    assert results_io.kernel_list_lines(CONTENTION, unlisted) == [
        "not compared: lock tracepoints, which the new run could not list (unavailable: "
        "cannot read /sys/kernel/tracing/available_events)"]
    assert results_io.kernel_list(unlisted, "lock_tracepoints") is None
    assert results_io.kernel_list({"syscall_user_fields": "none"}, "syscall_user_fields") == set()
    assert results_io.kernel_list({"lock_tracepoints": 3}, "lock_tracepoints") is None
