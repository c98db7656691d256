"""The machine-speed adjustment (benchmarks/machine_speed, issue 13) on synthetic runs: a
run's draw of the machine's speed moves every benchmark, several times as much as it moves
the user-code reference; the gate learns that slope and takes the draw out. No timing."""

import math
import random

from test_gate import entry, noisy
from perfscale.gate import confirm, floors, stats as results_stats
from perfscale.history import store as history
from perfscale.results import io as results_io

OPTIONS = results_stats.Options()
REFERENCE = ["BM_MachineSpeed/cpu:0/real_time", "BM_MachineSpeed/cpu:1/real_time"]
NAMES = ["BM_Kernel/%d/real_time" % i for i in range(10)]
SLOPE = 3.0  # the kernel paths here followed the reference about this much


def run(rng, draw, slowdown=0.0, names=NAMES, reference=True, own=0.02):
    """One whole run: the machine's speed drawn (log) `draw`, the kernel paths slowed by
    `slowdown`, each with its own spread `own` between runs."""
    entries = {n: entry(n, noisy(1000 * math.exp(SLOPE * draw + rng.gauss(0, own))
                                 * (1 + slowdown), 0.01, rng.random())) for n in names}
    if reference:
        for n in REFERENCE:
            entries[n] = entry(n, noisy(400 * math.exp(draw), 0.01, rng.random()))
    return entries


def calibration(seed=1, runs=8):
    rng = random.Random(seed)
    return floors.learn([run(rng, rng.gauss(0, 0.03)) for _ in range(runs)])


def test_calibration_learns_how_far_each_benchmark_follows_the_machine():
    learned = calibration()
    for name in NAMES:
        c = learned[(name, results_stats.REAL_TIME)]
        assert 2.0 < c.speed_beta < 4.0
        # Unadjusted the draw dominates (3 x 3% against 2%); adjusted, the benchmark's own.
        assert c.sigma < 0.035 and c.sigma < 0.7 * c.raw_sigma
        assert c.mdc < floors.floor_and_mdc(c.raw_sigma, OPTIONS.alpha, len(NAMES))[1]
    for name in REFERENCE:  # the ruler is never adjusted by itself
        assert learned[(name, results_stats.REAL_TIME)].speed_beta == 0


def test_runs_without_the_reference_are_calibrated_unadjusted():
    rng = random.Random(2)
    learned = floors.learn([run(rng, rng.gauss(0, 0.03), reference=False) for _ in range(8)])
    c = learned[(NAMES[0], results_stats.REAL_TIME)]
    assert c.speed_beta == 0 and c.sigma == c.raw_sigma > 0.05


def test_a_slope_that_does_not_narrow_the_spread_is_not_used():
    rng = random.Random(3)
    runs = []
    for _ in range(8):  # the reference moves, the benchmark does not follow it
        entries = run(rng, rng.gauss(0, 0.03))
        entries[NAMES[0]] = entry(NAMES[0], noisy(1000 * math.exp(rng.gauss(0, 0.05)), 0.01,
                                                  rng.random()))
        runs.append(entries)
    c = floors.learn(runs)[(NAMES[0], results_stats.REAL_TIME)]
    assert c.speed_beta == 0 or c.sigma < c.raw_sigma


def test_a_slower_machine_is_no_regression_and_a_real_slowdown_still_is():
    learned, rng = calibration(), random.Random(4)
    base = [run(rng, rng.gauss(0, 0.03)) for _ in range(8)]
    slow_machine = run(rng, 0.06)  # every kernel path about 20% slower, no kernel change
    raw = results_stats.compare_runs(base, [slow_machine], OPTIONS, {
        k: history.Calibration(c.name, c.metric, 0, 0, c.raw_sigma, 8)
        for k, c in learned.items()})
    verdicts = results_stats.compare_runs(base, [slow_machine], OPTIONS, learned)
    judged = [v for v in verdicts if v.name in NAMES]
    assert not any(v.regression for v in verdicts)
    assert all(abs(v.change) < 0.08 for v in judged)  # the draw was taken out
    assert all(v.screen_p < results_stats.SCREEN_P for v in raw if v.name in NAMES)
    assert "adjusted for the machine's speed" in judged[0].line()
    assert "unadjusted +" in judged[0].line()
    # The reference itself moved 6%: shown, never gated.
    (ruler,) = [v for v in verdicts if v.name == REFERENCE[0]]
    assert ruler.verdict == results_stats.SAME and "never gated" in ruler.note
    kernel_change = run(rng, 0.0, slowdown=0.15)
    verdicts = results_stats.compare_runs(base, [kernel_change], OPTIONS, learned)
    assert all(v.screen_p < 0.01 for v in verdicts if v.name in NAMES)


def test_a_run_without_the_reference_is_judged_on_the_unadjusted_spread():
    learned, rng = calibration(), random.Random(5)
    base = [run(rng, rng.gauss(0, 0.03)) for _ in range(8)]
    new = run(rng, 0.0, reference=False)
    for verdict in results_stats.compare_runs(base, [new], OPTIONS, learned):
        if verdict.name in NAMES:
            c = learned[(verdict.name, results_stats.REAL_TIME)]
            assert verdict.sigma == c.raw_sigma != c.sigma and not verdict.speed_note


def test_the_confirmation_reruns_keep_the_reference_to_judge_with(tmp_path):
    learned, rng = calibration(), random.Random(6)
    base = [run(rng, rng.gauss(0, 0.03)) for _ in range(8)]
    first = run(rng, 0.05)  # a slow stretch of the machine: suspects, no regression
    verdicts = results_stats.compare_runs(base, [first], OPTIONS, learned)
    final = confirm.confirm_suspects(
        lambda _names, _path: results_io.ResultSet("x.json", {}, run(rng, 0.05)),
        str(tmp_path), base, first, verdicts, OPTIONS, learned, rounds=2, target=1e-9)
    judged = [v for v in final if v.name in NAMES]
    assert judged and all(v.speed_note for v in judged) and not any(v.regression for v in final)


def test_the_slope_and_the_unadjusted_spread_are_stored(tmp_path):
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    history.store_calibration(conn, "h", 2, "ci", calibration().values())
    stored = history.load_calibration(conn, "h", 2, "ci")[(NAMES[0], results_stats.REAL_TIME)]
    conn.close()
    want = calibration()[(NAMES[0], results_stats.REAL_TIME)]
    assert (stored.speed_beta, stored.raw_sigma, stored.sigma) == (
        want.speed_beta, want.raw_sigma, want.sigma)


def test_a_version_2_history_keeps_its_calibration_unadjusted(tmp_path):
    import sqlite3
    path = str(tmp_path / "v2.sqlite")
    old = sqlite3.connect(path)
    old.executescript(history._RUNS_SCHEMA + history._CALIBRATION_SCHEMA
                      + "PRAGMA user_version = 2;")
    old.execute("INSERT INTO calibration VALUES ('h', 2, 'ci', 'BM_a', 'real_time', 0.1, 0.2, "
                "0.04, 8, NULL, 't')")
    old.commit()
    old.close()
    conn = history.open_history(path)
    (c,) = history.load_calibration(conn, "h", 2, "ci").values()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION
    conn.close()
    assert (c.sigma, c.speed_beta, c.raw_sigma) == (0.04, 0, 0.04)
