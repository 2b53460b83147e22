"""Annotate a directory of table files with colswarm on Spark.

    python python/examples/spark_annotate.py --model models/colswarm-small \
        --tables datasets/t2d-webtables/samples --out /tmp/t2d-annotations.parquet

runs Spark in local mode (``--master local[2]``); on a cluster, submit it with spark-submit and
make the wheel and the model reachable from every worker, e.g.

    spark-submit --master yarn \
        --archives colswarm-venv.tar.gz#venv,colswarm-small.tar.gz#model \
        --conf spark.pyspark.python=./venv/bin/python \
        python/examples/spark_annotate.py --model model --tables hdfs:///.../tables.txt ...

(``colswarm-venv.tar.gz``: a venv-pack/conda-pack archive with the colswarm wheel, pandas and
pyarrow; ``colswarm-small.tar.gz``: the model directory, 7.1 MB). Each Python worker loads
the model once and keeps it for all its tasks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (on every worker)")
    parser.add_argument(
        "--tables",
        required=True,
        help="a directory of table files, or a text file listing one path per line",
    )
    parser.add_argument("--out", help="write the annotations here (parquet); default: show them")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--partitions", type=int, default=None, help="default: 2 × cores")
    parser.add_argument("--json", action="store_true", help="one JSON annotation per table")
    parser.add_argument("--top-k", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from colswarm.spark import annotate_paths

    # Local mode: the workers run this interpreter (the environment colswarm is installed in).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(args.master)
        .appName("colswarm-annotate")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    source = Path(args.tables)
    if source.is_dir():
        files = sorted(str(p.resolve()) for p in source.iterdir() if p.suffix in (".csv", ".tsv"))
    else:
        files = [line.strip() for line in source.read_text().splitlines() if line.strip()]
    partitions = args.partitions or 2 * spark.sparkContext.defaultParallelism
    paths = spark.createDataFrame([(f,) for f in files], "path string").repartition(partitions)
    model = str(Path(args.model).resolve()) if Path(args.model).exists() else args.model
    annotations = annotate_paths(
        paths, model, output="json" if args.json else "rows", top_k=args.top_k
    )
    start = time.perf_counter()
    if args.out:
        annotations.write.mode("overwrite").parquet(args.out)
        n = spark.read.parquet(args.out).count()
    else:
        annotations.show(20, truncate=60)
        n = annotations.count()
    seconds = time.perf_counter() - start
    print(
        f"annotated {len(files)} tables ({n} rows) in {seconds:.1f} s on {args.master}",
        file=sys.stderr,
    )
    spark.stop()


if __name__ == "__main__":
    main()
