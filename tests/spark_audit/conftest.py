"""One local Spark session for all of tests/spark_audit (starting a JVM is the slow part)."""

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_audit.session import Resources, build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    # the tests' inputs are small: the quick compiler alone, as the job chooses for little input (spark_audit/run_size.py)
    session = build_session("local[2]", shuffle_partitions=2, resources=Resources(short_run=True))
    yield session
    session.stop()
