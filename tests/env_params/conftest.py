"""env_params tests share the DSE helpers (a test + scenario written to tmp_path, the CLI run in-process)."""

from tests.dse.conftest import case  # noqa: F401  (a fixture)
