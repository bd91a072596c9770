import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from stub import Stub  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


@pytest.fixture(scope="session")
def model_dir():
    """The embedded model's directory; the test skips without it unless
    TOOLNEXUS_REQUIRE_MODEL=1 (CI), where its absence fails."""
    d = os.environ.get("TOOLNEXUS_MODEL_DIR")
    if d and (pathlib.Path(d) / "model.safetensors").exists():
        return d
    if os.environ.get("TOOLNEXUS_REQUIRE_MODEL") == "1":
        pytest.fail("TOOLNEXUS_REQUIRE_MODEL=1 but no model in $TOOLNEXUS_MODEL_DIR")
    pytest.skip("no embedded model: set TOOLNEXUS_MODEL_DIR")


@pytest.fixture(scope="session")
def repo():
    return ROOT
