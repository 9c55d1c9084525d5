"""The parameter space of a test: the only place a grid is expanded, and lazily.

A test's knobs come from ``cmd_args`` (nested tables flattened to dotted names),
``extra_env_vars`` (named ``extra_env_vars.<VAR>``) and ``num_nodes``. A value is

* a scalar: fixed, the same in every trial;
* a non-empty list: a categorical dimension;
* a table ``{low, high, log = false, dtype = "float" | "int", grid_points}``: a range.

Grid points are numbered in mixed radix (the last dimension varies fastest), so
``grid_point(i)``/``grid_index(p)`` cost O(dimensions) and a 10^9-point grid costs nothing
until asked. Ranges join a grid only with ``grid_points``.

One module per job: ``dims`` (a dimension and its grid), ``grid`` (``Space``), ``knobs`` (flat names and back),
``parse`` (TOML values to a ``Space``), ``regimes`` (env param regimes), ``checks`` (why a point is not of a
space). Import the names from here.
"""

from cloudai.space.checks import point_problem, value_problem
from cloudai.space.dims import EAGER_GRID, Categorical, Dimension, Range
from cloudai.space.grid import Space, first_value
from cloudai.space.knobs import ENV_PREFIX, NUM_NODES, entry_knobs, flatten, is_range, split_knobs, unflatten
from cloudai.space.parse import RANGE_KEYS, parse_space
from cloudai.space.regimes import REGIME_BINS, RegimeBins, env_cell

__all__ = [
    "EAGER_GRID",
    "ENV_PREFIX",
    "NUM_NODES",
    "RANGE_KEYS",
    "REGIME_BINS",
    "Categorical",
    "Dimension",
    "Range",
    "RegimeBins",
    "Space",
    "entry_knobs",
    "env_cell",
    "first_value",
    "flatten",
    "is_range",
    "parse_space",
    "point_problem",
    "split_knobs",
    "unflatten",
    "value_problem",
]
