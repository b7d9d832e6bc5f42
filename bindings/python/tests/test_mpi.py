"""gstat.mpi with mpi4py: mpi_worker.py under mpirun with 1, 2 and 3 ranks
(oversubscribed on small machines), bounded by a timeout so a deadlock fails."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gstat.mpi

pytest.importorskip("mpi4py", reason="mpi4py is not installed")
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")
pytestmark = [
    pytest.mark.skipif(not gstat.mpi.available(), reason="gstat was built without MPI"),
    pytest.mark.skipif(MPIRUN is None, reason="no mpirun on PATH"),
]
WORKER = Path(__file__).with_name("mpi_worker.py")


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_mpi_worker(ranks):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMP_NUM_THREADS="1",
               OMP_WAIT_POLICY="passive")
    cmd = [MPIRUN, "-np", str(ranks), sys.executable, str(WORKER)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for r in range(ranks):
        assert f"rank {r} OK" in done.stdout, out


def test_unavailable_without_comm():
    with pytest.raises(TypeError, match="mpi4py communicator"):
        gstat.mpi.covariance(object(), [[1.0, 2.0]])
