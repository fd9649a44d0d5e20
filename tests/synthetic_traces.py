"""Synthetic kernel traces shaped like two real ones we do not ship (issue 32, cost per event).

Written for this project, not produced by a profiler: the files follow the formats
:mod:`model.dispatch.profilers` reads, with the shape of the traces the issue measured.

* :func:`write_sparse` — ``nvprof --print-gpu-trace --csv`` for a GTX 1080 Ti (``pascal-sm``,
  1,582 MHz): 9 one-block launches spread evenly over about 17 M cycles (10.75 ms), one
  stream, memory copies between them. Almost every cycle is idle.
* :func:`write_bmm` — rocprof-compute ``pmc_perf.csv`` (fractional nanosecond timestamps) for
  an MI300X (``cdna3-cu``, 2,100 MHz): 301 dispatches of a batched GEMM on one queue, 353,104
  WGs in all, the second dispatch 13 ms after the first (a host gap of about 27 M cycles), the
  rest back to back with short host gaps, about 230 M cycles from the first start to the last
  end.

``python tests/synthetic_traces.py OUTDIR`` writes both (``sparse_nvprof.csv``,
``bmm_pmc_perf.csv``); ``make``-free, seeded, so the files are the same on every run.
"""

import random
import sys
from pathlib import Path

NVPROF_HEADER = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z",'
                 '"Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput",'
                 '"Device","Context","Stream","Name"')
PMC_HEADER = ("Dispatch_ID,Kernel_Name,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,"
              "LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,"
              "Start_Timestamp,End_Timestamp")


def write_sparse(path, launches: int = 9, span_ms: float = 10.75) -> Path:
    """9 one-block kernels over ``span_ms`` ms (about 17 M cycles at 1,582 MHz)."""
    path = Path(path)
    rows = ["==1== NVPROF is profiling process 1, command: ./sparse",
            "==1== Profiling application: ./sparse", "==1== Profiling result:", NVPROF_HEADER,
            "ms,us,,,,,,,,B,B,KB,MB/s,,,,"]
    device = '"GeForce GTX 1080 Ti (0)","1","7"'
    for index in range(launches):
        start = 100.0 + index * span_ms / (launches - 1)
        rows.append(f"{start - 0.05:.6f},20.000000,,,,,,,,,,64.000000,3200.000000,{device},"
                    f'"[CUDA memcpy HtoD]"')
        rows.append(f'{start:.6f},4.500000,1,1,1,256,1,1,32,1024,0,,,{device},'
                    f'"step_kernel(float*, int) [{1000 + index}]"')
    path.write_text("\n".join(rows) + "\n")
    return path


def write_bmm(path, dispatches: int = 301, workgroups: int = 353_104, seed: int = 1) -> Path:
    """A batched-GEMM rocprof-compute file of ``dispatches`` launches, ``workgroups`` WGs."""
    path = Path(path)
    rng = random.Random(seed)
    per = [workgroups // dispatches + (1 if i < workgroups % dispatches else 0)
           for i in range(dispatches)]
    time = 41_551_790_928_449.54           # ns, fractional as rocprof-compute writes them
    rows = [PMC_HEADER]
    for index, count in enumerate(per):
        duration = rng.uniform(300_000.0, 340_000.0)       # ns per dispatch
        name = '"Cijk_Alik_Bljk_BBS_BH_MT128x128x32_MI32x32x8 [clone .kd]"'
        rows.append(f"{index},{name},2,1,4242,4242,{count * 256},256,16384,0,128,64,96,64,"
                    f"{time:.2f},{time + duration:.2f}")
        gap = 13_000_000.0 if index == 0 else rng.uniform(1_000.0, 8_000.0)
        time += duration + gap
    path.write_text("\n".join(rows) + "\n")
    return path


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    print(write_sparse(out / "sparse_nvprof.csv"))
    print(write_bmm(out / "bmm_pmc_perf.csv"))
