"""What tests/spark_audit shares: one local Spark session (starting a JVM is the slow part), and one large run of the job
as a user runs it, which two files check for different things."""

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_audit.session import Resources, build_session
from tests.spark_audit.harness import RealisticRun, realistic_run


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    # the tests' inputs are small: the quick compiler alone, as the job chooses for little input (spark_audit/run_size.py).
    # One task thread: a run over a test's few records is a chain of small stages that take their turns anyway, and a
    # second thread made a warm run take 11% more CPU for 3% less wall time; on the suite's two busy cores the CPU is
    # what counts (docs/performance.md, "The test suite's time"). The job's own runs (the CLI, the bench, the cluster)
    # keep two. Two shuffle partitions still, so that every shuffle has more than one.
    # Expressions interpreted, as the job chooses for a few thousand lines (run_size.INTERPRETED_RUN_BYTES);
    # test_standalone.py runs its local reference with them compiled.
    session = build_session("local[1]", shuffle_partitions=2, resources=Resources(short_run=True, interpreted=True))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def realistic_cli_run(tmp_path_factory: pytest.TempPathFactory) -> RealisticRun:
    """The one large job run of the suite, shared by test_memory_wall.py and test_local_fs.py (one worker runs both:
    devkit/test_tiers.py SHARED_FIXTURE_FILES): a cold run of this size costs some 160 CPU-s."""
    return realistic_run(tmp_path_factory.mktemp("realistic-run"))
