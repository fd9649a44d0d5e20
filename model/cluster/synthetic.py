"""Synthetic stand-ins for the Alibaba GPU trace v2023: a cluster with the node list's
composition and pods drawn from the pod lists' shapes, and writers of the trace's CSV formats.

The real files are not shipped (they are Alibaba's; see ``docs/cluster.md`` for the download).
The distributions below are facts counted from them (read through a public mirror of
``alibaba/clusterdata``, ``cluster-trace-gpu-v2023/csv``):

* :data:`V2023_NODES`: every distinct ``(cpu_milli, memory_mib, gpu, model)`` of
  ``openb_node_list_gpu_node.csv`` with its number of nodes: 1,213 nodes, 6,212 GPUs (G2 4,392,
  T4 842, G3 312, P100 265, V100M32 204, V100M16 195, A10 2).
* :data:`V2023_POD_SHAPES`: ``(cpu_milli, memory_mib, num_gpu, gpu_milli, count)`` counted in
  a sample of 901 rows of ``openb_pod_list_default.csv`` (four blocks of about 225 consecutive
  rows, at 0 %, 24 %, 52 % and 80 % of the file): 17.3 % CPU-only pods, 35.7 % sharing a card,
  45.4 % one whole card, 1.5 % two to eight cards.
* :data:`V2023_GPU_SPECS`: ``gpu_spec`` values and counts among the 191 GPU pods of a block of
  ``openb_pod_list_gpuspec33.csv`` (73 of them, 38 %, name a type).
* Times (same sample): 8.3 % of pods never ran; the others ran ``deletion - scheduled``
  seconds, log-normal-like with median 897 s and log-sigma 1.92 (quantiles 10 % 80 s, 90 %
  14,929 s); pods arrive about every 390 s on average in the busy part of the trace.

A sample of this size misses rare shapes (the full trace has more multi-GPU shapes), so the
synthetic pods match the trace's mix of requests, not every pod.
"""

import csv
import random
from collections.abc import Sequence
from pathlib import Path

from model.cluster.config import AlibabaWorkload, HostType, NodeSpec
from model.cluster.power import BUILTIN_CARD_TYPES, HOST_SLEEP_W, host_for
from model.cluster.trace import NODE_COLUMNS, POD_COLUMNS, POD_COLUMNS_UNTIMED
from model.cluster.workload import Job

__all__ = ["V2023_GPU_SPECS", "V2023_NODES", "V2023_POD_SHAPES", "alibaba_jobs",
           "alibaba_nodes", "main", "write_node_list", "write_pod_list"]

#: (cpu_milli, memory_mib, gpus, model, nodes) of the v2023 GPU node list.
V2023_NODES = (
    (96000, 393216, 8, "G2", 549), (104000, 524288, 2, "T4", 387),
    (16000, 122880, 2, "P100", 107), (128000, 786432, 8, "G3", 39),
    (32000, 131072, 4, "V100M16", 28), (64000, 262144, 2, "P100", 22),
    (96000, 786432, 8, "V100M32", 21), (8000, 32768, 1, "V100M16", 19),
    (96000, 393216, 4, "T4", 17), (48000, 376832, 4, "V100M32", 9),
    (64000, 262144, 8, "V100M16", 7), (8000, 61440, 1, "P100", 3),
    (8000, 61440, 2, "P100", 2), (128000, 1048576, 1, "A10", 2),
    (82000, 344064, 8, "V100M16", 1),
)

#: (cpu_milli, memory_mib, num_gpu, gpu_milli, count) of the pod sample.
V2023_POD_SHAPES = (
    (3152, 5600, 1, 1000, 85), (11400, 48128, 1, 1000, 59), (12500, 57344, 0, 0, 58),
    (3152, 5600, 1, 810, 53), (8000, 30517, 1, 470, 53), (32000, 49152, 0, 0, 37),
    (18708, 64512, 1, 1000, 36), (11908, 47104, 1, 470, 35), (11300, 49152, 1, 1000, 34),
    (8000, 30517, 0, 0, 31), (16000, 32768, 1, 1000, 24), (12000, 24576, 1, 1000, 22),
    (15400, 51200, 0, 0, 18), (8000, 16384, 1, 1000, 16), (9810, 41560, 1, 1000, 16),
    (11908, 47104, 1, 650, 16), (4000, 24576, 1, 1000, 15), (4000, 30517, 1, 230, 15),
    (4152, 10600, 1, 370, 15), (12000, 16384, 1, 1000, 14), (4152, 10600, 1, 550, 13),
    (24200, 93184, 1, 1000, 12), (4000, 15258, 1, 320, 11), (8000, 30517, 1, 320, 11),
    (11400, 77824, 1, 1000, 11), (4000, 22888, 1, 320, 10), (6000, 6144, 1, 460, 10),
    (6000, 12288, 1, 460, 10), (4000, 15258, 1, 160, 8), (4000, 15258, 1, 220, 8),
    (11908, 47104, 1, 1000, 8), (15200, 80896, 1, 1000, 8), (8200, 33792, 1, 1000, 7),
    (4000, 30517, 1, 320, 6), (3152, 5600, 1, 590, 5), (6000, 18432, 1, 460, 5),
    (16500, 51200, 0, 0, 5), (4000, 31250, 1, 1000, 4), (8000, 30517, 1, 220, 4),
    (8000, 32768, 1, 1000, 4), (12000, 15360, 1, 1000, 4), (16000, 65536, 1, 1000, 4),
    (64200, 263168, 8, 1000, 4), (4000, 15258, 1, 110, 3), (4000, 16384, 1, 1000, 3),
    (4000, 30517, 1, 220, 3), (6000, 22888, 1, 160, 3), (8000, 30517, 1, 650, 3),
    (15700, 58368, 1, 1000, 3), (16000, 49152, 1, 1000, 3), (88000, 327680, 8, 1000, 3),
    (1000, 2048, 1, 320, 2), (1000, 6144, 1, 1000, 2), (4000, 15258, 1, 650, 2),
    (4000, 22888, 1, 220, 2), (4000, 22888, 1, 480, 2), (4152, 10600, 1, 810, 2),
    (8000, 65536, 1, 1000, 2), (12000, 32768, 1, 1000, 2), (12000, 49152, 1, 1000, 2),
    (15400, 90112, 1, 1000, 2), (16000, 31250, 0, 0, 2), (32200, 132096, 4, 1000, 2),
    (1000, 2048, 1, 290, 1), (1000, 2048, 1, 650, 1), (2000, 8192, 1, 1000, 1),
    (4000, 8192, 1, 1000, 1), (4000, 15258, 1, 50, 1), (4000, 15258, 1, 230, 1),
    (4000, 22888, 1, 110, 1), (4000, 22888, 1, 160, 1), (4152, 10600, 1, 270, 1),
    (6000, 8192, 1, 460, 1), (6000, 22888, 1, 110, 1), (6000, 65536, 2, 1000, 1),
    (7000, 30000, 1, 1000, 1), (8000, 15625, 0, 0, 1), (8000, 16000, 1, 460, 1),
    (8000, 30517, 1, 230, 1), (8000, 30517, 1, 440, 1), (11900, 77824, 1, 1000, 1),
    (12000, 16000, 1, 1000, 1), (12500, 65536, 0, 0, 1), (14200, 58368, 1, 1000, 1),
    (16400, 125952, 1, 1000, 1), (20000, 65536, 0, 0, 1), (30200, 160768, 2, 1000, 1),
    (32000, 62500, 0, 0, 1), (32000, 65536, 0, 0, 1), (32000, 131072, 4, 1000, 1),
    (64000, 262144, 8, 1000, 1), (120000, 737280, 8, 1000, 1),

)

#: (gpu_spec, count) of the gpuspec33 sample's typed GPU pods.
V2023_GPU_SPECS = (
    ("T4", 40), ("G2", 11), ("P100", 8), ("V100M16|V100M32", 5), ("P100|V100M16|V100M32", 4),
    ("G3", 3), ("G2|P100|T4|V100M16|V100M32", 2),
)


def alibaba_nodes(scale: float = 1.0, *, hosts: dict[str, HostType] | None = None,
                  sleep_w: float = HOST_SLEEP_W, seed: int = 0) -> tuple[NodeSpec, ...]:
    """A cluster with the v2023 node list's composition: each configuration's count times
    ``scale``, rounded, at least one; nodes named ``synth-node-<i>`` in an order shuffled by
    ``seed`` (fixed across a scenario's seeds, so every seed sees the same cluster)."""
    hosts = hosts or {}
    configs = []
    for cpu, memory, gpus, model, count in V2023_NODES:
        host = host_for(model, BUILTIN_CARD_TYPES, hosts)
        configs += [(cpu, memory, gpus, model, host)] * max(1, round(count * scale))
    random.Random(seed).shuffle(configs)
    return tuple(NodeSpec(f"synth-node-{index:04d}", (model,) * gpus, host.socket_busy_w,
                          host.socket_idle_w, sleep_w, cpu, memory, host.cores_per_socket)
                 for index, (cpu, memory, gpus, model, host) in enumerate(configs))


def alibaba_jobs(workload: AlibabaWorkload, rng: random.Random, *, quick: bool = False,
                 timed: bool = True) -> list[Job]:
    """Pods with the v2023 sample's shapes (and GPU types for ``pinned_fraction`` of the GPU
    pods), Poisson arrivals of mean ``mean_interarrival_s`` and log-normal durations; without
    ``timed`` (the inflation experiment) arrival times are ``None``."""
    count = workload.quick_jobs if quick else workload.jobs
    shapes = [shape[:4] for shape in V2023_POD_SHAPES]
    weights = [shape[4] for shape in V2023_POD_SHAPES]
    specs = [spec for spec, _ in V2023_GPU_SPECS]
    spec_weights = [weight for _, weight in V2023_GPU_SPECS]
    jobs, now = [], 0.0
    for index in range(count):
        if index and workload.mean_interarrival_s > 0:
            now += rng.expovariate(1.0 / workload.mean_interarrival_s)
        cpu, memory, gpus, milli = rng.choices(shapes, weights=weights)[0]
        duration = rng.lognormvariate(workload.duration_mu, workload.duration_sigma)
        if workload.max_duration_s:
            duration = min(duration, workload.max_duration_s)
        types = None
        if gpus and workload.pinned_fraction and rng.random() < workload.pinned_fraction:
            types = frozenset(rng.choices(specs, weights=spec_weights)[0].split("|"))
        jobs.append(Job(index, f"synth-pod-{index:05d}", now if timed else None, gpus,
                        round(duration), types, cpu, memory, milli))
    return jobs


def write_node_list(path, nodes: Sequence[NodeSpec]) -> Path:
    """Write ``nodes`` in the node-list format (one GPU model a node)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(NODE_COLUMNS)
        for node in nodes:
            writer.writerow([node.name, node.cpu_milli, node.memory_mib, len(node.cards),
                             node.cards[0] if node.cards else "nan"])
    return path


def write_pod_list(path, jobs: Sequence[Job], *, timed: bool = True,
                   start_s: int = 9_000_000) -> Path:
    """Write ``jobs`` as an 11-column pod list (creation = ``start_s`` + arrival, scheduled at
    creation, deleted after the duration) or, without ``timed``, a 5-column one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(POD_COLUMNS if timed else POD_COLUMNS_UNTIMED)
        for job in jobs:
            row = [job.name, job.cpu_milli, job.memory_mib, job.cards, job.gpu_milli]
            if timed:
                created = start_s + round(job.arrival_s or 0.0)
                spec = "|".join(sorted(job.types)) if job.types else ""
                row += [spec, "LS", "Succeeded", created, created + round(job.duration_s),
                        created]
            writer.writerow(row)
    return path


def main(argv=None) -> int:
    """``python -m model.cluster.synthetic --out DIR [--seed S] [--scale X] [--pods N]``:
    write a synthetic node list and pod lists in each format (11-column with times, the same
    with 33 % typed pods, 5-column without times)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m model.cluster.synthetic",
                                     description=main.__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder for the CSV files")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of the 1,213 nodes (default 1)")
    parser.add_argument("--pods", type=int, default=8152, help="pods per list (default 8152)")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.pods < 1:
        parser.error("--scale must be > 0 and --pods >= 1")
    nodes = alibaba_nodes(args.scale)
    write_node_list(args.out / "synth_node_list_gpu_node.csv", nodes)
    plain = alibaba_jobs(AlibabaWorkload(jobs=args.pods), random.Random(args.seed))
    typed = alibaba_jobs(AlibabaWorkload(jobs=args.pods, pinned_fraction=0.33),
                         random.Random(args.seed))
    write_pod_list(args.out / "synth_pod_list_default.csv", plain)
    write_pod_list(args.out / "synth_pod_list_gpuspec33.csv", typed)
    write_pod_list(args.out / "synth_pod_list_untimed.csv", plain, timed=False)
    print(f"{len(nodes)} nodes, {sum(len(node.cards) for node in nodes)} GPUs, {args.pods} "
          f"pods per list in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
