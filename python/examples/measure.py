"""Measures the Python layer against the `colswarm` CLI, Spark local mode's throughput, and a
worker's memory (what python/README.md's "Performance" section reports).

    CARGO_TARGET_DIR=... python python/examples/measure.py [--repeat 3]

Tables: the T2D dev split (ids whose FNV-1a hash is 0 mod 5) for overhead and memory, all 682
T2D tables for throughput, unpacked from datasets/t2d-webtables/t2d.tar.gz into a temporary
folder (removed afterwards). Every timing is the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from conftest import MODEL, T2D, cli_binary, is_dev  # noqa: E402


def unpack_tables(folder: Path) -> list:
    """Writes T2D's tables into `folder` as <id>.csv; returns their paths, sorted. What is timed
    is the CLI and the annotator reading files, so the tables must be files, not archive members."""
    with tarfile.open(T2D, "r:gz") as tf:
        for m in tf:
            if m.isfile() and m.name.startswith("tables/") and m.name.endswith(".csv"):
                (folder / Path(m.name).name).write_bytes(tf.extractfile(m).read())
    return sorted(str(p) for p in folder.glob("*.csv"))


def best(repeat, run):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker_rss(batches):
    """mapInPandas: annotate the batch with the worker's cached annotator, report its memory."""
    import pandas as pd

    from colswarm.spark import cached_annotator

    annotator = cached_annotator(str(MODEL))
    for batch in batches:
        annotator.annotate_many(batch["path"].tolist())
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        yield pd.DataFrame({"pid": [os.getpid()], "rss_mb": [rss_mb()], "peak_mb": [peak]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-spark", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="t2d-tables-") as tmp:
        measure(args, unpack_tables(Path(tmp)))


def measure(args, every: list) -> None:
    import colswarm

    dev = [p for p in every if is_dev(Path(p).stem)]
    cli = str(cli_binary())
    env1 = dict(os.environ, RAYON_NUM_THREADS="1")

    def cli_run(files, env):
        subprocess.run(
            [cli, "annotate", "--model", str(MODEL), *files],
            check=True, stdout=subprocess.DEVNULL, env=env,
        )

    def py_process(files, threads, env):
        code = (
            "import sys, colswarm\n"
            f"a = colswarm.Annotator({str(MODEL)!r}, threads={threads})\n"
            "a.annotate_many(sys.argv[1:])\n"
        )
        subprocess.run([sys.executable, "-c", code, *files], check=True, env=env)

    print(f"machine: {os.cpu_count()} cores, {sys.platform}; {len(dev)} dev tables, "
          f"{len(every)} T2D tables")
    # 1. Overhead per table, one thread (kernels' rayon pool at 1 thread too).
    n = len(dev)
    t_cli = best(args.repeat, lambda: cli_run(dev, env1))
    t_py = best(args.repeat, lambda: py_process(dev, 1, env1))
    t_start = best(args.repeat, lambda: py_process([], 1, env1))
    t_cli_start = best(args.repeat, lambda: subprocess.run(
        [cli, "annotate", "--model", str(MODEL), "/nonexistent.csv"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env1))
    print(f"start-up (interpreter, imports, model loaded): python {t_start:.2f} s, "
          f"CLI {t_cli_start:.2f} s")
    print(f"process, 1 thread: CLI {t_cli:.2f} s ({1000 * t_cli / n:.1f} ms/table), "
          f"python annotate_many {t_py:.2f} s ({1000 * t_py / n:.1f} ms/table), "
          f"overhead {1000 * (t_py - t_cli) / n:+.2f} ms/table")
    os.environ["RAYON_NUM_THREADS"] = "1"  # read at the pool's first use, in this process
    a1 = colswarm.Annotator(MODEL, threads=1)
    a1.annotate_json(dev[:2])
    t_json = best(args.repeat, lambda: a1.annotate_json(dev))
    t_frame = best(args.repeat, lambda: a1.annotate_many(dev))
    print(f"in process, 1 thread: annotate_json {1000 * t_json / n:.2f} ms/table, "
          f"annotate_many (DataFrame) {1000 * t_frame / n:.2f} ms/table, "
          f"DataFrame building {1000 * (t_frame - t_json) / n:.2f} ms/table")
    frames = [colswarm.read_table(p) for p in dev]
    t_df = best(args.repeat, lambda: a1.annotate_many(frames))
    print(f"in process, 1 thread: annotate_many of DataFrames {1000 * t_df / n:.2f} ms/table "
          f"(vs paths {1000 * t_frame / n:.2f})")
    print(f"memory: RSS {rss_mb():.0f} MB after loading and annotating "
          f"(peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB), "
          f"this process with pandas imported")

    # 2. Throughput on 2 cores: CLI, the Annotator with 2 threads, Spark local[2].
    m = len(every)
    t_cli_all = best(args.repeat, lambda: cli_run(every, dict(os.environ, RAYON_NUM_THREADS="2")))
    env2 = dict(os.environ, RAYON_NUM_THREADS="2")
    t_py2 = best(args.repeat, lambda: py_process(every, 2, env2))
    print(f"throughput, {m} tables: CLI {m / t_cli_all:.0f} tables/s ({t_cli_all:.2f} s), "
          f"python Annotator threads=2 {m / t_py2:.0f} tables/s ({t_py2:.2f} s)")
    if args.skip_spark:
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from colswarm.spark import annotate_paths

    spark = (
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paths = spark.createDataFrame([(p,) for p in every], "path string").repartition(4).cache()
    paths.count()
    annotate_paths(paths, str(MODEL)).count()  # warm: Python workers started, model loaded
    t_spark = best(args.repeat, lambda: annotate_paths(paths, str(MODEL)).count())
    t_spark_json = best(args.repeat, lambda: annotate_paths(paths, str(MODEL), output="json").count())
    print(f"throughput, {m} tables: Spark local[2] rows {m / t_spark:.0f} tables/s "
          f"({t_spark:.2f} s), json {m / t_spark_json:.0f} tables/s ({t_spark_json:.2f} s) "
          "(warm workers)")
    dev_paths = spark.createDataFrame([(p,) for p in dev], "path string").repartition(2)
    workers = dev_paths.mapInPandas(worker_rss, "pid long, rss_mb double, peak_mb double")
    stats = workers.toPandas().groupby("pid").max()
    print("Spark worker memory (RSS after loading and annotating; MB):")
    print(stats.to_string())
    spark.stop()


if __name__ == "__main__":
    main()
