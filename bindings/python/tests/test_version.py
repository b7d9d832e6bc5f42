"""One version everywhere: the package metadata and gstat.__version__ come
from the repository's VERSION file (through the C library's build)."""
import importlib.metadata
import pathlib

import pytest

import gstat

VERSION_FILE = pathlib.Path(__file__).resolve().parents[3] / "VERSION"


@pytest.mark.skipif(not VERSION_FILE.exists(), reason="not run from a gstat repository checkout")
def test_versions_agree_with_the_version_file():
    version = VERSION_FILE.read_text().strip()
    assert gstat.__version__ == version
    assert gstat.__c_version__ == version
    assert importlib.metadata.version("gstat") == version


def test_license_in_metadata():
    meta = importlib.metadata.metadata("gstat")
    assert "Apache" in (meta.get("License") or "") + " ".join(meta.get_all("Classifier") or [])


def test_license_file_installed():
    # the wheel (and so the sdist it was built from) carries LICENSE in its dist-info
    files = importlib.metadata.distribution("gstat").files or []
    licences = [f for f in files if f.name == "LICENSE"]
    assert licences, "no LICENSE among the installed files of gstat"
    assert "Apache License" in licences[0].read_text()
