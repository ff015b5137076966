"""PySpark jobs: the only place in the library that imports pyspark. A job is a function that
takes a SparkSession."""
