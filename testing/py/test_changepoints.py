"""E-Divisive means on series with known steps, and on A/A series with none."""

import numpy
import pytest

from perfscale.gate import changepoints


def _series(rng, levels, length, noise=0.03):
    """Lognormal noise around piecewise-constant levels of `length` runs each."""
    return numpy.concatenate([level * numpy.exp(rng.normal(0, noise, length))
                              for level in levels])


@pytest.mark.parametrize("seed", range(10))
def test_a_single_step_is_found_within_a_few_runs_of_where_it_began(seed):
    rng = numpy.random.default_rng(seed)
    series = _series(rng, [100.0, 110.0], 40)
    points = changepoints.detect(series)
    assert len(points) == 1, points
    assert abs(points[0].index - 40) <= 3
    assert points[0].change == pytest.approx(0.10, abs=0.03)


def test_two_steps_and_a_recovery_are_all_found():
    rng = numpy.random.default_rng(7)
    series = _series(rng, [100.0, 120.0, 100.0, 90.0], 30)
    points = changepoints.detect(series)
    assert [p.index for p in points] == pytest.approx([30, 60, 90], abs=3)
    assert all(p.pvalue < changepoints.DEFAULT_ALPHA for p in points)


@pytest.mark.parametrize("seed", range(20))
def test_an_aa_series_has_no_step(seed):
    rng = numpy.random.default_rng(1000 + seed)
    assert changepoints.detect(_series(rng, [100.0], 80)) == []


def test_indexes_refer_to_the_series_given_with_its_gaps():
    rng = numpy.random.default_rng(3)
    series = list(_series(rng, [100.0, 130.0], 20))
    series[5] = float("nan")
    series[10] = 0.0
    points = changepoints.detect(series)
    assert len(points) == 1 and abs(points[0].index - 20) <= 2


def test_a_series_shorter_than_two_segments_has_none():
    assert changepoints.detect([1.0, 2.0, 3.0]) == []
    assert changepoints.detect([]) == []


def test_the_same_series_gives_the_same_points():
    rng = numpy.random.default_rng(11)
    series = _series(rng, [100.0, 104.0], 30, noise=0.02)
    assert changepoints.detect(series) == changepoints.detect(series)
