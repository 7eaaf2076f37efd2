"""One local Spark session for all of tests/spark_audit (starting a JVM is the slow part)."""

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_audit.session import build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
