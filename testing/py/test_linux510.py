"""A counter a kernel cannot give is absent, not zero, and compare says so (issue 37).

data/linux510/ holds two real quick runs with --attribution=true and 9 repetitions, in
2-vCPU TCG guests of Debian 12's 6.12 and Debian 11's 5.10 (trimmed with
data/aa/trim.py): 5.10 has no ipi:ipi_send_cpu, csd:csd_queue_cpu or
lock:contention_begin, so its rows have no ipis_sent, xcalls or lock counts."""

from conftest import data
from perfscale.gate import stats
from perfscale.results import io

NEW_610 = "linux510/quick-6.12.json"
OLD_510 = "linux510/quick-5.10.json"
ROW = "BM_BreakpointEnable/passive:8/active:0/placement:other_cpus/real_time"


def test_the_510_rows_lack_the_counts_their_kernel_cannot_give():
    old, new = io.load_results(data(OLD_510)), io.load_results(data(NEW_610))
    assert "xcalls/op" in new.entries[ROW].counters
    assert "xcalls/op" not in old.entries[ROW].counters  # absent, not a column of zeros
    assert "ctx_switches/op" in old.entries[ROW].counters  # a software event 5.10 has


def test_compare_names_each_counter_one_kernel_could_not_count_and_judges_the_rest(cli):
    code, out, _ = cli("compare", "--no-table", data(NEW_610), data(OLD_510))
    assert code == 0, out
    assert ("not compared: xcalls, which the new run could not count (unavailable: "
            "tracepoint csd:csd_queue_cpu does not exist on this kernel") in out
    assert "not compared: lock_contended, which the new run could not count" in out
    assert "COUNTS UP" not in out and "no count regression" in out
    # The other way round it is the base run that could not count them.
    code, out, _ = cli("compare", "--no-table", data(OLD_510), data(NEW_610))
    assert "not compared: ipis_sent, which the base run could not count" in out
    # A count one side lacks is no test at all: not a fall from 16 to 0, nor a rise from 0.
    old, new = io.load_results(data(OLD_510)), io.load_results(data(NEW_610))
    for base, later in ((old, new), (new, old)):
        tests = stats.count_tests(base.entries[ROW], later.entries[ROW], {}, stats.Options())
        assert "xcalls/op" not in tests and "ipis_sent/op" not in tests
