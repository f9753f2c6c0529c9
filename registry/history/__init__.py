"""History: the Spark pipeline that turns the bus export into parquet, and its light reader.

Importing this package is cheap: ``pyspark`` is imported only by
``registry.history.spark_job`` and ``spark_session``, and ``pyarrow`` only by
``registry.history.reader``
and the build (``spark_job``, ``arrow_io``).
"""
