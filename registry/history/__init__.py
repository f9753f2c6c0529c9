"""History: the Spark pipeline that turns the bus into hourly aggregates, and its light
reader.

The bus reaches the build as parquet segments of facts (``segments``, written with
``facts``'s rules) or as a JSONL export Spark parses; ``spark_job`` drives the build,
``spark_sql`` aggregates, ``aggregate_py`` is the plain-Python reference it is tested
against, ``reader``
reads the result back, ``summary`` and ``prices`` turn it into what a person reads.

Importing this package is cheap: ``pyspark`` is imported only by
``registry.history.spark_job``, ``spark_sql`` and ``spark_session``, and ``pyarrow`` only by
``registry.history.reader``, ``segments`` and the build (``spark_job``, ``arrow_io``).
"""
